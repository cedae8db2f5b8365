"""Memory limits through cgroup v2, where this host delegates a subtree to us.

When ``<root>`` (``/sys/fs/cgroup``) is the cgroup v2 hierarchy (it has ``cgroup.controllers``)
and the parent of the agent's own cgroup offers the memory controller to its children
(``memory`` in its ``cgroup.subtree_control``) and is writable by us, every container with
``limits.memory`` runs in a cgroup of its own, ``<parent>/kubehpc/<pod uid>-<container>``,
with ``memory.max`` = the limit and ``memory.swap.max`` = 0 (where swap accounting exists).

Why beside the agent's cgroup and not under it: cgroup v2 lets only cgroups without processes
of their own hand controllers to children (the "no internal processes" rule), and the agent's
own cgroup holds the agent. Moving a process between two cgroups needs write access to
``cgroup.procs`` of their common ancestor, which is that parent.

The container's shim joins its cgroup between fork and exec (it writes "0", meaning itself, to
``cgroup.procs``), so everything it starts is limited from its first instruction. After the
container ends, ``memory.events`` tells whether the kernel's OOM killer struck (``oom_kill``),
and the cgroup is removed. Anywhere else (cgroup v1, no delegation, read-only) the caller
falls back to ``RLIMIT_DATA``.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import time
from pathlib import Path

log = logging.getLogger(__name__)

DEFAULT_ROOT = Path("/sys/fs/cgroup")
SELF_CGROUP = Path("/proc/self/cgroup")
GROUP_DIR = "kubehpc"
# Interface files we write or the kernel provides; a non-cgroupfs tree (tests) keeps them as
# plain files, which rmdir refuses, so they are removed first there.
_INTERFACE_FILES = ("memory.max", "memory.swap.max", "cgroup.procs", "memory.events")


def own_cgroup(self_cgroup: Path = SELF_CGROUP) -> str | None:
    """The agent's cgroup v2 path (the ``0::<path>`` line of /proc/self/cgroup), None on a
    host without a unified hierarchy entry."""
    try:
        lines = self_cgroup.read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        if line.startswith("0::"):
            return line[3:] or "/"
    return None


def _words(path: Path) -> set[str]:
    try:
        return set(path.read_text().split())
    except OSError:
        return set()


class MemoryCgroups:
    """Creates, reads and removes the per-container cgroups under ``base``."""

    def __init__(self, base: Path) -> None:
        self.base = base

    @classmethod
    def probe(cls, root: Path = DEFAULT_ROOT, self_cgroup: Path = SELF_CGROUP) -> MemoryCgroups | None:
        """The cgroups to use on this host, or None when memory cannot be limited this way."""
        if not (root / "cgroup.controllers").is_file():
            return None  # cgroup v1 (or hybrid): no unified hierarchy at the root
        own = own_cgroup(self_cgroup)
        if own is None:
            return None
        own_dir = root / own.strip("/")
        parent = own_dir.parent if own_dir != root else root
        if "memory" not in _words(parent / "cgroup.subtree_control"):
            return None
        if not (os.access(parent, os.W_OK) and os.access(parent / "cgroup.procs", os.W_OK)):
            return None
        base = parent / GROUP_DIR
        try:
            base.mkdir(exist_ok=True)
            (base / "cgroup.subtree_control").write_text("+memory")
        except OSError as exc:
            log.info("cgroup v2 memory limits unavailable (%s); using RLIMIT_DATA", exc)
            return None
        return cls(base)

    def path_for(self, container_id: str) -> Path:
        return self.base / container_id.replace("/", "-")

    def create(self, container_id: str, memory_bytes: int) -> Path:
        """The container's cgroup with its limit set; raises OSError when that fails."""
        path = self.path_for(container_id)
        path.mkdir(exist_ok=True)  # one left by a crash is reused
        (path / "memory.max").write_text(str(memory_bytes))
        swap = path / "memory.swap.max"
        if swap.exists():
            swap.write_text("0")
        return path

    @staticmethod
    def oom_killed(path: Path) -> bool:
        """Whether the OOM killer killed a process of this cgroup (``oom_kill`` in memory.events)."""
        try:
            lines = (path / "memory.events").read_text().splitlines()
        except OSError:
            return False
        for line in lines:
            key, _, value = line.partition(" ")
            if key == "oom_kill":
                return value.strip().isdigit() and int(value) > 0
        return False

    @staticmethod
    def remove(path: Path, timeout: float = 1.0) -> bool:
        """Remove an ended container's cgroup; True when it is gone. Processes killed a moment
        ago may still be leaving it (EBUSY), so this retries for up to ``timeout``."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                os.rmdir(path)
                return True
            except FileNotFoundError:
                return True
            except OSError as exc:
                if exc.errno == errno.ENOTEMPTY:  # not a cgroupfs (a test tree); plain files go first
                    for name in _INTERFACE_FILES:
                        with contextlib.suppress(OSError):
                            (path / name).unlink()
                    with contextlib.suppress(OSError):
                        os.rmdir(path)
                        return True
                if time.monotonic() >= deadline:
                    log.debug("cgroup %s not removed yet: %s", path, exc)
                    return False
            time.sleep(0.01)
