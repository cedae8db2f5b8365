#!/usr/bin/env bash
# Installs the Debian packages the test suite needs, when they are missing.
# kubectl: the machines we target ship /usr/bin/kubectl; elsewhere Debian's kubernetes-client.
set -euo pipefail
missing=()
command -v kubectl >/dev/null 2>&1 || missing+=(kubernetes-client)
if ((${#missing[@]})); then
  echo "installing Debian packages: ${missing[*]}" >&2
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
fi
