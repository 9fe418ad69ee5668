#!/usr/bin/env bash
# Set up (if needed) and run every check: ruff (lint and format), mypy, then the whole test suite in two processes
# (pytest-xdist, one test file at a time per process: tests mostly wait on servers and subprocesses), its 20 slowest
# tests listed at the end, to keep CI time in view; the files that take minutes go out first (tests/conftest.py
# LONG_FILES), in collection order. `bash scripts/test.sh -n 0` runs it in one process.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/ruff check peras flows tasks tests bench cli support
.venv/bin/ruff format --check peras flows tasks tests bench cli support
.venv/bin/mypy
.venv/bin/pytest -q -p no:cacheprovider --durations=20 -n 2 --dist loadfile --no-loadscope-reorder "$@"
