"""What the Slurm verbs share: kubehpc's connection flags without ``-n`` (which means
``--ntasks`` to sbatch and ``--name`` to squeue), and the admin's Slurm mapping."""

from __future__ import annotations

import argparse
from pathlib import Path

from kubehpc.cli.session import CliError, Session
from kubehpc.slurm.mapping import MappingError, SlurmMapping, load_mapping

MAPPING_FILE = "slurm-mapping.yaml"


def add_connection_flags(parser: argparse.ArgumentParser) -> None:
    s = argparse.SUPPRESS
    parser.add_argument("--kubeconfig", default=s, help="kubeconfig file (default: the one `up` wrote)")
    parser.add_argument("--context", default=s, help="kubeconfig context to use")
    parser.add_argument("--home", default=s, help="kubehpc home directory")
    parser.add_argument("--namespace", default=s, help="namespace (default: the context's, else default)")


def mapping_for(session: Session, path: str | None) -> SlurmMapping:
    """``path``, else ``$KUBEHPC_HOME/slurm-mapping.yaml`` when it exists, else the defaults."""
    try:
        if path:
            return load_mapping(path)
        default = Path(session.home.root) / MAPPING_FILE
        return load_mapping(default) if default.exists() else SlurmMapping()
    except MappingError as exc:
        raise CliError(str(exc)) from None
