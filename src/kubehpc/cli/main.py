"""The ``kubehpc`` command: kubectl's verbs for the local control plane, plus ``up`` and ``down``.

Each verb is a small module with ``add_parser(subparsers, common)`` and ``run(session, args)``.
Flags shared by all verbs (``--kubeconfig``, ``--context``, ``--home``, ``-n``) may be given
before or after the verb, as kubectl allows.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import IO

from kubehpc.api.errors import ApiError
from kubehpc.cli.daemon import DaemonError
from kubehpc.cli.session import CliError, Session
from kubehpc.kube.kubeconfig import KubeconfigError
from kubehpc.kube.rest import ConnectionFailed

VERBS: dict[str, str] = {
    "up": "up",
    "down": "down",
    "apply": "apply",
    "get": "get",
    "describe": "describe",
    "delete": "delete",
    "logs": "logs",
    "events": "events",
    "wait": "wait",
    "version": "version",
    "sbatch": "slurm_sbatch",
    "squeue": "slurm_views",
    "sinfo": "slurm_views",
    "sacct": "slurm_views",
    "scontrol": "slurm_views",
    "scancel": "slurm_views",
    "import": "slurm_import",
    "sim": "sim",
    "controller": "controller",
    "node": "node",
}
"""Each verb and the module (under kubehpc.cli) that adds its parser, in ``--help`` order. A
module is imported only when its verb is the one run: importing them all costs a command
like ``kubehpc controller`` more start-up than the scheduler itself (the simulator, Slurm's
views, the embedded plane's launcher)."""
TOP_LEVEL_VALUED = ("--kubeconfig", "--context", "--home", "-n", "--namespace")
"""Flags of the top-level parser that take a value: a verb's name is never one of those values."""


def verb_of(argv: Sequence[str]) -> str | None:
    """The verb in ``argv`` (its first positional word, past the shared flags), or None."""
    tokens = iter(argv)
    for token in tokens:
        if token == "--":
            return next(tokens, None)
        if token in ("-h", "--help"):
            return None  # the top-level help, which lists every verb
        if token in TOP_LEVEL_VALUED or (
            # argparse takes unambiguous abbreviations (--kube FILE) as the flag itself
            token.startswith("--") and "=" not in token and any(f.startswith(token) for f in TOP_LEVEL_VALUED)
        ):
            next(tokens, None)  # its value
            continue
        if token.startswith("-"):
            continue  # --flag=value, -nVALUE, or a flag without a value (--help)
        return token
    return None


def verb_modules(argv: Sequence[str] | None = None) -> list[ModuleType]:
    """The verb modules a parser for ``argv`` needs: the one verb named there, or every verb
    (no argv, no verb, an unknown one: help and errors then list them all)."""
    verb = verb_of(argv) if argv is not None else None
    names = [VERBS[verb]] if verb in VERBS else list(dict.fromkeys(VERBS.values()))
    return [importlib.import_module(f"kubehpc.cli.{name}") for name in names]


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


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser for ``argv`` (only its verb's arguments added; all verbs without ``argv``)."""
    parser = argparse.ArgumentParser(
        prog="kubehpc", description="HPC and AI batch scheduling the Kubernetes way."
    )
    _add_common(parser, suppress=False)
    common = argparse.ArgumentParser(add_help=False)
    _add_common(common, suppress=True)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module in verb_modules(argv):
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
    words = sys.argv[1:] if argv is None else list(argv)
    args = build_parser(words).parse_args(words)
    session = Session(args, stdin=stdin or sys.stdin, stdout=out, stderr=errs)
    try:
        return int(args.run(session, args) or 0)
    except ConnectionFailed as exc:
        print(f"error: {exc.message}", file=errs)
    except ApiError as exc:
        print(error_line(exc), file=errs)
    except (CliError, KubeconfigError, DaemonError) as exc:
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
