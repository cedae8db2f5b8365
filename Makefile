# The two commands of the quick start: `make demo` and `make test`.
# Everything lands in .venv; Debian packages the tests need are installed when missing.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-$(shell cat pyproject.toml | md5sum | cut -c1-12)
PYTEST_ARGS ?=

.PHONY: demo test install lint typecheck layers unit clean system-deps bench k8s-testenv

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	@rm -f $(VENV)/.installed-*
	@touch $@

install: $(STAMP)

system-deps:
	@bash scripts/system-deps.sh

# The real kube-apiserver the k8s tests need: built once into ~/.cache (15-20 min cold).
k8s-testenv:
	@bash scripts/k8s-testenv build

demo: install system-deps
	$(BIN)/python examples/demo.py

lint: install
	$(BIN)/ruff check src tests benchmarks examples
	$(BIN)/ruff format --check src tests benchmarks examples

layers: install
	$(BIN)/lint-imports

typecheck: install
	$(BIN)/mypy

unit: install
	$(BIN)/python -m pytest $(PYTEST_ARGS)

test: install system-deps k8s-testenv lint layers typecheck unit

bench: install
	$(BIN)/python benchmarks/store.py

clean:
	rm -rf $(VENV) build dist src/*.egg-info .pytest_cache .mypy_cache .ruff_cache
