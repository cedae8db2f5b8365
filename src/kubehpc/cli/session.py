"""What every command needs: the home directory, the namespace, output streams and a client.

The command line talks to a control plane only over HTTP, through the same RestClient that
would talk to a real cluster. Which server: ``--kubeconfig``, else ``$KUBECONFIG``, else the
kubeconfig that ``kubehpc up`` wrote into the home directory.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from rich.console import Console

from kubehpc.cli import daemon
from kubehpc.kube.kubeconfig import ENV_VAR, load_client_config
from kubehpc.kube.rest import RestClient
from kubehpc.store.home import Home


class CliError(Exception):
    """A user error: printed as one ``error: ...`` line, exit code 1."""

    def __init__(self, message: str, exit_code: int = 1) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def make_console(stream: IO[str]) -> Console:
    # Off a terminal, nothing may wrap or be cut: scripts and tests read these tables.
    if stream.isatty():
        return Console(file=stream, highlight=False)
    return Console(file=stream, highlight=False, width=100_000, no_color=True, soft_wrap=True)


@dataclass
class Session:
    args: argparse.Namespace
    stdin: IO[str] = field(default_factory=lambda: sys.stdin)
    stdout: IO[str] = field(default_factory=lambda: sys.stdout)
    stderr: IO[str] = field(default_factory=lambda: sys.stderr)
    _client: RestClient | None = None

    @property
    def home(self) -> Home:
        home_arg = getattr(self.args, "home", None)
        return Home(Path(home_arg).expanduser()) if home_arg else Home.from_env()

    @property
    def out(self) -> Console:
        return make_console(self.stdout)

    @property
    def err(self) -> Console:
        return make_console(self.stderr)

    def warn(self, message: str) -> None:
        print(f"Warning: {message}", file=self.stderr)

    def _explicit_kubeconfig(self) -> str:
        explicit = getattr(self.args, "kubeconfig", None) or os.environ.get(ENV_VAR, "")
        # `export KUBECONFIG=$KUBEHPC_HOME/kubeconfig` (the hint `up` prints) still means
        # "the local control plane", which may be started on demand.
        if explicit and Path(explicit).expanduser().resolve() == self.home.kubeconfig_path.resolve():
            return ""
        return explicit

    def client(self, start_if_needed: bool = False) -> RestClient:
        """The REST client for the chosen server; with ``start_if_needed``, a local control
        plane is started (and that said on stderr) when none runs and no kubeconfig is named."""
        if self._client is not None:
            return self._client
        path = self._explicit_kubeconfig()
        if not path:
            home = self.home
            if daemon.running_pid(home) is None:
                if not start_if_needed:
                    raise CliError(
                        f"no kubehpc control plane is running (home {home.root}); "
                        "start one with `kubehpc up -d` or name a cluster with --kubeconfig"
                    )
                print(
                    f"No control plane running; starting one in the background (home {home.root}).",
                    file=self.stderr,
                )
                daemon.start_daemon(home)
            path = str(home.kubeconfig_path)
        config = load_client_config(path, getattr(self.args, "context", None) or "")
        self._client = RestClient(config, on_warning=self.warn)
        return self._client

    def namespace(self) -> str:
        ns = getattr(self.args, "namespace", None)
        if ns:
            return str(ns)
        return self.client().config.namespace

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
