"""The ``kubehpc`` command: kubectl's verbs for the local control plane, plus ``up`` and ``down``.

Each verb is a small module with ``add_parser(subparsers, common)`` and ``run(session, args)``.
Flags shared by all verbs (``--kubeconfig``, ``--context``, ``--home``, ``-n``) may be given
before or after the verb, as kubectl allows.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import IO

from kubehpc.api.errors import ApiError
from kubehpc.cli import (
    apply,
    controller,
    daemon,
    delete,
    describe,
    down,
    events,
    get,
    logs,
    node,
    sim,
    slurm_import,
    slurm_sbatch,
    slurm_views,
    up,
    version,
    wait,
)
from kubehpc.cli.session import CliError, Session
from kubehpc.kube.kubeconfig import KubeconfigError
from kubehpc.kube.rest import ConnectionFailed

COMMANDS = (
    up,
    down,
    apply,
    get,
    describe,
    delete,
    logs,
    events,
    wait,
    version,
    slurm_sbatch,
    slurm_views,
    slurm_import,
    sim,
    controller,
    node,
)


def _add_common(parser: argparse.ArgumentParser, suppress: bool) -> None:
    # On the verbs the defaults are SUPPRESS, so a flag given before the verb is not
    # overwritten by the verb's default.
    default = argparse.SUPPRESS if suppress else None
    parser.add_argument("--kubeconfig", default=default, help="kubeconfig file (default: the one `up` wrote)")
    parser.add_argument("--context", default=default, help="kubeconfig context to use")
    parser.add_argument(
        "--home", default=default, help="kubehpc home directory (default: $KUBEHPC_HOME or ~/.kubehpc)"
    )
    parser.add_argument(
        "-n", "--namespace", default=default, help="namespace (default: the context's, else default)"
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kubehpc", description="HPC and AI batch scheduling the Kubernetes way."
    )
    _add_common(parser, suppress=False)
    common = argparse.ArgumentParser(add_help=False)
    _add_common(common, suppress=True)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module in COMMANDS:
        module.add_parser(sub, common)
    return parser


def error_line(err: ApiError) -> str:
    """kubectl's one-line rendering of a server error."""
    return f"Error from server ({err.reason}): {err.message}"


def main(
    argv: Sequence[str] | None = None,
    stdout: IO[str] | None = None,
    stderr: IO[str] | None = None,
    stdin: IO[str] | None = None,
) -> int:
    out, errs = stdout or sys.stdout, stderr or sys.stderr
    args = build_parser().parse_args(argv)
    session = Session(args, stdin=stdin or sys.stdin, stdout=out, stderr=errs)
    try:
        return int(args.run(session, args) or 0)
    except ConnectionFailed as exc:
        print(f"error: {exc.message}", file=errs)
    except ApiError as exc:
        print(error_line(exc), file=errs)
    except (CliError, KubeconfigError, daemon.DaemonError) as exc:
        print(f"error: {exc}", file=errs)
        return getattr(exc, "exit_code", 1)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    finally:
        session.close()
    return 1


if __name__ == "__main__":
    sys.exit(main())
