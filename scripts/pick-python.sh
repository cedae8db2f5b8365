#!/usr/bin/env bash
# Prints the interpreter `make` builds .venv on (the Makefile's PYTHON, unless it is given).
#
# The operating system's own python3 comes first when it is usable here: Python >= 3.11 with
# the venv module and the C headers (the mypyc build compiles against them). Distributions
# build their interpreter with profile-guided and link-time optimisation and link libpython
# into the executable; a default source build (pyenv's, often first on PATH) does neither.
# The control plane spends its time in the interpreter and the C API: on Debian's build it
# admits about 13 % more workloads a second than on pyenv's, on the same machine, with 14 %
# less CPU per workload (docs/performance.md, "Twenty-seventh pass"). Otherwise: python3 from
# PATH. PICK_PYTHON_CANDIDATES (space-separated) replaces the list of preferred interpreters
# (the tests use it).
set -euo pipefail

usable() {
    "$1" - <<'EOF' >/dev/null 2>&1
import ensurepip, os, sys, sysconfig, venv
assert sys.version_info >= (3, 11)
assert os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h"))
EOF
}

for candidate in ${PICK_PYTHON_CANDIDATES-/usr/bin/python3}; do
    if [ -x "$candidate" ] && usable "$candidate"; then
        echo "$candidate"
        exit 0
    fi
done
echo python3
