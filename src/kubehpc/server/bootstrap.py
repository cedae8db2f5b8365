"""First-start pieces of a control plane: the bearer token and the kubeconfig pointing at it.

``kubehpc up`` and ``python -m kubehpc.server`` both use these, so the files look the same
whoever started the server.
"""

from __future__ import annotations

import base64
import os
import secrets
from pathlib import Path

import yaml

from kubehpc.store.home import Home

CLUSTER_NAME = "kubehpc"


def _write_private(path: Path, data: str) -> None:
    """Write ``data`` to ``path`` atomically, readable by the owner only (0600)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def ensure_token(home: Home) -> str:
    """The control plane's bearer token, created (0600) on first start and kept after."""
    path = home.token_path
    try:
        token = path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        token = ""
    if token:
        return token
    home.ensure()
    token = secrets.token_urlsafe(32)
    _write_private(path, token + "\n")
    return token


def kubeconfig_document(
    server_url: str, token: str, ca_pem: bytes | None = None, namespace: str = "default"
) -> dict[str, object]:
    """A kubeconfig that kubectl and the official Python client accept."""
    cluster: dict[str, str] = {"server": server_url}
    if ca_pem is not None:
        cluster["certificate-authority-data"] = base64.b64encode(ca_pem).decode()
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "preferences": {},
        "clusters": [{"name": CLUSTER_NAME, "cluster": cluster}],
        "users": [{"name": CLUSTER_NAME, "user": {"token": token}}],
        "contexts": [
            {
                "name": CLUSTER_NAME,
                "context": {"cluster": CLUSTER_NAME, "user": CLUSTER_NAME, "namespace": namespace},
            }
        ],
        "current-context": CLUSTER_NAME,
    }


def write_kubeconfig(home: Home, server_url: str, token: str, ca_pem: bytes | None = None) -> Path:
    """Write ``home.kubeconfig_path`` (0600: it holds the token) and return the path.

    ``ca_pem`` is the CA that signed the serving certificate (see :mod:`kubehpc.server.tls`)."""
    text = yaml.safe_dump(kubeconfig_document(server_url, token, ca_pem), sort_keys=False)
    _write_private(home.kubeconfig_path, text)
    return home.kubeconfig_path
