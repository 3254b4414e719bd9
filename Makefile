# The two commands a new user runs: `make demo` and `make test`. Both create .venv on first use.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
EXTRAS ?= dev,hf,embed,ray,probe,browser,review,build,urls,track-tensorboard,track-mlflow,track-wandb,finetune
STAMP := $(VENV)/.scopebench-installed

.PHONY: venv demo test test-quick lint typecheck check browser postgres clean mutation

venv: $(STAMP)

$(STAMP): pyproject.toml Makefile
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "scopebench needs Python >= 3.11 (set PYTHON=python3.11)")'
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	# The CPU wheel first, so no dependency can pull a CUDA build of torch.
	$(PIP) install -q torch==2.13.0
	$(PIP) install -q -e '.[$(EXTRAS)]'
	@touch $@

demo: venv
	$(VENV)/bin/scopebench demo

# The whole suite on every core (pytest-xdist, -n auto; tests of one xdist_group, such as those
# that start a local Ray, share a worker), the tests marked `slow` included: the
# subprocess crash/lock tests, the review app's concurrent load test and the other long ones.
# CI runs this (.ci/run). `make test-quick` leaves the `slow` ones out while you work.
test: venv browser postgres
	$(PY) -m pytest -q -n auto --dist loadgroup

test-quick: venv
	$(PY) -m pytest -q -n auto --dist loadgroup -m "not slow"

# Chromium for the HTML-report browser tests: installed from Debian when we can, else those tests
# skip with a stated reason.
browser:
	@bash .ci/install-chromium.sh || true

# PostgreSQL for the review app's multi-user database test: from Debian when we can, else that test
# skips with a stated reason.
postgres:
	@bash .ci/install-postgres.sh || true

# lint-imports: the layer contracts of pyproject.toml ([tool.importlinter]; docs/architecture.md).
# tests/test_code_limits.py: no function over 80 lines, no module over 800 (its allow-list says why).
lint: venv
	$(VENV)/bin/ruff check src tests bench
	$(VENV)/bin/ruff format --check src tests bench
	$(VENV)/bin/lint-imports --no-logo
	$(PY) -m pytest -q -p no:cacheprovider tests/test_code_limits.py

typecheck: venv
	$(VENV)/bin/mypy

check: lint typecheck test

# Mutation testing of parsing/, scoring/ and the resume logic (slow: not part of test/check/CI).
# Scores are in bench/RESULTS.md, the equivalent mutants in bench/equivalent_mutants.yaml; MODULES="scoring.compare ..." narrows it,
# PENDING=1 runs only the mutants without a verdict or still surviving.
mutation: venv
	$(PY) bench/mutation.py --mutmut $(VENV)/bin/mutmut $(foreach m,$(MODULES),--module $(m)) $(if $(PENDING),--pending)

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache mutants
