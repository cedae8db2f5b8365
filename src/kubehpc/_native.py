"""Which of kubehpc's modules run compiled (mypyc, ``scripts/build_native.py``) and which from
source.

The build installs extension modules beside the sources they were compiled from, and Python's
import system prefers an extension module to a ``.py`` file of the same name. That must never
run code other than the source: the build records a hash of each compiled source in
``_native.json``, and unless every one still matches, every kubehpc module is loaded from
source. The compiled modules call each other directly, so it is all or nothing.

``KUBEHPC_NATIVE``: ``auto`` (default: compiled when current), ``off`` (always from source),
``require`` (fail at import unless the compiled modules are current; for benchmarks).
"""

from __future__ import annotations

import hashlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

PACKAGE_DIR = Path(__file__).resolve().parent
SRC_DIR = PACKAGE_DIR.parent
MANIFEST = PACKAGE_DIR / "_native.json"
ENV = "KUBEHPC_NATIVE"


def stale_reason(manifest_path: Path = MANIFEST, src_dir: Path = SRC_DIR) -> str | None:
    """Why the compiled modules must not be used, or None when they match their sources."""
    try:
        manifest = json.loads(manifest_path.read_text())
    except FileNotFoundError:
        return "not built (scripts/build_native.py)"
    except (OSError, ValueError) as exc:
        return f"{manifest_path.name} unreadable: {exc}"
    if manifest.get("python") != sys.version.split()[0]:
        return f"built for Python {manifest.get('python')}, running {sys.version.split()[0]}"
    for rel in manifest.get("files", []):
        if not (src_dir / rel).is_file():
            return f"{rel} missing"
    for module, digest in manifest.get("modules", {}).items():
        source = _source_of(module, src_dir)
        if source is None:
            return f"the source of {module} is gone"
        if hashlib.sha256(source.read_bytes()).hexdigest() != digest:
            return f"{source.relative_to(src_dir)} changed since it was compiled"
    return None


def _source_of(module: str, src_dir: Path) -> Path | None:
    base = src_dir.joinpath(*module.split("."))
    # A C extension's source (scripts/build_native.py's C_EXTENSIONS) is its .c file.
    for candidate in (base.with_suffix(".py"), base / "__init__.py", base.with_suffix(".c")):
        if candidate.is_file():
            return candidate
    return None


class SourceFirst(importlib.abc.MetaPathFinder):
    """Finds the modules of ``package`` as their ``.py`` files, ahead of any extension module
    of the same name."""

    def __init__(self, package: str) -> None:
        self.prefix = package + "."

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if not fullname.startswith(self.prefix) or path is None:
            return None
        leaf = fullname.rpartition(".")[2]
        for entry in path:
            folder = os.path.join(entry, leaf)
            init = os.path.join(folder, "__init__.py")
            if os.path.isfile(init):
                return importlib.util.spec_from_file_location(
                    fullname, init, submodule_search_locations=[folder]
                )
            module = folder + ".py"
            if os.path.isfile(module):
                return importlib.util.spec_from_file_location(fullname, module)
        return None


def compiled(module: ModuleType) -> bool:
    """Whether ``module`` was loaded from an extension module."""
    return isinstance(getattr(module, "__loader__", None), importlib.machinery.ExtensionFileLoader)


def select(
    package: str = "kubehpc",
    manifest: Path = MANIFEST,
    src_dir: Path = SRC_DIR,
    mode: str | None = None,
) -> str | None:
    """Called once as the package is imported: keeps compiled modules out unless they are
    current (or ``KUBEHPC_NATIVE=off``). Returns why they are out, None when they are used."""
    mode = mode or os.environ.get(ENV, "auto")
    reason = f"{ENV}=off" if mode == "off" else stale_reason(manifest, src_dir)
    if reason is None:
        return None
    if mode == "require":
        raise ImportError(f"{package}: compiled modules required ({ENV}=require) but {reason}")
    if not any(isinstance(f, SourceFirst) and f.prefix == package + "." for f in sys.meta_path):
        sys.meta_path.insert(0, SourceFirst(package))
    return reason
