"""The study's grid: which judge, classifier and priming runs, under which names, on which endpoints.

Experiment 1 judges LLMJudge, DL19 and DL20, Experiment 2 DL21 (its classifier per model), threshold priming runs
on DL19. Each collection is judged on its subset `published` where ingest made one, else `balanced`. Run names are
fixed by preset and collection, so running the study again resumes the same runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from peras.errors import UsageError
from peras.models import ModelPreset, ModelPresets
from peras.settings import Settings
from peras.sql import run_sql
from peras.warehouse import open_migrated
from tasks.study.endpoints import load_endpoints, model_settings

EXPERIMENT_1 = ("llmjudge", "dl19", "dl20")
EXPERIMENT_2 = ("dl21",)
COLLECTIONS = EXPERIMENT_1 + EXPERIMENT_2
CLASSIFIER_COLLECTION = "dl21"
PRIMING_COLLECTION = "dl19"
SUBSET_PREFERENCE = ("published", "balanced")


@dataclass(frozen=True)
class JudgeRun:
    """One judge run of the grid: a preset on a collection's subset, under every chosen personality and setting."""

    preset: ModelPreset
    settings: Settings
    collection: str
    subset: str
    cot: list[bool]

    @property
    def run_name(self) -> str:
        """e.g. dl19-balanced-llama-3-8b."""
        return f"{self.collection}-{self.subset}-{self.preset.name}"


@dataclass(frozen=True)
class PrimingRun:
    """One preset's threshold-priming run on DL19, with the preset's priming penalties."""

    preset: ModelPreset
    settings: Settings

    @property
    def run_name(self) -> str:
        """e.g. dl19-priming-llama-3-8b."""
        return f"{PRIMING_COLLECTION}-priming-{self.preset.name}"


@dataclass(frozen=True)
class StudyGrid:
    """Everything the study will run, resolved and checked before anything is asked."""

    judge_runs: list[JudgeRun]
    priming_runs: list[PrimingRun]
    personalities: list[str]
    limit_pairs: int | None

    @property
    def classifier_runs(self) -> list[tuple[str, bool]]:
        """(judge run name, CoT setting) of every DL21 run: Experiment 2's classifier, per model and setting."""
        return [(r.run_name, cot) for r in self.judge_runs if r.collection == CLASSIFIER_COLLECTION for cot in r.cot]


def choose(given: list[str] | None, known: tuple[str, ...] | list[str], what: str) -> list[str]:
    """The given names in the grid's order (all when none given); an unknown one is a usage error."""
    if not given:
        return list(known)
    unknown = [name for name in given if name not in known]
    if unknown:
        raise UsageError(f"unknown {what} {unknown[0]!r}; the study's are {', '.join(known)}")
    return [name for name in known if name in given]


def choose_subsets(settings: Settings, collections: list[str]) -> dict[str, str]:
    """`published` where the warehouse has it for a collection, else `balanced`; a missing one is a usage error."""
    with open_migrated(settings.warehouse) as con:
        rows = run_sql(con, "study/select_subsets", {"collection_ids": collections}).fetchall()
    found: dict[str, set[str]] = {c: set() for c in collections}
    for collection, is_ingested, subset in rows:
        if not is_ingested:
            raise UsageError(f"collection {collection!r} is not in the warehouse: run `peras ingest {collection}`")
        if subset is not None:
            found[collection].add(subset)
    chosen = {}
    for collection, subsets in found.items():
        preferred = [s for s in SUBSET_PREFERENCE if s in subsets]
        if not preferred:
            raise UsageError(f"collection {collection!r} has neither subset {' nor '.join(SUBSET_PREFERENCE)}")
        chosen[collection] = preferred[0]
    return chosen


def build_grid(
    settings: Settings,
    presets: ModelPresets,
    endpoints_file: Path,
    models: list[str] | None,
    collections: list[str] | None,
    personalities: list[str],
    limit_pairs: int | None,
) -> StudyGrid:
    """Presets x collections, every endpoint and key checked, subsets looked up in the warehouse."""
    chosen = [presets.get(name) for name in choose(models, list(presets.models), "model preset")]
    entries = load_endpoints(endpoints_file, presets)
    by_preset = {preset.name: model_settings(settings, preset, entries, endpoints_file) for preset in chosen}
    subsets = choose_subsets(settings, choose(collections, COLLECTIONS, "collection"))
    judge_runs = [
        JudgeRun(preset, by_preset[preset.name], collection, subset, preset.cot_settings)
        for preset in chosen
        for collection, subset in subsets.items()
    ]
    priming_runs = [PrimingRun(p, by_preset[p.name]) for p in chosen] if PRIMING_COLLECTION in subsets else []
    return StudyGrid(judge_runs, priming_runs, personalities, limit_pairs)
