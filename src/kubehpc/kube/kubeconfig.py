"""Kubeconfig loading: where an API server is and how to authenticate to it.

Follows kubectl's rules so a kubeconfig that works with kubectl works here:

* ``$KUBECONFIG`` may list several files (``:``-separated); they are merged so that the first
  file to define a cluster, user or context name wins, and ``current-context`` comes from the
  first file that sets it.
* Relative file paths inside a kubeconfig (certificate-authority, client-certificate, tokenFile,
  ...) are relative to the directory of the file that holds them.
* ``*-data`` fields carry base64 PEM and take precedence over the matching file fields.
* In a pod, :func:`in_cluster_config` reads the service account token, CA and namespace.

The result is a :class:`ClientConfig`: everything an HTTP client needs, already resolved.
"""

from __future__ import annotations

import base64
import binascii
import os
import ssl
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

ENV_VAR = "KUBECONFIG"
SERVICE_ACCOUNT_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")


class KubeconfigError(Exception):
    """A kubeconfig is missing, malformed, or does not name what was asked for."""


@dataclass(frozen=True)
class Cluster:
    server: str
    certificate_authority: str = ""
    certificate_authority_data: bytes = b""
    insecure_skip_tls_verify: bool = False
    tls_server_name: str = ""


@dataclass(frozen=True)
class User:
    token: str = ""
    token_file: str = ""
    client_certificate: str = ""
    client_certificate_data: bytes = b""
    client_key: str = ""
    client_key_data: bytes = b""
    username: str = ""
    password: str = ""


@dataclass(frozen=True)
class Context:
    cluster: str
    user: str = ""
    namespace: str = ""


@dataclass
class Kubeconfig:
    """A merged kubeconfig: named clusters, users and contexts, and the current context."""

    clusters: dict[str, Cluster] = field(default_factory=dict)
    users: dict[str, User] = field(default_factory=dict)
    contexts: dict[str, Context] = field(default_factory=dict)
    current_context: str = ""
    sources: list[Path] = field(default_factory=list)

    def client_config(self, context: str = "") -> ClientConfig:
        """Resolve ``context`` (default: the current one) into a :class:`ClientConfig`."""
        name = context or self.current_context
        if not name:
            raise KubeconfigError("no context chosen: current-context is not set and --context not given")
        ctx = self.contexts.get(name)
        if ctx is None:
            known = ", ".join(sorted(self.contexts)) or "none"
            raise KubeconfigError(f'context "{name}" does not exist (contexts: {known})')
        cluster = self.clusters.get(ctx.cluster)
        if cluster is None:
            raise KubeconfigError(f'context "{name}": cluster "{ctx.cluster}" does not exist')
        user = self.users.get(ctx.user, User()) if ctx.user else User()
        if ctx.user and ctx.user not in self.users:
            raise KubeconfigError(f'context "{name}": user "{ctx.user}" does not exist')
        token = user.token
        if not token and user.token_file:
            token = _read_text(user.token_file, "tokenFile").strip()
        return ClientConfig(
            server=cluster.server.rstrip("/"),
            token=token,
            username=user.username,
            password=user.password,
            ca_file=cluster.certificate_authority,
            ca_data=cluster.certificate_authority_data,
            client_cert_file=user.client_certificate,
            client_cert_data=user.client_certificate_data,
            client_key_file=user.client_key,
            client_key_data=user.client_key_data,
            insecure_skip_tls_verify=cluster.insecure_skip_tls_verify,
            tls_server_name=cluster.tls_server_name,
            namespace=ctx.namespace or "default",
            context=name,
        )


@dataclass(frozen=True)
class ClientConfig:
    """How to reach and authenticate to one API server."""

    server: str
    token: str = ""
    username: str = ""
    password: str = ""
    ca_file: str = ""
    ca_data: bytes = b""
    client_cert_file: str = ""
    client_cert_data: bytes = b""
    client_key_file: str = ""
    client_key_data: bytes = b""
    insecure_skip_tls_verify: bool = False
    tls_server_name: str = ""
    namespace: str = "default"
    context: str = ""

    def ssl_context(self) -> ssl.SSLContext | bool:
        """The TLS settings for an HTTPS server (``True`` = system CAs, ``False`` = no checks)."""
        if not self.server.startswith("https://"):
            return True
        if self.insecure_skip_tls_verify:
            ctx = ssl.create_default_context()
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        elif self.ca_data:
            ctx = ssl.create_default_context(cadata=self.ca_data.decode("ascii", errors="replace"))
        elif self.ca_file:
            ctx = ssl.create_default_context(cafile=self.ca_file)
        else:
            ctx = ssl.create_default_context()
        cert, key = self._client_cert_files()
        if cert:
            ctx.load_cert_chain(cert, key or None)
        return ctx

    def _client_cert_files(self) -> tuple[str, str]:
        # ssl can only load certificate chains from files, so inline data goes to private
        # temporary files for the time it takes to load them.
        cert, key = self.client_cert_file, self.client_key_file
        if self.client_cert_data:
            cert = _private_temp_file(self.client_cert_data)
        if self.client_key_data:
            key = _private_temp_file(self.client_key_data)
        return cert, key


def _private_temp_file(data: bytes) -> str:
    # Imported here: tempfile brings shutil, random and the compression modules, start-up
    # time the scheduler pays for nothing when its kubeconfig holds a token or file paths.
    import tempfile

    fd, path = tempfile.mkstemp(prefix="kubehpc-", suffix=".pem")
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
    return path


def _read_text(path: str, what: str) -> str:
    try:
        return Path(path).read_text()
    except OSError as exc:
        raise KubeconfigError(f"cannot read {what} {path}: {exc.strerror}") from None


def _b64(value: Any, where: str) -> bytes:
    if not value:
        return b""
    try:
        return base64.b64decode(str(value), validate=True)
    except (binascii.Error, ValueError):
        raise KubeconfigError(f"{where}: not valid base64") from None


def _abs(path: Any, base: Path) -> str:
    if not path:
        return ""
    p = Path(str(path)).expanduser()
    return str(p if p.is_absolute() else base / p)


def _named_entries(doc: Mapping[str, Any], key: str, source: Path) -> list[tuple[str, Mapping[str, Any]]]:
    entries = doc.get(key) or []
    if not isinstance(entries, list):
        raise KubeconfigError(f"{source}: {key}: expected a list")
    out: list[tuple[str, Mapping[str, Any]]] = []
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict) or not entry.get("name"):
            raise KubeconfigError(f"{source}: {key}[{i}]: each entry needs a name")
        body = entry.get(key[:-1]) or {}
        if not isinstance(body, dict):
            raise KubeconfigError(f"{source}: {key}[{i}].{key[:-1]}: expected a mapping")
        out.append((str(entry["name"]), body))
    return out


def parse_kubeconfig(text: str, source: Path) -> Kubeconfig:
    """Parse one kubeconfig file's text; relative paths resolve against ``source``'s folder."""
    try:
        doc = yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        raise KubeconfigError(f"{source}: not valid YAML: {exc}") from None
    if not isinstance(doc, dict):
        raise KubeconfigError(f"{source}: expected a mapping at the top level")
    base = source.parent
    cfg = Kubeconfig(current_context=str(doc.get("current-context") or ""), sources=[source])
    for name, c in _named_entries(doc, "clusters", source):
        if not c.get("server"):
            raise KubeconfigError(f"{source}: cluster {name}: server is required")
        cfg.clusters[name] = Cluster(
            server=str(c["server"]),
            certificate_authority=_abs(c.get("certificate-authority"), base),
            certificate_authority_data=_b64(
                c.get("certificate-authority-data"), f"{source}: cluster {name}: certificate-authority-data"
            ),
            insecure_skip_tls_verify=bool(c.get("insecure-skip-tls-verify", False)),
            tls_server_name=str(c.get("tls-server-name") or ""),
        )
    for name, u in _named_entries(doc, "users", source):
        cfg.users[name] = User(
            token=str(u.get("token") or ""),
            token_file=_abs(u.get("tokenFile"), base),
            client_certificate=_abs(u.get("client-certificate"), base),
            client_certificate_data=_b64(
                u.get("client-certificate-data"), f"{source}: user {name}: client-certificate-data"
            ),
            client_key=_abs(u.get("client-key"), base),
            client_key_data=_b64(u.get("client-key-data"), f"{source}: user {name}: client-key-data"),
            username=str(u.get("username") or ""),
            password=str(u.get("password") or ""),
        )
    for name, c in _named_entries(doc, "contexts", source):
        if not c.get("cluster"):
            raise KubeconfigError(f"{source}: context {name}: cluster is required")
        cfg.contexts[name] = Context(
            cluster=str(c["cluster"]), user=str(c.get("user") or ""), namespace=str(c.get("namespace") or "")
        )
    return cfg


def merge(configs: Sequence[Kubeconfig]) -> Kubeconfig:
    """Merge as kubectl does: the first definition of each name wins, and so does the first
    ``current-context``."""
    out = Kubeconfig()
    for cfg in configs:
        for name, cluster in cfg.clusters.items():
            out.clusters.setdefault(name, cluster)
        for name, user in cfg.users.items():
            out.users.setdefault(name, user)
        for name, ctx in cfg.contexts.items():
            out.contexts.setdefault(name, ctx)
        if not out.current_context:
            out.current_context = cfg.current_context
        out.sources.extend(cfg.sources)
    return out


def kubeconfig_paths(explicit: str = "", environ: Mapping[str, str] | None = None) -> list[Path]:
    """The files to read: ``explicit`` alone when given, else ``$KUBECONFIG``'s list, else
    ``~/.kube/config``."""
    if explicit:
        return [Path(explicit).expanduser()]
    env = os.environ if environ is None else environ
    listed = [p for p in env.get(ENV_VAR, "").split(os.pathsep) if p]
    if listed:
        return [Path(p).expanduser() for p in listed]
    return [Path.home() / ".kube" / "config"]


def load_kubeconfig(paths: Sequence[Path]) -> Kubeconfig:
    """Read and merge ``paths``. A single named file must exist; files in a ``$KUBECONFIG``
    list that do not exist are skipped, as kubectl skips them."""
    configs = []
    for path in paths:
        if not path.exists():
            if len(paths) == 1:
                raise KubeconfigError(f"kubeconfig {path} does not exist")
            continue
        configs.append(parse_kubeconfig(_read_text(str(path), "kubeconfig"), path))
    if not configs:
        raise KubeconfigError("none of the kubeconfig files exists: " + ", ".join(map(str, paths)))
    return merge(configs)


def load_client_config(kubeconfig: str = "", context: str = "") -> ClientConfig:
    """kubectl's lookup in one call: ``--kubeconfig``, else ``$KUBECONFIG``, else ~/.kube/config."""
    return load_kubeconfig(kubeconfig_paths(kubeconfig)).client_config(context)


def in_cluster_config(
    environ: Mapping[str, str] | None = None, account_dir: Path = SERVICE_ACCOUNT_DIR
) -> ClientConfig:
    """The config of a process running in a pod: the API server from the service environment
    variables, the service account's token, CA and namespace from its mounted files."""
    env = os.environ if environ is None else environ
    host, port = env.get("KUBERNETES_SERVICE_HOST", ""), env.get("KUBERNETES_SERVICE_PORT", "")
    if not host or not port:
        raise KubeconfigError("not running in a cluster: KUBERNETES_SERVICE_HOST/PORT are not set")
    token_path = account_dir / "token"
    if not token_path.exists():
        raise KubeconfigError(f"not running in a cluster: {token_path} does not exist")
    if ":" in host:  # an IPv6 address needs brackets in a URL
        host = f"[{host}]"
    ca = account_dir / "ca.crt"
    ns_file = account_dir / "namespace"
    namespace = ns_file.read_text().strip() if ns_file.exists() else ""
    return ClientConfig(
        server=f"https://{host}:{port}",
        token=token_path.read_text().strip(),
        ca_file=str(ca) if ca.exists() else "",
        namespace=namespace or "default",
        context="in-cluster",
    )
