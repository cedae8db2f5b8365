#!/usr/bin/env bash
# Installs the Debian packages the test suite needs, when they are missing.
# kubectl: the machines we target ship /usr/bin/kubectl; elsewhere Debian's kubernetes-client.
set -euo pipefail
missing=()
command -v kubectl >/dev/null 2>&1 || missing+=(kubernetes-client)
# Open MPI: MPIJob tests run real mpirun/orted and compile their test program with mpicc.
command -v mpirun >/dev/null 2>&1 || missing+=(openmpi-bin)
command -v mpicc >/dev/null 2>&1 || missing+=(libopenmpi-dev)
# Slurm 22.05 + munge: the side-by-side tests run a real Slurm (scripts/slurm_peer.py starts it).
[ -x /usr/sbin/slurmctld-wlm ] && [ -x /usr/sbin/slurmd-wlm ] || missing+=(slurmctld slurmd slurm-client munge)
if ((${#missing[@]})); then
  echo "installing Debian packages: ${missing[*]}" >&2
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
fi
