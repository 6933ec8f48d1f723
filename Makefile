# Two commands for a fresh machine (Debian, Python 3.11):  make run   and   make test
# Both make .venv usable first (scripts/venv.sh): it checks the Debian packages they need
# (installing them as root), rebuilds a .venv that cannot run pip, and installs from
# pyproject.toml what they need: `run` the runtime dependencies only, `test` the test and
# packaging extras too. The first run downloads the packages from PyPI.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
export PYTHON

.PHONY: run test system-deps validate fit fit-check bench dist clean

run:
	@bash scripts/venv.sh runtime
	$(PY) -m gpuadvisor

system-deps:
	@bash scripts/install-system-deps.sh --test

# As root with GPUADVISOR_TEST_DEB_INSTALL=1 (set by .ci/run), the packaging test also installs
# the built .deb on this machine with dpkg and purges it again; without it that one test skips.
# The tests run in parallel, one worker process per CPU (pytest-xdist; PYTEST_WORKERS=0 runs them
# in one process). The leave-one-source-out targets (marker validation) are `make validate`'s; .ci/run
# runs both. See docs/development.md, "Checks".
PYTEST_WORKERS ?= auto
test:
	@bash scripts/venv.sh test
	QT_QPA_PLATFORM=offscreen $(PY) -m pytest -n $(PYTEST_WORKERS) --dist loadfile -m "not validation" --durations=12
	$(PY) scripts/fit_constants.py --check
	$(VENV)/bin/lint-imports
	$(VENV)/bin/ruff check gpuadvisor tests benchmarks scripts packaging
	$(VENV)/bin/ruff format --check gpuadvisor tests benchmarks scripts packaging
	$(VENV)/bin/mypy

# The out-of-sample targets: the leave-one-source-out run (its folds spread over the CPUs) and the
# tests that check its figures. `scripts/validate.py` prints the same figures as a table.
validate:
	@bash scripts/venv.sh test
	QT_QPA_PLATFORM=offscreen $(PY) -m pytest -m validation --durations=5

# The speed model's fitted constants (gpuadvisor/core/specs/fitted_constants.json), refitted to the
# validation rows the ledger lets fits read: engine factors, global constants, per-request times,
# llama.cpp's host stream and the 80% ranges (a leave-one-source-out run: minutes). fit-check
# (seconds, in make test too) fails when the rows or the catalogs' specs changed since the fit or a
# value was edited by hand. See docs/estimation.md, "Fitted constants as data".
fit:
	@bash scripts/venv.sh runtime
	$(PY) scripts/fit_constants.py

fit-check:
	@bash scripts/venv.sh runtime
	$(PY) scripts/fit_constants.py --check

bench:
	@bash scripts/venv.sh runtime
	$(PY) benchmarks/bench_estimate.py

# The standalone app (docs/packaging.md): dist/gpuadvisor/, its .tar.gz and, on Debian, a .deb.
# Lists catalog prices older than six months as a warning.
dist:
	@bash scripts/venv.sh test
	$(PY) packaging/build.py

clean:
	rm -rf $(VENV) build dist *.egg-info
