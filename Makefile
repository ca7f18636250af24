# Every target installs what it needs into .venv (a fresh machine needs only python3.11 and a C++ compiler).
PYTHON ?= python3.11
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
STAMP  := $(VENV)/.torchneuron-installed
CSRC   := $(shell find csrc -name '*.cpp' -o -name '*.h')
# test worker processes (pytest-xdist): CI has 2 cores; `make test TEST_WORKERS=0` runs in this process
TEST_WORKERS ?= 2

.PHONY: demo test test-all lint conformance conformance-lowered bench info install clean

demo: install
	$(PY) -m torchneuron demo

test: install lint
	$(PY) -m pytest -q -n $(TEST_WORKERS) -m "not slow" tests

lint: install
	$(PY) -m ruff check .

test-all: install lint
	$(PY) -m pytest -q -n $(TEST_WORKERS) tests

conformance: install
	$(PY) -m tests.conformance.report

# the same checks in strict eager mode (TORCHNEURON_EAGER=lowered): every op through StableHLO + XLA:CPU
conformance-lowered: install
	$(PY) -m tests.conformance.report --eager lowered

bench: install
	mkdir -p bench-results
	for b in benchmarks/*.py; do $(PY) $$b --out bench-results/$$(basename $$b .py).json || exit 1; done

info: install
	$(PY) -m torchneuron info

install: $(STAMP)

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV) || python3 -m venv $(VENV)

$(VENV)/.deps-installed: requirements.txt | $(VENV)/bin/python
	$(PIP) install -q --upgrade pip
	$(PIP) install -q -r requirements.txt
	touch $@

$(STAMP): $(VENV)/.deps-installed setup.py pyproject.toml $(CSRC)
	# no autoload while building: a stale _C that fails to load must not block its own rebuild
	TORCH_DEVICE_BACKEND_AUTOLOAD=0 $(PIP) install -q --no-build-isolation --no-deps -e .
	touch $@

clean:
	rm -rf build *.egg-info torchneuron/_C*.so
