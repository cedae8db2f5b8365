"""Where kubehpc keeps its state on disk: the layout of ``$KUBEHPC_HOME`` (default ~/.kubehpc).

Every component that reads or writes files there asks a :class:`Home` for the path, so the
layout is written down once.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

ENV_VAR = "KUBEHPC_HOME"


def _checked_segment(what: str, value: str) -> str:
    # Namespaces, pod and container names are DNS labels, but paths are built from user input
    # before validation in some callers; refuse anything that could escape the directory.
    if not value or value in {".", ".."} or "/" in value or "\x00" in value:
        raise ValueError(f"invalid {what} for a path segment: {value!r}")
    return value


@dataclass(frozen=True)
class Home:
    """The kubehpc home directory and the files under it."""

    root: Path

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None) -> Home:
        """``$KUBEHPC_HOME`` when set, else ``~/.kubehpc``."""
        env = os.environ if environ is None else environ
        value = env.get(ENV_VAR, "")
        return cls(Path(value).expanduser() if value else Path.home() / ".kubehpc")

    def ensure(self) -> Home:
        """Create the directory (private to the user: it holds the token) and return self."""
        self.root.mkdir(parents=True, exist_ok=True, mode=0o700)
        return self

    @property
    def db_path(self) -> Path:
        return self.root / "store.db"

    @property
    def token_path(self) -> Path:
        return self.root / "token"

    @property
    def kubeconfig_path(self) -> Path:
        return self.root / "kubeconfig"

    @property
    def cluster_path(self) -> Path:
        """The cluster config the control plane runs with (copied here by ``kubehpc up --cluster``)."""
        return self.root / "cluster.yaml"

    @property
    def kueue_config_path(self) -> Path:
        """Kueue's Configuration the admission loop runs with (``kubehpc up --kueue-config``)."""
        return self.root / "kueue-config.yaml"

    @property
    def pid_path(self) -> Path:
        return self.root / "kubehpc.pid"

    @property
    def server_log_path(self) -> Path:
        return self.root / "server.log"

    @property
    def logs_dir(self) -> Path:
        return self.root / "logs"

    def pod_log_path(self, namespace: str, pod: str, container: str) -> Path:
        """``logs/<namespace>/<pod>/<container>.log``."""
        return (
            self.logs_dir
            / _checked_segment("namespace", namespace)
            / _checked_segment("pod", pod)
            / (_checked_segment("container", container) + ".log")
        )

    @property
    def volumes_dir(self) -> Path:
        return self.root / "volumes"

    def pvc_dir(self, namespace: str, claim: str) -> Path:
        """The host directory backing a PersistentVolumeClaim: ``volumes/<namespace>/<claim>``."""
        return self.volumes_dir / _checked_segment("namespace", namespace) / _checked_segment("claim", claim)
