"""The main job's flow end to end (against the scripted server here; the README command uses the real model)."""

from __future__ import annotations

import pytest

from flows.demo import demo
from support.fake_openai import FakeOpenAI, instant

pytestmark = pytest.mark.integration


def test_demo_chains_ingest_judge_metrics_classify_report(settings):
    with FakeOpenAI(instant) as server:
        settings.base_urls = [server.base_url]
        settings.model = "fake-model"
        result = demo(trials=3, settings=settings)
    assert result["ingested"]["status"] == "published"
    assert (result["judged"]["n_planned"], result["judged"]["n_failures"]) == (880, 0)
    headline = result["headline"]
    assert headline.height == 22
    assert headline["personality"].to_list()[:3] == ["default", "HA", "LA"]
    assert headline["n_scored"].to_list() == [40] * 22
    assert result["classify"].n_pairs == 40 and result["classify"].n_trials == 3
    assert result["report"].path.is_file() and result["report"].n_figures > 0
