"""MPI on the embedded cluster: the MPIJob controller wired to this machine's launch agent."""

from __future__ import annotations

import os
import shutil

from kubehpc.controllers.mpijob import Embedded, HostCheck, MPIJobController
from kubehpc.node.launch import install_shims
from kubehpc.store.client import Client
from kubehpc.store.home import Home


def _which(program: str, path: str) -> str | None:
    return shutil.which(program, path=path or None)


def mpijob_controller(client: Client, home: Home) -> MPIJobController:
    """The controller whose launchers reach worker pods through ``kubehpc-launch`` (written
    into the home's bin directory, which the node agent puts on every pod's PATH) and which
    checks that the launcher's program (``mpirun``) exists on this host."""
    shims = install_shims(home)
    path = f"{shims.launch.parent}:{os.environ.get('PATH', os.defpath)}"
    return MPIJobController(client, embedded=Embedded(str(shims.launch)), host=HostCheck(_which, path))
