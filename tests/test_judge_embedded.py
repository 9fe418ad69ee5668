"""A few sample pairs judged end to end by the real embedded model (llama.cpp server on the CPU)."""

from __future__ import annotations

import duckdb
import pytest

from flows.ingest import ingest
from flows.judge import judge

pytestmark = pytest.mark.model


def test_embedded_model_judges_sample_pairs(settings):
    ingest(preset="sample", settings=settings)
    result = judge(
        collection="sample",
        personalities=["default", "HN"],
        limit_pairs=2,
        confidence_methods=["verbalized", "logprob"],
        settings=settings,
    )
    assert (result["backend"], result["n_planned"], result["n_judged_now"]) == ("llama.cpp", 16, 16)
    con = duckdb.connect(str(settings.warehouse), read_only=True)
    try:
        got = con.execute("""
            select count(*), count(*) filter (where status = 'ok'), min(label) >= 0 and max(label) <= 3,
                   min(confidence) >= 0 and max(confidence) <= 100, count(distinct personality), count(distinct cot)
            from judgments""").fetchone()
        tokens = con.execute("select min(prompt_tokens) > 100, sum(cached_tokens) > 0 from llm_requests").fetchone()
    finally:
        con.close()
    assert got == (16, 16, True, True, 2, 2)
    # Requests are ordered so prompts sharing a prefix go together: llama.cpp reports reused prompt tokens.
    assert tokens == (True, True)
