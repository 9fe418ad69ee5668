"""A CI-sized chaos run of the judge flow (bench/chaos_judge.py runs 20-40 rounds on demand).

Three fixed rounds (the third in batch mode against the scripted Batch API, its batches failing and expiring),
each: `peras ingest sample` into two warehouses in one directory; three `peras judge` processes at once against a
fault-injecting fake server (500, 429 with Retry-After, 400, dropped connections, unreadable and slow answers): run
"chaos" and run "chaos-twin" of one model and plan on warehouse a (one answer cache, racing), run "chaos" on
warehouse b (same name, other plan); each killed with SIGKILL and re-run until it ends. Then the guarantees, checked
in SQL on both warehouses (see bench/chaos_judge.py for each check).
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import pytest

from bench.chaos_judge import NOT_FAULTS, Kill, RoundPlan, RunSpec, run_round
from peras.llm.parsing import parse_confidence, parse_label
from support.fake_batch import BatchChaos
from support.fake_openai import Chaos, chaotic

LABEL = [{"role": "user", "content": "How relevant is this passage to the query?"}]
CONFIDENCE = [{"role": "user", "content": "Your given relevance score is 2, please give a confidence score for this"}]
FAULTY = {"fail_500": 0.04, "fail_429": 0.04, "retry_after_s": 0.1, "fail_400": 0.02, "drop": 0.01, "slow": 0.02}
METHODS = ("verbalized", "logprob", "sampling")
ENV = {"PERAS_CONCURRENCY": "4", "PERAS_REQUEST_TIMEOUT_S": "1.0", "PERAS_MAX_PARSE_FAILURE_SHARE": "0.5"}


def spec(key: str, personalities: tuple[str, ...], limit: int, kills: tuple[Kill, ...], **plan) -> RunSpec:
    warehouse, run_name = key.split(":")
    settings = {"cot": "both", "methods": ("verbalized",), "n_samples": 3, "chunk_size": 16} | plan
    return RunSpec(key, warehouse, run_name, personalities, limit_pairs=limit, kills=kills, **settings)


ROUNDS = [
    # random answers: the twins get different answers to one request and race to store theirs; the CoT and
    # no-CoT items of a pair share their confidence request
    RoundPlan(
        1,
        14,
        Chaos(random_answers=True, garbage=0.3, slow_s=1.5, **FAULTY),
        ENV,
        (
            spec("a:chaos", ("HA", "LN"), 20, (Kill(40.0, after_lines=25),)),
            spec("a:chaos-twin", ("HA", "LN"), 20, (Kill(7.0, after_lines=30),)),
            spec(
                "b:chaos",
                ("LA", "HC", "default"),
                12,
                (Kill(5.0, after_lines=8), Kill(40.0, after_lines=10)),
                cot="without",
            ),
        ),
    ),
    # stable answers, the three confidence methods (sampling: 3 votes), a shard per 8 judgments
    RoundPlan(
        2,
        14,
        Chaos(garbage=0.5, slow_s=0.3, **FAULTY | {"fail_400": 0.03}),
        ENV | {"PERAS_REQUEST_TIMEOUT_S": "30"},
        (
            spec("a:chaos", ("HO",), 20, (Kill(9.0, after_lines=20),), methods=METHODS, cot="without", chunk_size=8),
            spec("a:chaos-twin", ("HO",), 20, (Kill(40.0, after_lines=40),), methods=METHODS, cot="without"),
            spec("b:chaos", ("LO",), 20, (), methods=METHODS, cot="with"),
        ),
    ),
    # batch mode (--mode batch --wait) against the scripted Batch API: lines failing (500, 429, 400) or unreadable,
    # whole batches failed or expired half answered, lines cut short in the output file; a batch stays live two
    # looks, so the kills land between a submit, the provider's completion and the collect; the twins share batches
    RoundPlan(
        3,
        14,
        Chaos(garbage=0.2, fail_500=0.05, fail_429=0.05, fail_400=0.02, retry_after_s=0.1),
        ENV | {"PERAS_BATCH_POLL_S": "0.2", "PERAS_REQUEST_TIMEOUT_S": "30"},
        (
            spec("a:chaos", ("HA",), 20, (Kill(6.0),), batch=True),
            spec("a:chaos-twin", ("HA",), 20, (Kill(12.0),), batch=True),
            spec("b:chaos", ("LA",), 12, (Kill(3.0), Kill(9.0)), cot="without", batch=True),
        ),
        BatchChaos(fail_batch=0.2, expire_batch=0.2, garbled=0.03, looks=2),
    ),
]


@pytest.mark.core
def test_chaotic_server_injects_every_fault_and_answers_at_random() -> None:
    counts: Counter[str] = Counter()
    respond = chaotic(Chaos(random_answers=True, garbage=0.2, **FAULTY), seed=0, counts=counts)
    replies = [respond({"messages": LABEL}) for _ in range(2000)]
    assert {kind for kind in counts if counts[kind]} == {
        "requests", "answered", "http_500", "http_429", "http_400", "dropped", "garbage", "slow",
    }  # fmt: skip
    assert counts["requests"] == 2000
    faults = [r for r in replies if not hasattr(r, "texts")]
    assert {(f.status, f.retry_after) for f in faults if not f.drop} == {(500, None), (429, 0.1), (400, None)}
    texts = [r.texts for r in replies if hasattr(r, "texts")]
    assert {t for t in texts if parse_label(t, False).ok} == {"0", "1", "2", "3"}  # one prompt, every label
    unreadable = [t for t in texts if t not in ("0", "1", "2", "3")]
    assert unreadable and not any(parse_label(t, True).ok or parse_confidence(t).ok for t in unreadable)
    confidences = [respond({"messages": CONFIDENCE}) for _ in range(50)]
    assert len({r.texts for r in confidences if hasattr(r, "texts") and parse_confidence(r.texts).ok}) > 10


@pytest.mark.integration
@pytest.mark.parametrize(
    "plan",
    [
        pytest.param(ROUNDS[0], id="random-answers"),
        pytest.param(ROUNDS[1], id="stable-answers"),
        pytest.param(ROUNDS[2], id="batch-mode"),
    ],
)
def test_chaos_round_keeps_every_guarantee(plan: RoundPlan, tmp_path: Path) -> None:
    result = run_round(plan, tmp_path, dict(os.environ), hang_s=60.0, final_attempts=3)
    attempts = [a for run in result["runs"] for a in run["attempts"]]
    # the chaos happened: processes killed, faults injected (every kill point also fires on journaled lines, so a
    # quiet machine that ends a run before its kill time still kills it)
    assert sum(a["killed_at_s"] is not None for a in attempts) >= 2
    assert sum(v for k, v in result["server"].items() if k not in NOT_FAULTS) > 0
    failed = [
        f"warehouse {warehouse}: {c['check']} ({c['n_problems']} problems)"
        + "".join(f"\n    {row}" for row in c["problems"] + c.get("evidence", []))
        for warehouse, group in result["checks"].items()
        for c in group
        if not c["ok"]
    ]
    failed += [f"{run['key']} hung: stacks in {result['directory']}/logs" for run in result["runs"]
               for a in run["attempts"] if a["hung"]]  # fmt: skip
    if failed:
        pytest.fail(f"round {plan.index} ({result['directory']}):\n" + "\n".join(failed), pytrace=False)
