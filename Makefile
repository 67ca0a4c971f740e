# Two entry points a new user needs: `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
# hack/setup.sh creates the venv and installs the tools named when missing (helm into .tools).
SETUP := PYTHON=$(PYTHON) VENV=$(VENV) hack/setup.sh
export PATH := $(CURDIR)/.tools/node_modules/.bin:$(PATH)

.PHONY: test demo bench check clean

test:
	@$(SETUP) prometheus helm kubectl
	$(PY) -m pytest -q $(PYTEST_ARGS)

demo:
	@$(SETUP) prometheus kubectl
	$(PY) hack/demo.py $(DEMO_ARGS)

bench:
	@$(SETUP) prometheus kubectl
	$(PY) -m hack.bench

check:
	@$(SETUP) prometheus helm kubectl
	$(VENV)/bin/lint-imports
	$(PY) -m mypy adapter controller kubecommon
	$(PY) -m pytest -q

clean:
	rm -rf $(VENV) build *.egg-info
