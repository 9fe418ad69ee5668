"""Personas tasks: register the check run, hand the planned answers to the engine, gate, publish (the set is
chosen by tasks/personas/build_sets.py).

The items are asked as tasks/personas/asking.py says; the scores and the fidelity verdicts are the warehouse's
views (sql/personas/views), read back here for the summary.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

import polars as pl
from prefect import task
from prefect.cache_policies import NO_CACHE

from peras.bfi2 import Bfi2Item, items_fingerprint, load_items
from peras.errors import UsageError
from peras.prompting import Personality, load_prompt
from peras.settings import Settings
from peras.sql import query_rows, render_sql, run_statements
from peras.warehouse import connect, open_migrated
from tasks.engine.endpoint import Endpoint
from tasks.engine.running import HeldItems, StageOutcome
from tasks.engine.runs import Gate, RunClaim
from tasks.engine.spec import RunIdentity
from tasks.engine.stage import declaration
from tasks.engine.tasks import run_counts
from tasks.personas.asking import CheckConfig, ItemAsk, PersonasStage
from tasks.personas.prompt import prompt_file


def check_config(endpoint: Endpoint, n_samples: int, temperature: float, seed: int) -> CheckConfig:
    """The prompt's greedy sampling for sample 0, k samples at `temperature`; the embedded model also a cap."""
    if n_samples < 2:
        raise UsageError("--samples must be at least 2: a score's spread needs two sampled answers")
    sampling = load_prompt(prompt_file("bfi2_item")).sampling
    cap = declaration("personas").token_cap(endpoint.backend, embedded=endpoint.is_embedded)
    return CheckConfig(endpoint.model, endpoint.backend, sampling, n_samples, temperature, seed, cap)


def plan_answers(personalities: list[Personality], items: list[Bfi2Item], n_samples: int) -> list[ItemAsk]:
    """Every personality x item x sample (0 greedy, 1..k sampled), a personality's answers together."""
    return [
        ItemAsk(p.code, item.item_id, sample)
        for p in personalities
        for sample in range(n_samples + 1)
        for item in items
    ]


def run_parameters(config: CheckConfig) -> dict[str, Any]:
    """What fixes a check run besides set and model: request parameters, prompt and items."""
    template = load_prompt(prompt_file("bfi2_item")).template
    return {
        "greedy_params": config.params(0),
        "sampled_params": config.params(1) | {"seed": config.seed},
        "prompt_sha256": hashlib.sha256(template.encode("utf-8")).hexdigest(),
        "items_sha256": items_fingerprint(),
    }


@dataclass
class CheckRecipe(HeldItems):
    """The personas check's part of the one flow body (tasks/engine/running.py)."""

    personality_set: str
    samples: int
    temperature: float
    seed: int
    run_name: str | None
    personalities: list[Personality]
    items: list[Bfi2Item]
    planned: list[ItemAsk]
    gate: Gate = Gate("scores not published (the answers are kept)")

    def configure(self, endpoint: Endpoint) -> CheckConfig:
        """Greedy sample 0, k samples at the temperature; the embedded model also a cap."""
        return check_config(endpoint, self.samples, self.temperature, self.seed)

    def claim(self, config: CheckConfig) -> RunClaim:
        """A check run is fixed by its set, model, samples, temperature, seed, prompt and items."""
        values = {
            "personality_set": self.personality_set,
            "n_samples": config.n_samples,
            "sample_temperature": config.sample_temperature,
            "seed": config.seed,
            "scope": {"personalities": [p.code for p in self.personalities]},
        }
        parts = {"set": self.personality_set, "model": config.model}
        name = self.run_name or declaration("personas").default_run_name(**parts)
        return RunClaim(declaration("personas"), name, values, run_parameters(config))

    def stage(self, config: CheckConfig) -> PersonasStage:
        """Items to requests, answers to answer rows."""
        items = {item.item_id: item for item in self.items}
        return PersonasStage(config, {p.code: p for p in self.personalities}, items)

    def prepare(self, settings: Settings, run: RunIdentity) -> None:
        """The BFI-2 items the answers refer to (bfi2_items), stored before asking."""
        with open_migrated(settings.warehouse) as con:
            con.register("staged_items", pl.DataFrame([vars_of(item) for item in load_items()]).to_arrow())
            run_statements(con, render_sql("engine/upsert_changed", ITEM_ROWS))


# The BFI-2 items as sql/engine/upsert_changed.sql stores them (a changed text replaces the row).
ITEM_ROWS = {
    "target": "bfi2_items",
    "staged": "staged_items",
    "key": "item_id",
    "columns": ["domain_code", "domain", "facet", "keyed", "item"],
}


def vars_of(item: Bfi2Item) -> dict[str, Any]:
    """An item as a row of bfi2_items."""
    return {f: getattr(item, f) for f in ("item_id", "domain_code", "domain", "facet", "keyed", "item")}


@task(cache_policy=NO_CACHE)
def load_fidelity(settings: Settings, run_name: str) -> dict[str, list[dict[str, Any]]]:
    """The run's domain matrix and pass/fail table, from the views."""
    with connect(settings.warehouse, read_only=True) as con:
        tables = {}
        for name in ("matrix", "fidelity"):
            tables[name] = query_rows(con, f"personas/select_{name}", {"run_name": run_name})
    return tables


def summarize(
    outcome: StageOutcome[CheckConfig], personality_set: str, n_answers: int, tables: dict[str, list[dict[str, Any]]]
) -> dict[str, Any]:
    """Counts and tables for the CLI."""
    return run_counts(outcome.run, outcome.endpoint, outcome.stats) | {
        "personality_set": personality_set,
        "n_samples": outcome.config.n_samples,
        "sample_temperature": outcome.config.sample_temperature,
        "n_answers": n_answers,
        "n_failures": outcome.n_failures,
        **tables,
    }
