# Two commands for a fresh machine (Debian, Python 3.11):  make run   and   make test
# Both create .venv from pyproject.toml when it is missing or older than pyproject.toml.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: run test system-deps validate bench dist clean

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test,packaging]'
	@touch $(STAMP)

run: $(STAMP)
	$(PY) -m gpuadvisor

system-deps:
	@bash scripts/install-system-deps.sh

test: system-deps $(STAMP)
	QT_QPA_PLATFORM=offscreen $(PY) -m pytest
	$(VENV)/bin/lint-imports
	$(VENV)/bin/ruff check gpuadvisor tests benchmarks scripts packaging
	$(VENV)/bin/mypy

validate: $(STAMP)
	$(PY) scripts/validate.py

bench: $(STAMP)
	$(PY) benchmarks/bench_estimate.py

# The standalone app (docs/packaging.md): dist/gpuadvisor/, its .tar.gz and, on Debian, a .deb.
dist: $(STAMP)
	@$(PY) -c "import PyInstaller" 2>/dev/null || $(PY) -m pip install --quiet -e '.[test,packaging]'
	$(PY) packaging/build.py

clean:
	rm -rf $(VENV) build dist *.egg-info
