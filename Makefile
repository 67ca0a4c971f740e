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
# Four, on 2 cores: a run used 0.7 of a core on average with two workers (8m24s of tests, 6.5 CPU
# minutes); with four it takes 5m02s-5m21s (three fresh-clone runs, no failure), the load peaking
# at 2.3.
PYTEST_WORKERS ?= 4
PYTEST_PARALLEL := -n $(PYTEST_WORKERS) --dist loadfile --no-loadscope-reorder

# One version: pyproject.toml's; `make dist` stamps it on the chart package (tests/unit/test_release.py
# keeps Chart.yaml's version and appVersion equal to it).
VERSION = $(shell sed -n 's/^version = "\(.*\)"/\1/p' pyproject.toml)
DIST ?= dist

.PHONY: test demo bench lint docs docs-ref check clean dist e2e

test:
	@$(SETUP) prometheus victoria-metrics helm kubectl
	$(PY) -m pytest -q $(PYTEST_PARALLEL) $(PYTEST_ARGS)

# BACKEND=victoriametrics: the whole demo (adapter and controller) reads VictoriaMetrics instead.
BACKEND ?= prometheus
demo:
	@$(SETUP) $(if $(filter victoriametrics,$(BACKEND)),victoria-metrics,prometheus) kubectl
	$(PY) hack/demo.py --backend $(BACKEND) $(DEMO_ARGS)

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
	$(VENV)/bin/hadolint Dockerfile
	$(VENV)/bin/actionlint
	$(PY) -m hack.docs_ref --check
	$(VENV)/bin/mkdocs build --strict --quiet --site-dir build/site

# The docs site (mkdocs.yml, docs/): `make docs` builds it into build/site (open build/site/index.html).
docs:
	@$(SETUP)
	$(VENV)/bin/mkdocs build --strict --site-dir build/site

# Regenerates the reference pages (chart values, both binaries' flags, PromAutoscaler fields) from
# their sources; `make lint` and tests/unit/hack/docs_ref/ fail while one is stale.
docs-ref:
	@$(SETUP)
	$(PY) -m hack.docs_ref

# The tests through `test` itself, so `check` asks set-up for the same tools (CI runs `make check`).
check: lint test

# The end-to-end suite (tests/integration/e2e): against the API-server stand-in it starts, or against the
# cluster of KUBECONFIG=... (docs/release.md says what that cluster must run).
# Only a KUBECONFIG given on make's command line selects a cluster; one exported in the shell does not.
E2E_KUBECONFIG := $(if $(filter command line,$(origin KUBECONFIG)),$(abspath $(KUBECONFIG)))
e2e:
	@$(SETUP) kubectl $(if $(E2E_KUBECONFIG),,prometheus)
	E2E_KUBECONFIG=$(E2E_KUBECONFIG) $(PY) -m pytest -q tests/integration/e2e $(PYTEST_ARGS)

# Release artefacts in $(DIST)/: wheel and sdist (python -m build), the chart package (helm package), all
# at pyproject's version (docs/release.md).
dist:
	@$(SETUP) helm
	rm -rf $(DIST)
	$(PY) -m build --outdir $(DIST) .
	helm package charts/prom-autoscaler --destination $(DIST) --version $(VERSION) --app-version $(VERSION)
	@ls -1 $(DIST)

clean:
	rm -rf $(VENV) build $(DIST) *.egg-info
