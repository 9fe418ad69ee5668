"""Probe kinds: one data file each (tasks/probes/kinds/<kind>.toml), read and checked when loaded.

A kind names the passage it perturbs (`own`: the pair's passage; `other-topic`: a passage judged for another
query), whether it is an attack (it must not raise the label) or a control (it must not change it), and its variants:
name -> text template. With a `[sentences]` table, each sentence goes into each template at `{sentence}` and the
variants are `<sentence name>-<template name>`. The placeholders a template may use are PLACEHOLDERS (docs/probes.md).
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from peras.errors import InputError, UsageError
from peras.prompting import check_keys, read_toml

KINDS_DIR = Path(__file__).parent / "kinds"
ROLES = ("attack", "control")
PASSAGES = ("own", "other-topic")
# What a template may use; each one but query, terms and sentence is (a form of) the passage.
PLACEHOLDERS = {
    "passage": "the passage",
    "query": "the query, verbatim",
    "terms": "the query's content terms (lower case, stop words left out, each once), space-separated",
    "first_sentence": "the passage's first sentence",
    "rest": "the passage after its first sentence (empty for a one-sentence passage)",
    "sentences_lines": "the passage, one sentence per line",
    "sentences_reversed": "the passage's sentences in reverse order",
    "passage_lower": "the passage in lower case",
    "sentence": "the kind's sentence (only in a kind with [sentences])",
}
PASSAGE_FORMS = {"passage", "first_sentence", "sentences_lines", "sentences_reversed", "passage_lower"}
NAME = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
KEYS: dict[str, type] = {
    "kind": str,
    "title": str,
    "follows": str,
    "role": str,
    "passage": str,
    "variants": dict,
}


@dataclass(frozen=True)
class ProbeKind:
    """A kind of probe: its variants (name -> template, sentences already in), role and passage."""

    kind: str
    title: str
    follows: str
    role: str
    passage: str
    variants: tuple[tuple[str, str], ...]


def kind_names() -> list[str]:
    """Every kind with a data file, by name."""
    return sorted(path.stem for path in KINDS_DIR.glob("*.toml"))


@cache
def load_kind(name: str, directory: Path = KINDS_DIR) -> ProbeKind:
    """The kind `name`, checked: its keys, role, passage, variant names and templates' placeholders."""
    path = directory / f"{name}.toml"
    if not path.is_file():
        raise UsageError(f"unknown probe kind {name!r}; known: {', '.join(kind_names())}")
    data = read_toml(path)
    check_keys(data, KEYS | ({"sentences": dict} if "sentences" in data else {}), path)
    if data["kind"] != name:
        raise InputError(f"kind is {data['kind']!r}, expected {name!r} (the file's name)", path)
    for key, allowed in (("role", ROLES), ("passage", PASSAGES)):
        if data[key] not in allowed:
            raise InputError(f"{key} {data[key]!r} must be one of {', '.join(allowed)}", path)
    sentences: dict[str, Any] = data.get("sentences", {})
    templates: dict[str, Any] = data["variants"]
    if not templates:
        raise InputError("variants is empty", path)
    for table, entries in (("variants", templates), ("sentences", sentences)):
        for key, text in entries.items():
            if not NAME.match(key) or not isinstance(text, str) or not text.strip():
                raise InputError(f"{table}.{key} must be a lower-case-hyphenated name with a non-empty text", path)
            if table == "sentences" and ("{" in text or "}" in text):
                raise InputError(f"sentences.{key} holds a brace: a sentence is plain text", path)
    for key, template in templates.items():
        check_template(template, bool(sentences), f"variants.{key}", path)
    variants = (
        tuple(
            (f"{s}-{t}", template.replace("{sentence}", sentence))
            for s, sentence in sentences.items()
            for t, template in templates.items()
        )
        if sentences
        else tuple(templates.items())
    )
    return ProbeKind(name, data["title"], data["follows"], data["role"], data["passage"], variants)


def check_template(template: str, with_sentence: bool, where: str, path: Path) -> None:
    """A template uses only known placeholders, some form of the passage, and {sentence} iff the kind has sentences."""
    try:
        used = {field for _, field, _, _ in string.Formatter().parse(template) if field is not None}
    except ValueError as exc:
        raise InputError(f"{where}: {exc}", path) from exc
    unknown = sorted(used - set(PLACEHOLDERS))
    if unknown:
        raise InputError(f"{where}: unknown placeholder {', '.join(unknown)} (known: {', '.join(PLACEHOLDERS)})", path)
    if not used & PASSAGE_FORMS:
        raise InputError(
            f"{where}: the template holds no form of the passage ({', '.join(sorted(PASSAGE_FORMS))})", path
        )
    if ("sentence" in used) != with_sentence:
        needs = "needs {sentence}: the kind has [sentences]" if with_sentence else "has {sentence} but no [sentences]"
        raise InputError(f"{where} {needs}", path)


def load_kinds(names: list[str] | None) -> list[ProbeKind]:
    """The kinds asked for (default: every kind), each checked; an unknown name is one UsageError naming them all."""
    known = kind_names()
    unknown = [name for name in names or [] if name not in known]
    if unknown:
        raise UsageError(f"unknown probe kind {', '.join(map(repr, unknown))}; known: {', '.join(known)}")
    return [load_kind(name) for name in sorted(set(names or known))]
