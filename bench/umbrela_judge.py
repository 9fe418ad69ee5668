"""UMBRELA itself judging a pairs file: the peer of a small `peras judge` run (bench/bench_small_run.py --umbrela).

Runs under UMBRELA's own interpreter (a virtual environment made by bench/setup_umbrela.sh, umbrela 0.0.7 from PyPI),
never PERAS's: it imports nothing of PERAS. It does what a user of UMBRELA's GPT judge does: groups the pairs by
query into UMBRELA's request dictionaries, makes `GPTJudge(qrel="dl19-passage", few_shot_count=0)` and calls
`judge()` per query (UMBRELA asks one request at a time, with its own prompt, and parses the answers itself).
Zero-shot because UMBRELA's few-shot examples come from pyserini downloading qrels and an index, which needs the
internet. Imports, start and exit count, as they do for a user's command.

    OPENAI_BASE_URL=http://127.0.0.1:PORT/v1 DEPLOYMENT_NAME=fake-model <umbrela-venv>/bin/python \\
        bench/umbrela_judge.py pairs.jsonl

Environment: UMBRELA reads OPEN_AI_API_KEY, AZURE_OPENAI_API_VERSION and AZURE_OPENAI_API_BASE (empty: the plain
OpenAI client) and DEPLOYMENT_NAME (the model of every request); the OpenAI SDK reads OPENAI_BASE_URL. Two more
only because of what UMBRELA's dependencies do on import (set here unless given): pyserini builds an OpenAI client
at import, which openai >= 2 refuses without a key (OPENAI_API_KEY), and starts a JVM whose Anserini classes need
Java 21 or later (JAVA_HOME; bench/setup_umbrela.sh says which JDK it found).

Prints the seconds spent importing and judging, then `judged N labels (R unreadable)` last, as bench/peer_loops.py does.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from collections import defaultdict

started = time.perf_counter()
os.environ.setdefault("DEPLOYMENT_NAME", "fake-model")
os.environ.setdefault("OPEN_AI_API_KEY", "unused")
os.environ.setdefault("AZURE_OPENAI_API_VERSION", "")
os.environ.setdefault("AZURE_OPENAI_API_BASE", "")
os.environ.setdefault("OPENAI_API_KEY", "unused")
if "OPENAI_BASE_URL" not in os.environ:
    sys.exit("set OPENAI_BASE_URL to the server's /v1 URL")

from umbrela.gpt_judge import GPTJudge  # noqa: E402  (pyserini's JVM, torch, transformers: UMBRELA's start)
from umbrela.utils.common_utils import parse_fewshot_response  # noqa: E402

imported = time.perf_counter()


def requests_by_query(path: str) -> list[dict[str, object]]:
    """UMBRELA's request dictionaries, one per query in first-seen order (ids made up: UMBRELA only passes them)."""
    passages: dict[str, list[str]] = defaultdict(list)
    with open(path, encoding="utf-8") as lines:
        for line in lines:
            if line.strip():
                pair = json.loads(line)
                passages[pair["query"]].append(pair["passage"])
    return [
        {
            "query": {"text": query, "qid": f"q{n}"},
            "candidates": [{"doc": {"segment": text}, "docid": f"q{n}-d{i}"} for i, text in enumerate(texts)],
        }
        for n, (query, texts) in enumerate(passages.items())
    ]


def main() -> None:
    judge = GPTJudge(qrel="dl19-passage", few_shot_count=0, engine=os.environ["DEPLOYMENT_NAME"])
    judgments: list[dict[str, object]] = []
    for request in requests_by_query(sys.argv[1]):
        judgments.extend(judge.judge(request))
    judged = time.perf_counter()
    # UMBRELA reads an unreadable answer as label 0 (and prints a line): count those with its own parser.
    with open(os.devnull, "w", encoding="utf-8") as quiet, contextlib.redirect_stdout(quiet):
        readable = sum(parse_fewshot_response(str(j["predition"]), "", "")[1] for j in judgments)
    print(f"import {imported - started:.2f} s, judging {judged - imported:.2f} s")
    print(f"judged {len(judgments)} labels ({len(judgments) - readable} unreadable)", flush=True)  # last, as the peers


if __name__ == "__main__":
    main()
