# Quick start: `make demo` (set up + run the demo), `make test` (set up + run the tests).
.PHONY: setup demo test lint bench

setup:
	bash scripts/setup.sh

demo: setup
	.venv/bin/scope demo

# SCOPE_REQUIRE_NATIVE: the native ingest core must have been built (tests fail, not skip, without it).
test:
	bash scripts/setup.sh --test
	.venv/bin/ruff check .
	SCOPE_REQUIRE_NATIVE=1 .venv/bin/python -m pytest -ra

lint:
	.venv/bin/ruff check .
	.venv/bin/ruff format --check .
	.venv/bin/python -m mypy

bench:
	.venv/bin/python benchmarks/ingest.py
