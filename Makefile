.PHONY: test deps lint

# The whole test suite, from a fresh clone: installs system and Python dependencies first.
test: deps
	ruff check src tests benchmarks
	lint-imports
	python -m pytest -q

deps:
	bash scripts/install-test-deps.sh

lint:
	ruff check src tests benchmarks
	lint-imports
