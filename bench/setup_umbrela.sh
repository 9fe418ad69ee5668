#!/usr/bin/env bash
# UMBRELA (castorini's `umbrela` 0.0.7, PyPI) in its own virtual environment, for bench/bench_small_run.py --umbrela.
#
#   bash bench/setup_umbrela.sh [DIR]    # default /tmp/umbrela-venv; ~2.5 min, ~7 GB (torch's CUDA wheels)
#
# `pip install umbrela==0.0.7` alone installs but cannot be imported (measured 2026-11-29); three pins make it import,
# none of UMBRELA's code is changed:
# - setuptools < 81: torch pulls setuptools 84, which has no pkg_resources, and umbrela imports pkg_resources;
# - pyserini 0.39.0: umbrela imports pyserini.index.lucene.IndexReader, renamed LuceneIndexReader in pyserini 0.40;
# - faiss-cpu: pyserini 0.39 imports faiss without declaring it.
# At run time pyserini starts a JVM whose Anserini classes need Java 21 or later: this script names a JDK it finds
# (bench_small_run.py looks for one the same way, or takes --java-home).
set -euo pipefail
dir="${1:-/tmp/umbrela-venv}"
"${PYTHON:-python3}" -m venv "$dir"  # any Python 3.10 or later
"$dir/bin/pip" install --quiet "umbrela==0.0.7"
"$dir/bin/pip" install --quiet "setuptools>=77.0.3,<81" "pyserini==0.39.0" faiss-cpu
for jdk in /usr/lib/jvm/*; do
    release="$jdk/release"
    [ -f "$release" ] || continue
    major="$(sed -n 's/^JAVA_VERSION="\([0-9]*\).*/\1/p' "$release")"
    if [ -n "$major" ] && [ "$major" -ge 21 ]; then java_home="$jdk"; break; fi
done
if [ -z "${java_home:-}" ]; then
    echo "no JDK 21 or later under /usr/lib/jvm: install one (e.g. apt install openjdk-21-jdk-headless) before running UMBRELA" >&2
    exit 1
fi
OPENAI_API_KEY=unused JAVA_HOME="$java_home" "$dir/bin/python" -c "from umbrela.gpt_judge import GPTJudge" >/dev/null
echo "UMBRELA ready: --umbrela $dir/bin/python (Java: $java_home)"
