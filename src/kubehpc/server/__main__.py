"""``python -m kubehpc.server --home DIR [--port N]``: the API server alone, on the store in DIR.

Creates the token on first start, writes DIR/kubeconfig once listening and prints the URL.
"""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path

from kubehpc.api.kinds import default_registry
from kubehpc.server.bootstrap import ensure_token, write_kubeconfig
from kubehpc.server.serve import serve
from kubehpc.server.tls import ensure_tls
from kubehpc.store.home import Home
from kubehpc.store.store import Store


def _exit_on_sigterm(signum: int, frame: object) -> None:
    raise SystemExit(0)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kubehpc.server", description=__doc__)
    parser.add_argument("--home", help="state directory (default: $KUBEHPC_HOME or ~/.kubehpc)")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=0, help="port to bind (default: any free port)")
    parser.add_argument(
        "--insecure-http", action="store_true", help="serve plain http (kubectl then sends no token)"
    )
    args = parser.parse_args(argv)

    home = (Home(Path(args.home)) if args.home else Home.from_env()).ensure()
    registry = default_registry()
    token = ensure_token(home)
    tls = None if args.insecure_http else ensure_tls(home, (args.host,))
    store = Store(registry, home.db_path)

    def ready(port: int) -> None:
        url = f"{'http' if tls is None else 'https'}://{args.host}:{port}"
        path = write_kubeconfig(home, url, token, None if tls is None else tls.ca_pem)
        print(f"kubehpc API server listening on {url}", flush=True)
        print(f"kubeconfig: {path}", flush=True)

    # uvicorn stops on SIGTERM, restores the previous handler and raises the signal again; as
    # SystemExit that unwinds through store.close() below instead of killing the process.
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    try:
        serve(store, registry, home, args.host, args.port, token=token, tls=tls, on_ready=ready)
    finally:
        store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
