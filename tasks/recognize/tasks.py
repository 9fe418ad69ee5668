"""Recognize tasks: the judge run's CoT answers, the documented sample, the two recipes of the one flow body (states
then traits), and the measures read back for the summary.

The sample: for each personality, its with-CoT answers ordered by sha256("<seed>|<query_id>|<doc_id>"), the first
`sample_size` kept - the same pairs under every personality that has them, so that personas (and default, the
control) are read on the same passages; a personality with fewer answers keeps them all.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import polars as pl
from prefect import task
from prefect.cache_policies import NO_CACHE

from peras.errors import UsageError
from peras.settings import Settings
from peras.sql import query_rows, run_sql, run_statements
from peras.warehouse import connect, open_current, open_migrated
from peras.warehouse_views import apply_views_needing
from tasks.engine.endpoint import Endpoint
from tasks.engine.running import HeldItems, StageOutcome
from tasks.engine.runs import Gate, RunClaim
from tasks.engine.spec import RunIdentity
from tasks.engine.stage import declaration
from tasks.engine.tasks import run_counts
from tasks.recognize.asking import (
    CotAnswer,
    EvidenceItem,
    EvidenceStage,
    RecognizeConfig,
    StateItem,
    StateStage,
    TraitItem,
    TraitStage,
)
from tasks.recognize.check_set import evidence_pair, expected_frame
from tasks.recognize.prompt import (
    EVIDENCE_PROMPT,
    STATE_PROMPT,
    TRAIT_PROMPT,
    load_recognize_prompt,
    parse_dimension,
)
from tasks.shared.judge_runs import published_judge_run

ALL_DIMENSIONS = ("openness", "conscientiousness", "extraversion", "agreeableness", "neuroticism")
PARTS = {"recognize": STATE_PROMPT, "recognize_traits": TRAIT_PROMPT, "recognize_evidence": EVIDENCE_PROMPT}
STAGES: dict[str, type[StateStage | TraitStage | EvidenceStage]] = {
    "recognize": StateStage,
    "recognize_traits": TraitStage,
    "recognize_evidence": EvidenceStage,
}


def choose_dimensions(names: list[str] | None) -> list[str]:
    """The dimensions asked, in the Big-Five order (none given: all five); an unknown name is a UsageError."""
    try:
        chosen = {parse_dimension(name) for name in names or ALL_DIMENSIONS}
    except ValueError as exc:
        raise UsageError(f"{exc}; known: {', '.join(ALL_DIMENSIONS)} (or O, C, E, A, N)") from exc
    return [d for d in ALL_DIMENSIONS if d in chosen]


@task(cache_policy=NO_CACHE)
def load_cot_answers(settings: Settings, judge_run: str) -> list[CotAnswer]:
    """Every with-CoT answer of the published judge run whose label read; a run unknown, not published (its gate
    failed, or it is still running) or without CoT is a UsageError."""
    with connect(settings.warehouse, read_only=True) as con:
        found = run_sql(con, "recognize/select_judge_run", {"judge_run": judge_run}).fetchall()
        if not found:
            raise UsageError(f"no judge run {judge_run!r} (peras runs list --kind judge shows them)")
        published_judge_run(con, judge_run)  # what its gate refused is read by no stage
        if found[0][2] == 0:
            raise UsageError(f"judge run {judge_run!r} has no with-CoT judgments: judge with --cot with or both")
        rows = run_sql(con, "recognize/select_cot_answers", {"judge_run": judge_run}).fetchall()
    return [CotAnswer(*row) for row in rows]


def sample_answers(answers: list[CotAnswer], sample_size: int, seed: int) -> dict[str, list[CotAnswer]]:
    """Per personality, the first `sample_size` answers by sha256 of seed and pair (module doc), in that order."""
    by_personality: dict[str, list[CotAnswer]] = defaultdict(list)
    for answer in answers:
        by_personality[answer.personality].append(answer)

    def rank(answer: CotAnswer) -> str:
        return hashlib.sha256(f"{seed}|{answer.query_id}|{answer.doc_id}".encode()).hexdigest()

    return {p: sorted(found, key=rank)[:sample_size] for p, found in sorted(by_personality.items())}


def plan_states(sampled: dict[str, list[CotAnswer]], dimensions: list[str]) -> list[StateItem]:
    """Every sampled answer x dimension, a personality's items together."""
    return [StateItem(a, d) for answers in sampled.values() for a in answers for d in dimensions]


def plan_traits(sampled: dict[str, list[CotAnswer]], dimensions: list[str]) -> list[TraitItem]:
    """Every personality x dimension over its sampled answers."""
    return [TraitItem(p, d, tuple(answers)) for p, answers in sampled.items() for d in dimensions]


@task(cache_policy=NO_CACHE)
def plan_evidence(settings: Settings, run_id: str) -> list[EvidenceItem]:
    """The state run's check-set readings that read, each with the text's evidence and the recognizer's."""
    with connect(settings.warehouse, read_only=True) as con:
        found = run_sql(con, "recognize/select_check_readings", {"run_id": run_id}).fetchall()
    return [EvidenceItem(run_id, text_id, dim, *evidence_pair(text_id, analysis, cited))
            for text_id, dim, analysis, cited in found]  # fmt: skip


def recognize_config(endpoint: Endpoint, kind: str, prompt: str, seed: int) -> RecognizeConfig:
    """The prompt's greedy sampling with the run's seed; the embedded model also the declaration's cap."""
    cap = declaration(kind).token_cap(endpoint.backend, embedded=endpoint.is_embedded)
    return RecognizeConfig(endpoint.model, endpoint.backend, load_recognize_prompt(prompt).sampling, seed, cap)


@dataclass
class RecognizeRecipe(HeldItems):
    """One of the recognize stage's parts of the one flow body: states (EPR-S), traits (EPR-T), evidence scores."""

    kind: str  # 'recognize', 'recognize_traits' or 'recognize_evidence'
    judge_run: str
    sample_size: int
    seed: int
    run_name: str | None
    planned: list[StateItem] | list[TraitItem] | list[EvidenceItem]
    dimensions: list[str]
    gate: Gate = Gate("recognition not published (the answers are kept)")
    personalities: tuple[()] = ()  # the judge run recorded them

    @property
    def prompt(self) -> str:
        """The prompt file this part asks with."""
        return PARTS[self.kind]

    def configure(self, endpoint: Endpoint) -> RecognizeConfig:
        """Greedy with the run's seed, capped on the embedded model."""
        return recognize_config(endpoint, self.kind, self.prompt, self.seed)

    def claim(self, config: RecognizeConfig) -> RunClaim:
        """A run is fixed by its judge run, sample size, seed, recognizer model, prompt and request parameters."""
        stage = declaration(self.kind)
        name = self.run_name or stage.default_run_name(judge_run=self.judge_run, model=config.model)
        values = {
            "judge_run": self.judge_run,
            "sample_size": self.sample_size,
            "seed": self.seed,
            "scope": {"items": len(self.planned)},
        }
        params = {"request": config.params(), "prompt_sha256": load_recognize_prompt(self.prompt).fingerprint}
        return RunClaim(stage, name, values, params)

    def stage(self, config: RecognizeConfig) -> StateStage | TraitStage | EvidenceStage:
        """Items to requests, answers to rows."""
        return STAGES[self.kind](config)

    def planned_frame(self) -> pl.DataFrame:
        """The planned items' keys, for the gate."""
        names = [c.name for c in declaration(self.kind).keys]
        return pl.DataFrame(
            [dict(zip(names, item.key, strict=True)) for item in self.planned], schema=dict.fromkeys(names, pl.Utf8)
        )

    def prepare(self, settings: Settings, run: RunIdentity) -> None:
        """Every part's tables with their measure views (sql/recognize/views), the check set's expectations (states)."""
        with open_migrated(settings.warehouse) as con:
            for kind in PARTS:
                run_statements(con, declaration(kind).sql("create_tables"))
                apply_views_needing(con, declaration(kind).tables)
            if self.kind == "recognize":
                con.register("staged_check_texts", expected_frame(self.dimensions).to_arrow())
                run_sql(con, "recognize/replace_check_texts", {"run_id": run.run_id})


def recognizer_settings(settings: Settings, model: str | None, base_url: str | None) -> Settings:
    """The settings the recognizer is asked with: the judge's endpoint unless another model or URL is given."""
    update: dict[str, Any] = {}
    if model:
        update["model"] = model
    if base_url:
        update["base_urls"] = [base_url]
    return settings.model_copy(update=update) if update else settings


@task(cache_policy=NO_CACHE)
def load_measures(settings: Settings, run_name: str) -> dict[str, list[dict[str, Any]]]:
    """The run's check-set figures, shares, own-dimension verdicts and accuracy, from the measure views."""
    with open_current(settings.warehouse) as con:
        tables = {}
        for name in ("check_scores", "evidence_quality", "shares", "verdicts", "accuracy"):
            tables[name] = query_rows(con, f"recognize/select_{name}", {"run_name": run_name})
    return tables


def summarize(
    states: StageOutcome[RecognizeConfig],
    traits: StageOutcome[RecognizeConfig] | None,
    n_states: int,
    n_traits: int,
    tables: dict[str, list[dict[str, Any]]],
) -> dict[str, Any]:
    """Counts and tables for the CLI."""
    summary = run_counts(states.run, states.endpoint, states.stats) | {
        "n_states": n_states,
        "n_failures": states.n_failures,
        "n_traits": n_traits,
        **tables,
    }
    if traits is not None:
        summary |= {"traits_run_name": traits.run.run_name, "n_trait_failures": traits.n_failures,
                    "n_trait_sent": traits.stats["n_sent"]}  # fmt: skip
    return summary
