# Two entry points a new user needs: `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
# hack/setup.sh creates the venv and installs the tools named when missing (helm into .tools).
SETUP := PYTHON=$(PYTHON) VENV=$(VENV) hack/setup.sh
export PATH := $(CURDIR)/.tools/node_modules/.bin:$(PATH)

# The tests mostly wait on real processes, so test files run side by side on PYTEST_WORKERS processes
# (pytest-xdist), handed out in collection order (integration first): xdist's default, most tests per
# file first, left the longest files (few tests each) for the end. PYTEST_WORKERS=0: one process (--pdb).
PYTEST_WORKERS ?= 2
PYTEST_PARALLEL := -n $(PYTEST_WORKERS) --dist loadfile --no-loadscope-reorder

.PHONY: test demo bench lint check clean

test:
	@$(SETUP) prometheus helm kubectl
	$(PY) -m pytest -q $(PYTEST_PARALLEL) $(PYTEST_ARGS)

demo:
	@$(SETUP) prometheus kubectl
	$(PY) hack/demo.py $(DEMO_ARGS)

bench:
	@$(SETUP) prometheus kubectl
	$(PY) -m hack.bench

# The everyday checks (configured in pyproject.toml and .importlinter): lint, types, import
# contracts, duplicate code; `make check` adds the whole test suite.
lint:
	@$(SETUP)
	$(VENV)/bin/ruff check .
	$(PY) -m mypy adapter controller kubecommon hack
	$(VENV)/bin/lint-imports
	$(PY) -m pylint adapter controller kubecommon hack

check: lint
	@$(SETUP) prometheus helm kubectl
	$(PY) -m pytest -q $(PYTEST_PARALLEL) $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) build *.egg-info
