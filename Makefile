# Two entry points a new user needs: `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: test demo bench check clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	touch $(STAMP)

test: $(STAMP)
	$(PY) -m pytest -q $(PYTEST_ARGS)

demo: $(STAMP)
	$(PY) hack/demo.py

bench: $(STAMP)
	$(PY) -m hack.bench

check: $(STAMP)
	$(VENV)/bin/lint-imports
	$(PY) -m mypy adapter controller kubecommon
	$(PY) -m pytest -q

clean:
	rm -rf $(VENV) build *.egg-info
