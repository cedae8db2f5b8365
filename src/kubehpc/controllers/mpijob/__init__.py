"""The MPI Operator's role: MPIJob -> worker pods, launcher Job, Service, ConfigMap, SSH Secret."""

from kubehpc.controllers.mpijob.controller import HostCheck, MPIJobController
from kubehpc.controllers.mpijob.objects import Embedded

__all__ = ["Embedded", "HostCheck", "MPIJobController"]
