# Quick start: `make demo` (set up + run the demo), `make test` (set up + run the tests).
.PHONY: setup demo test test-unit test-integration fuzz-ci lint bench

setup:
	bash scripts/setup.sh

demo: setup
	.venv/bin/scope demo

# SCOPE_REQUIRE_NATIVE: the native ingest core must have been built (tests fail, not skip, without it).
# Every tier: the unit tier spread over every core (pytest-xdist: it holds no job whose timing a busy core
# could upset; --dist loadscope keeps a module's tests on one worker, so a module's fixture, often an analyzed
# run, is made once rather than on each worker), then the others in one serial pytest run (the real multi-rank runs are session fixtures
# shared across test files, and their verdicts time real ranks). Both always run; either failing fails.
test:
	bash scripts/setup.sh --test
	.venv/bin/ruff check .
	$(MAKE) fuzz-ci & fuzz=$$!; $(WARM_CACHES); wait $$fuzz
	rc=0; \
	SCOPE_REQUIRE_NATIVE=1 .venv/bin/python -m pytest -ra -n auto --dist loadscope -m "not ($(TIER_MARKS))" || rc=$$?; \
	SCOPE_REQUIRE_NATIVE=1 .venv/bin/python -m pytest -ra -m "$(TIER_MARKS)" || rc=$$?; \
	exit $$rc

# Bytecode caches, written while the fuzzer runs on the other core: one collection compiles the project's
# modules and pytest's assertion-rewritten test modules into __pycache__ (gitignored), so each xdist worker
# and the second pytest run collect in ~5 s instead of ~12, and the scope / torchrun children of the later
# tiers import compiled modules. PYTHONDONTWRITEBYTECODE (set on some machines) would stop the writing; an
# empty value lets Python write (cpython: only a non-empty value counts). Reading a cache needs no setting.
WARM_CACHES = PYTHONDONTWRITEBYTECODE= .venv/bin/python -m pytest -q --collect-only -p no:cacheprovider >/dev/null 2>&1 || true

# The tiers (tests/tiers.py; marks in pyproject.toml). Unit: every test without a tier mark, spread over
# every core (pytest-xdist), under 120 s on 2 cores; an unmarked test that launches a training job fails.
# Integration: the rest (real torchrun jobs, headless Chromium, a Dask cluster, scope CLI children, long
# analyses). Both set up .venv when it lacks the test tools.
TIER_MARKS = multirank or browser or slow or subprocess

test-unit: .venv/bin/pytest
	.venv/bin/python -c "import xdist" 2>/dev/null || bash scripts/setup.sh --test
	SCOPE_REQUIRE_NATIVE=1 .venv/bin/python -m pytest -ra -n auto --dist loadscope -m "not ($(TIER_MARKS))"

test-integration: .venv/bin/pytest
	SCOPE_REQUIRE_NATIVE=1 .venv/bin/python -m pytest -ra -m "$(TIER_MARKS)"

.venv/bin/pytest:
	bash scripts/setup.sh --test

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
