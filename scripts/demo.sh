#!/usr/bin/env bash
# Set up (if needed) and run the main job on the embedded defaults: the shipped sample collection judged by
# the local CPU model under all eleven personalities, with and without CoT, then metrics, classifier, report.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/peras demo "$@"
