# The two commands of the quick start: `make demo` and `make test`.
# Everything lands in .venv; Debian packages the tests need are installed when missing.

# The interpreter .venv is built on: the system's optimised python3 when usable, else
# python3 from PATH (scripts/pick-python.sh says why); `make PYTHON=...` picks another.
PYTHON ?= $(shell bash scripts/pick-python.sh)
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-$(shell cat pyproject.toml | md5sum | cut -c1-12)
PYTEST_ARGS ?=

.PHONY: demo test install venv-note native lint typecheck layers unit clean system-deps bench k8s-testenv

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	@rm -f $(VENV)/.installed-*
	@touch $@

install: $(STAMP)

# The hot modules compiled with mypyc, and store/_untrack.c (scripts/build_native.py): cached in ~/.cache by the
# hash of the sources, so a build runs once per change (~2-3 min on 2 cores) and is otherwise
# a copy. Modules whose source changed after the build load from source (src/kubehpc/_native.py).
native: install venv-note
	$(BIN)/python scripts/build_native.py

# An existing .venv stays on the interpreter it was made with; say so when PYTHON is another.
venv-note: install
	@want=$$($(PYTHON) -c 'import os, sys; print(os.path.realpath(sys.executable))' 2>/dev/null); \
	have=$$($(BIN)/python -c 'import os, sys; print(os.path.realpath(sys._base_executable))'); \
	if [ -n "$$want" ] && [ "$$want" != "$$have" ]; then \
		echo "note: .venv runs on $$have, not on $$want (PYTHON); 'make clean' and make again to move it"; \
	fi

system-deps:
	@bash scripts/system-deps.sh

# The real kube-apiserver the k8s tests need: built once into ~/.cache (15-20 min cold).
k8s-testenv:
	@bash scripts/k8s-testenv build

demo: native system-deps
	$(BIN)/python examples/demo.py

lint: install
	$(BIN)/ruff check src tests benchmarks examples
	$(BIN)/ruff format --check src tests benchmarks examples

layers: install
	$(BIN)/lint-imports

typecheck: install
	$(BIN)/mypy

unit: native
	$(BIN)/python -m pytest $(PYTEST_ARGS)

test: native system-deps k8s-testenv lint layers typecheck unit

bench: native
	$(BIN)/python benchmarks/store.py

clean:
	-test -x $(BIN)/python && $(BIN)/python scripts/build_native.py --clean
	rm -rf $(VENV) build dist src/*.egg-info .pytest_cache .mypy_cache .ruff_cache
