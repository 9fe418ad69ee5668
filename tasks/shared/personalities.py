"""Which personalities a stage asks under, one way for every stage: the built-in eleven (and those of
PERAS_PERSONALITIES_DIR) by code, or the members of a built personality set (`peras personas build`): `builtin`,
`NAME` (its latest published version) or `NAME@VERSION`.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from peras.errors import UsageError
from peras.prompting import CANONICAL_ORDER, Personality, load_personalities, select_personalities
from peras.settings import Settings
from peras.sql import query_frame
from peras.warehouse import open_migrated

BUILTIN = "builtin"
CONDITIONS = CANONICAL_ORDER[1:]  # the ten conditions; default has no instruction to build
SET_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,19}")  # codes <name>-v<version>-<condition> stay <= 32 chars
SET_SPEC = re.compile(rf"(?P<name>{SET_NAME.pattern})(?:@(?P<version>[0-9]+))?")


def choose_personalities(settings: Settings, codes: list[str] | None, personality_set: str | None) -> list[Personality]:
    """The personalities to ask under: of the set when one is named, else the built-in and PERAS_PERSONALITIES_DIR
    ones."""
    if personality_set is None:
        return select_personalities(codes, settings.personalities_dir)
    available = resolve_set(settings, personality_set)
    unknown = sorted(set(codes or ()) - {p.code for p in available})
    if unknown:
        known = ", ".join(p.code for p in available)
        raise UsageError(f"set {personality_set} has no personality {', '.join(unknown)}; it has {known}")
    return [p for p in available if codes is None or p.code in codes]


def resolve_set(settings: Settings, personality_set: str) -> list[Personality]:
    """The personalities of a set, default first: `builtin`, `NAME` (its latest published version) or `NAME@V`."""
    if personality_set == BUILTIN:
        return load_personalities(None)
    spec = SET_SPEC.fullmatch(personality_set)
    if spec is None:
        raise UsageError(f"personality set {personality_set!r}: give {BUILTIN}, NAME or NAME@VERSION")
    version = int(spec["version"]) if spec["version"] else None
    params = {"set_name": spec["name"], "version": version, "running": version is not None}
    with open_migrated(settings.warehouse) as con:
        rows = query_frame(con, "persona_sets/select_members", params).to_dicts()
    if not rows:
        raise UsageError(
            f"no personality set {personality_set!r} in the warehouse (published, or that version); "
            f"build one with `peras personas build {spec['name']}`"
        )
    return [load_personalities(None)[0], *members(spec["name"], rows)]


def members(set_name: str, rows: list[dict[str, Any]]) -> list[Personality]:
    """A set's personas in the study's order: the condition's trait and pole, the built instruction."""
    builtin = {p.code: p for p in load_personalities(None)}
    by_condition = {row["condition"]: row for row in rows}
    return [
        Personality(
            row["personality"],
            f"{builtin[code].name} ({set_name} v{row['version']})",
            builtin[code].trait,
            builtin[code].pole,
            row["instruction"],
            Path(f"persona set {set_name} v{row['version']}"),
        )
        for code in CONDITIONS
        if (row := by_condition.get(code)) is not None
    ]
