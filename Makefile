.PHONY: test check deps lint

# Where `make test` installs the package and everything its tests need: a virtual environment of
# its own, made fresh on a fresh clone, so the suite passes only with what pyproject.toml declares.
VENV ?= .venv
BIN := $(CURDIR)/$(VENV)/bin
IN_VENV := PATH="$(BIN):$$PATH" VIRTUAL_ENV="$(CURDIR)/$(VENV)"

# The whole suite (what .ci/run calls): system packages first (as root), the package with its
# test extra in $(VENV), lint, layer contracts, the unit tier on two processes, then the system
# tier (ranks, the CLI as a child, Slurm, Open MPI, PostgreSQL, Prometheus, Chromium, namespaces).
test: deps
	$(IN_VENV) ruff check src tests benchmarks
	$(IN_VENV) lint-imports
	$(IN_VENV) python -m pytest -q -m "not system" -n 2
	$(IN_VENV) python -m pytest -q -m system

# The fast tier, after every change: unit tests only (no root, no server, no process started),
# in the environment you develop in (pip install -e '.[test]').
check:
	ruff check src tests benchmarks
	python -m pytest -q -m "not system" -n 2

deps:
	bash scripts/install-test-deps.sh $(VENV)

lint:
	ruff check src tests benchmarks
	lint-imports
