# Quick start: `make demo` (set up + run the demo), `make test` (set up + run the tests).
.PHONY: setup demo test fuzz-ci lint bench

setup:
	bash scripts/setup.sh

demo: setup
	.venv/bin/scope demo

# SCOPE_REQUIRE_NATIVE: the native ingest core must have been built (tests fail, not skip, without it).
test:
	bash scripts/setup.sh --test
	.venv/bin/ruff check .
	$(MAKE) fuzz-ci
	SCOPE_REQUIRE_NATIVE=1 .venv/bin/python -m pytest -ra

# A short seeded run of the native-core fuzzer under AddressSanitizer + UBSan (about a minute with the
# sanitized build): a crash, a sanitizer report or an unexpected exception fails `make test` and CI.
# A fixed count of inputs, so CI fuzzes the same inputs however fast its machine is (120 s is a cap).
# Before a release, run it longer by hand: bash scripts/fuzz_native.sh 1200
fuzz-ci:
	bash scripts/fuzz_native.sh 120 21 1500

lint:
	.venv/bin/ruff check .
	.venv/bin/ruff format --check .
	bash scripts/mypy.sh

bench:
	.venv/bin/python benchmarks/ingest.py
