"""Benchmark 3: what ordering requests by shared prefix saves on the embedded llama.cpp server.

The same 440 judgments as benchmark 1 (sample x 11 personalities, without CoT, verbalized confidence), sent by the
bare loop twice, each time to a freshly started server: in peras's order (personality, then pair: consecutive
prompts share the personality instruction and the rubric) and shuffled (seed 0). llama.cpp reports per response
how many prompt tokens it took from the slot's cache (`timings.cache_n`) and how many it had to evaluate
(`timings.prompt_n`); the saving is in evaluated tokens, prompt-processing time and wall time.

    .venv/bin/python bench/bench_prefix.py [--pairs N]     # writes bench/results/prefix-<date>.json
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_ceiling import ceiling, sample_jobs, sample_warehouse  # noqa: E402
from bench.common import finish, headline, machine, sample_pairs_argument, versions  # noqa: E402

SHUFFLE_SEED = 0


def run(n_pairs: int = 40, ordered: dict[str, Any] | None = None, warehouse: Path | None = None) -> dict[str, Any]:
    """Shuffled against ordered (given, e.g. benchmark 1's ceiling run, or measured here)."""
    if warehouse is None:
        with sample_warehouse() as (fresh, _env):
            return run(n_pairs, ordered, fresh)
    if ordered is None:
        print(f"prefix reuse: 11 x {n_pairs} judgments in peras's order ...", flush=True)
        ordered = ceiling(sample_jobs(warehouse, n_pairs)).as_dict()
    print(f"prefix reuse: the same judgments shuffled (seed {SHUFFLE_SEED}) ...", flush=True)
    shuffled = ceiling(sample_jobs(warehouse, n_pairs, SHUFFLE_SEED)).as_dict()
    saved_tokens = 1 - ordered["prompt_tokens_processed"] / shuffled["prompt_tokens_processed"]
    saved_prompt_s = 1 - ordered["prompt_s"] / shuffled["prompt_s"]
    speedup = shuffled["wall_s"] / ordered["wall_s"]
    return {
        "versions": versions(),
        "workload": {
            "collection": "sample",
            "pairs": n_pairs,
            "personalities": 11,
            "cot": "without",
            "shuffle_seed": SHUFFLE_SEED,
        },
        "ordered": ordered,
        "shuffled": shuffled,
        "prompt_tokens_saved_share": round(saved_tokens, 3),
        "prompt_time_saved_share": round(saved_prompt_s, 3),
        "wall_speedup": round(speedup, 3),
        "headline": [
            headline("prefix order: prompt tokens evaluated saved", 100 * saved_tokens, "%", "report", True),
            headline("prefix order: wall time, shuffled / ordered", speedup, "x", "report", True),
        ],
    }


def main() -> None:
    """Run, print the table, write the JSON result."""
    pairs = sample_pairs_argument(__doc__.splitlines()[0])
    started = machine()
    result = run(pairs)
    for name in ("ordered", "shuffled"):
        r = result[name]
        print(
            f"{name:9s} wall {r['wall_s']:7.1f} s  evaluated {r['prompt_tokens_processed']:7,} tokens "
            f"({r['prompt_s']:.1f} s)  cached {r['prompt_tokens_cached']:7,}"
        )
    finish("prefix", result, started)


if __name__ == "__main__":
    main()
