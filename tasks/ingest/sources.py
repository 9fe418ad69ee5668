"""Where a collection's files are: named presets (peras/presets.toml) or files the user names."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from peras.errors import UsageError
from peras.paths import PACKAGE_DIR, SAMPLE_DIR
from peras.settings import Settings
from tasks.ingest.irds import PREFIX, collection_name, is_irds, write_dataset

COLLECTION_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


@dataclass(frozen=True)
class SourceFile:
    """One input file and what it holds ('queries', 'passages', 'qrels:<set>')."""

    role: str
    path: Path


@dataclass
class CollectionSource:
    """Everything needed to read one collection."""

    collection_id: str
    description: str
    preset: str | None
    queries: Path
    passages: Path
    qrels: dict[str, Path]
    subset_topics: int | None
    subset_qrels: str | None
    subset_min_pairs: int = 10
    published_topics: list[str] = field(default_factory=list)  # the study's own topics (drawn from subset_qrels)
    published_levels: list[int] = field(default_factory=list)  # and the pairs at levels 0-3 they must give
    files: list[SourceFile] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.files = [
            *(SourceFile(f"qrels:{name}", path) for name, path in sorted(self.qrels.items())),
            SourceFile("queries", self.queries),
            SourceFile("passages", self.passages),
        ]


SUBSET_NAMES = ("balanced", "published")  # what a preset's default_subset may name


@cache
def presets() -> dict[str, dict[str, Any]]:
    """The named collections, checked: a published subset comes with its level counts and its qrels set."""
    path = PACKAGE_DIR / "presets.toml"
    loaded = tomllib.loads(path.read_text(encoding="utf-8"))
    for name, spec in loaded.items():
        problem = _preset_problem(spec)
        if problem:
            raise UsageError(f"{path}: [{name}] {problem}")
    return loaded


def _preset_problem(spec: dict[str, Any]) -> str | None:
    """What is wrong with one preset's subset settings, if anything."""
    topics = spec.get("published_topics", [])
    levels = spec.get("published_levels", [])
    if not (isinstance(topics, list) and all(isinstance(t, str) for t in topics) and len(set(topics)) == len(topics)):
        return "published_topics must be a list of distinct query ids"
    if bool(topics) != bool(levels):
        return "published_topics and published_levels go together"
    if levels and not (len(levels) == 4 and all(isinstance(n, int) and n >= 0 for n in levels)):
        return "published_levels must be four counts (pairs at levels 0, 1, 2, 3)"
    if topics and spec.get("subset_qrels") not in spec["qrels"]:
        return "published_topics needs subset_qrels, the qrels set they are drawn from"
    table4 = spec.get("table4", [0] * 5)
    if not (isinstance(table4, list) and len(table4) == 5 and all(isinstance(n, int) and n >= 0 for n in table4)):
        return "table4 must be five counts (topics, then pairs at levels 0, 1, 2, 3)"
    default = spec.get("default_subset")
    if default is not None and default not in SUBSET_NAMES:
        return f"default_subset must be one of {', '.join(SUBSET_NAMES)}"
    if default == "published" and not topics:
        return "default_subset = 'published' needs published_topics"
    if default == "balanced" and not spec.get("subset_topics"):
        return "default_subset = 'balanced' needs subset_topics"
    return None


def study_table4(collection_id: str) -> list[int] | None:
    """The study's Table 4 row for a preset (topics, pairs at levels 0-3), if it has one."""
    spec = presets().get(collection_id)
    return list(spec["table4"]) if spec and "table4" in spec else None


def default_subset(collection_id: str) -> str | None:
    """The subset the study judged for a preset (published where known, else balanced); None: judge it whole."""
    spec = presets().get(collection_id)
    return spec.get("default_subset") if spec else None


def preset_source(name: str, settings: Settings) -> CollectionSource:
    """Resolve a preset name to its files."""
    spec = presets().get(name)
    if spec is None:
        raise UsageError(f"unknown collection preset {name!r}; choose one of {', '.join(presets())}, or give --qrels")
    base = SAMPLE_DIR if spec.get("location") == "package" else settings.data_dir
    return CollectionSource(
        collection_id=name,
        description=spec["description"],
        preset=name,
        queries=base / spec["queries"],
        passages=base / spec["passages"],
        qrels={qset: base / path for qset, path in spec["qrels"].items()},
        subset_topics=spec.get("subset_topics"),
        subset_qrels=spec.get("subset_qrels"),
        subset_min_pairs=spec.get("subset_min_pairs", 10),
        published_topics=list(spec.get("published_topics", [])),
        published_levels=list(spec.get("published_levels", [])),
    )


def check_collection_name(collection_id: str) -> None:
    """A name for the user's own collection: short, plain, and not a preset's."""
    if not COLLECTION_ID.match(collection_id):
        raise UsageError(
            f"collection name {collection_id!r} must be 1-64 letters, digits, '.', '_' or '-' (a letter or digit "
            "first): choose another --name"
        )
    if collection_id in presets():
        raise UsageError(f"{collection_id!r} is a preset name; pick another --name for your own files")


def custom_source(
    collection_id: str, qrels: list[str], queries: Path, passages: Path, subset_topics: int | None
) -> CollectionSource:
    """A collection from files the user names; qrels entries are PATH or SET=PATH."""
    check_collection_name(collection_id)
    qrels_sets: dict[str, Path] = {}
    for entry in qrels:
        name, _, path = entry.rpartition("=") if "=" in entry else ("test", "", entry)
        if name in qrels_sets:
            raise UsageError(f"qrels set {name!r} given twice; name them SET=PATH")
        qrels_sets[name] = Path(path)
    return CollectionSource(
        collection_id,
        f"user files ({', '.join(str(p) for p in qrels_sets.values())})",
        None,
        queries,
        passages,
        qrels_sets,
        subset_topics,
        None,
    )


def irds_source(settings: Settings, preset: str, name: str | None, subset_topics: int | None) -> CollectionSource:
    """An ir_datasets dataset's judged queries, docs and qrels, written as files (tasks/ingest/irds.py) and read as
    user files are; the collection is --name, else irds-<id>."""
    dataset_id = preset.removeprefix(PREFIX)
    collection_id = name or collection_name(dataset_id)
    check_collection_name(collection_id)  # before any reading
    paths = write_dataset(settings, dataset_id, collection_id)
    source = custom_source(collection_id, [str(paths["qrels"])], paths["queries"], paths["passages"], subset_topics)
    source.description = f"ir_datasets {dataset_id}"
    return source


def resolve_source(
    settings: Settings,
    preset: str | None,
    name: str | None,
    qrels: list[str] | None,
    queries: str | None,
    passages: str | None,
    subset_topics: int | None,
) -> CollectionSource:
    """A preset, an ir_datasets id (`irds:<id>`), or user files (which need --name, --qrels, --queries and
    --passages)."""
    if is_irds(preset):
        return irds_source(settings, str(preset), name, subset_topics)
    if preset is not None:
        source = preset_source(preset, settings)
        if subset_topics is not None:
            source.subset_topics = subset_topics
        return source
    if not (name and qrels and queries and passages):
        raise UsageError("give a preset (e.g. `peras ingest dl19`) or all of --name, --qrels, --queries, --passages")
    return custom_source(name, qrels, Path(queries), Path(passages), subset_topics)


def ingest_run_name() -> str:
    """ingest-<preset> or ingest-<name> of user files: the collection the run ingests, as the UI shows it."""
    from prefect.runtime import flow_run

    parameters = flow_run.parameters
    return f"ingest-{parameters.get('preset') or parameters.get('name') or 'files'}"
