"""The combined strategy (the default of `peras assess plan`): ranking-impact's spread times how unsure the run is,
with whichever signals the run holds; bench/bench_assess_budget.py measures it (docs/assess.md)."""

from __future__ import annotations

import polars as pl
import pytest

from cli.commands.assess import STRATEGY_NAMES, plan
from peras.errors import UsageError
from tasks.assess.plan import DEFAULT_STRATEGY, STRATEGIES, ranked, signals_in
from tasks.assess.tasks import check_signal
from tests.test_assess_plan import POOL

pytestmark = pytest.mark.core
SPREAD = pl.Series([1.0, 1.0, 0.0, 2.0, 0.5])  # a, b, c, d, e


def order(pool: pl.DataFrame) -> list[str]:
    return ranked(pool, "combined", seed=42)["doc_id"].to_list()


def test_combined_weighs_the_spread_by_the_mean_of_unconfidence_and_half_the_entropy():
    # doubt: a (0.10 + 0)/2, b (0.80 + 0.50)/2, c (1 + 0.75)/2, d (0.40 + 0)/2, e (0.80 + 0)/2; score: spread x
    # (0.1 + doubt): a 0.15, b 0.75, c 0 (no system ranks it), d 0.60, e 0.25
    pool = POOL.with_columns(rank_spread=SPREAD)
    assert signals_in(pool) == ["low-confidence", "disagreement", "ranking-impact"]
    assert order(pool) == ["b", "d", "e", "a", "c"]
    assert ranked(pool, "combined", 42)["pick_score"].to_list() == pytest.approx([0.75, 0.6, 0.25, 0.15, 0.0])


def test_combined_without_run_files_is_the_doubt_and_without_doubt_the_spread():
    assert order(POOL.with_columns(rank_spread=pl.lit(0.0))) == ["c", "b", "e", "d", "a"]  # 0.875 .. 0.05
    certain = POOL.with_columns(rank_spread=SPREAD, mean_confidence=pl.lit(None, pl.Float64), label_entropy=0.0)
    assert signals_in(certain) == ["ranking-impact"]
    assert order(certain) == ranked(certain, "ranking-impact", 42)["doc_id"].to_list()
    assert order(certain)[0] == "d" and order(certain)[-1] == "c"


def test_combined_with_no_signal_is_refused_rather_than_drawn_at_random():
    nothing = POOL.with_columns(rank_spread=pl.lit(0.0), mean_confidence=pl.lit(None, pl.Float64), label_entropy=0.0)
    with pytest.raises(UsageError, match=r"^judge run 'r' has no confidences and one personality, and no --run-file"):
        check_signal("r", "combined", nothing, 1)


def test_the_command_offers_every_strategy_and_defaults_to_the_combined_one():
    assert list(STRATEGIES) == STRATEGY_NAMES and DEFAULT_STRATEGY == "combined"
    strategy = next(p for p in plan.params if p.name == "strategy")
    assert strategy.default == DEFAULT_STRATEGY
