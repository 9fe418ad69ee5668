"""The batch prompt (tasks/priming/prompts/batch_umbrela.toml) and the reading of its JSON answers.

Message layout as for the judge prompts: personality instruction, blank line, task; the default
personality sends the task alone.

The prompt shows one worked example, whose passages have the ids `example_ids` of the prompt file: never a
batch's ids (rendering refuses a batch that uses one), so the example's scores can never be read as a batch's.

An answer is read as follows; anything else is a parse failure with a reason, never a score:
1. Closed `<think>...</think>` blocks are dropped.
2. The first JSON object in the text is taken, wherever it starts: code fences and prose around it are
   ignored. An object keyed only by the example's ids (the example's answer repeated) is passed over. No
   object: 'no JSON object'; only the example's: 'only the example's JSON object'.
3. Its keys are the passage ids (surrounding whitespace and one pair of [brackets] ignored, since the prompt
   lists passages as `[id] text`). Checked in this order: a key twice ('duplicate id X'), an id of the batch
   missing ('missing id X'), a key that is not an id of the batch ('unexpected id X').
4. Each score, in batch order, must be an integer 0-3. A JSON number with an integral value (2, 2.0) or a
   string holding one digit ("2") counts; booleans, fractions and words are 'score of X not an integer: V';
   other integers are 'score of X out of range 0-3: V'.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from peras.errors import InputError
from peras.prompting import Personality, format_fields, personality_messages, read_prompt

PROMPT_NAME = "batch_umbrela"
PROMPT_DIR = Path(__file__).with_name("prompts")  # the stage's prompt file and its answer shape
EXTRA_KEYS: dict[str, type] = {"passage": str, "example_ids": list}  # beside every prompt file's keys
PASSAGE_PLACEHOLDERS = ("doc_id", "text")
PASSAGE_SEPARATOR = "\n"
ID_SEPARATOR = ", "
_THINK_BLOCK = re.compile(r"<think>.*?</think>", re.S | re.I)
_DIGIT = re.compile(r"\s*([0-9])\s*")


@dataclass(frozen=True, slots=True)
class BatchPrompt:
    """The batch task template, the template of one passage line, the example's ids and the sampling parameters."""

    template: str
    passage: str
    example_ids: tuple[str, ...]
    sampling: dict[str, Any]
    fingerprint: str

    def render(self, query: str, passages: Sequence[tuple[str, str]]) -> str:
        """The task text for a query and its (doc_id, text) passages in batch order."""
        clash = [doc_id for doc_id, _ in passages if doc_id in self.example_ids]
        if clash:  # load_pools refuses such a collection first; this is the last line of defence
            raise ValueError(f"passage id {clash[0]} is an id of the batch prompt's example")
        lines = PASSAGE_SEPARATOR.join(self.passage.format_map({"doc_id": d, "text": t}) for d, t in passages)
        ids = ID_SEPARATOR.join(doc_id for doc_id, _ in passages)
        # format_map parses only the template: braces inside a query or passage are left alone.
        return self.template.format_map({"query": query, "passages": lines, "ids": ids})


@dataclass(frozen=True, slots=True)
class BatchParse:
    """Scores in batch order, or None with the reason the answer could not be read."""

    scores: tuple[int, ...] | None
    ok: bool
    reason: str


def load_batch_prompt(path: Path = PROMPT_DIR / f"{PROMPT_NAME}.toml") -> BatchPrompt:
    """Read the batch template (peras.prompting.read_prompt) and check its passage line's placeholders and example."""
    found = read_prompt(path, extra=EXTRA_KEYS, name=PROMPT_NAME)
    passage = found.extra["passage"]
    _check_placeholders(passage, PASSAGE_PLACEHOLDERS, "passage", path)
    data = {"template": found.template, "placeholders": found.placeholders} | found.extra
    example_ids = _check_example(data, path)
    return BatchPrompt(
        found.template, passage, example_ids, found.sampling, hashlib.sha256(found.text.encode()).hexdigest()
    )


def _check_example(data: dict[str, Any], path: Path) -> tuple[str, ...]:
    """The example's ids: distinct, listed in the template as `passage` renders them, and keying its answer.

    The answer is the template's first JSON object, read as a model's answer would be read.
    """
    ids = data["example_ids"]
    if len(ids) < 2 or not all(isinstance(i, str) and i and _normalise_key(i) == i for i in ids):
        raise InputError("example_ids must be two or more ids without surrounding spaces or [brackets]", path)
    if len(set(ids)) != len(ids):
        raise InputError(f"example_ids repeat an id: {ids}", path)
    lines = data["template"].splitlines()
    for doc_id in ids:
        start = data["passage"].format_map({"doc_id": doc_id, "text": ""})
        if not any(line.startswith(start) and line[len(start) :].strip() for line in lines):
            raise InputError(f"the example lists no passage {start.strip()!r}", path)
    shown = data["template"].format_map(dict.fromkeys(data["placeholders"], ""))
    found = _first_object(shown)
    answer = _failed("no JSON object") if found is None else _scores_of(found, ids)
    if not answer.ok:
        raise InputError(f"the example's answer does not read as an answer: {answer.reason}", path)
    return tuple(ids)


@cache
def batch_prompt() -> BatchPrompt:
    """The shipped batch prompt, read and validated once per process."""
    return load_batch_prompt()


def build_batch_messages(
    personality: Personality, query: str, passages: Sequence[tuple[str, str]]
) -> list[dict[str, str]]:
    """One user message: the personality instruction, a blank line, the batch task."""
    return personality_messages(personality, batch_prompt().render(query, passages))


def parse_batch_answer(text: str, doc_ids: Sequence[str], example_ids: Sequence[str] = ()) -> BatchParse:
    """Read one score per passage id out of a JSON answer, or say why not (module docstring).

    `example_ids`: the prompt's example ids (`batch_prompt().example_ids`); an object keyed only by them is skipped.
    """
    text = _THINK_BLOCK.sub("", text)
    found = _first_object(text, skip=frozenset(example_ids))
    if found is None:
        return _failed("only the example's JSON object" if _first_object(text) is not None else "no JSON object")
    return _scores_of(found, doc_ids)


def _scores_of(found: list[tuple[str, Any]], doc_ids: Sequence[str]) -> BatchParse:
    """The scores of one decoded object, in batch order, or the first problem with it."""
    pairs = [(_normalise_key(key), value) for key, value in found]
    keys = [key for key, _ in pairs]
    for key in keys:
        if keys.count(key) > 1:
            return _failed(f"duplicate id {key}")
    by_id = dict(pairs)
    for doc_id in doc_ids:
        if doc_id not in by_id:
            return _failed(f"missing id {doc_id}")
    for key in keys:
        if key not in doc_ids:
            return _failed(f"unexpected id {key}")
    scores = []
    for doc_id in doc_ids:
        score, problem = _score(by_id[doc_id])
        if score is None:
            return _failed(f"score of {doc_id} {problem}: {json.dumps(by_id[doc_id])}")
        scores.append(score)
    return BatchParse(tuple(scores), True, "ok")


def _first_object(text: str, skip: frozenset[str] = frozenset()) -> list[tuple[str, Any]] | None:
    """The key-value pairs (in order, repeats kept) of the first decodable JSON object in the text whose keys are
    not all in `skip` (an empty object is never skipped)."""
    decoder = json.JSONDecoder(object_pairs_hook=lambda pairs: pairs)
    start = text.find("{")
    while start != -1:
        try:
            value, end = decoder.raw_decode(text, start)
        except ValueError:
            start = text.find("{", start + 1)
            continue
        if value and all(_normalise_key(key) in skip for key, _ in value):
            start = text.find("{", end)
            continue
        return value  # type: ignore[no-any-return]
    return None


def _normalise_key(key: str) -> str:
    key = key.strip()
    if key.startswith("[") and key.endswith("]"):
        key = key[1:-1].strip()
    return key


def _score(value: Any) -> tuple[int | None, str]:
    if isinstance(value, bool):
        return None, "not an integer"
    if isinstance(value, str):
        match = _DIGIT.fullmatch(value)
        if match is None:
            return None, "not an integer"
        value = int(match.group(1))
    if isinstance(value, float):
        if not value.is_integer():
            return None, "not an integer"
        value = int(value)
    if not isinstance(value, int):
        return None, "not an integer"
    if not 0 <= value <= 3:
        return None, "out of range 0-3"
    return value, ""


def _failed(reason: str) -> BatchParse:
    return BatchParse(None, False, reason)


def _check_placeholders(template: str, declared: tuple[str, ...], what: str, path: Path) -> None:
    # A field like {0} or {a.b} or a stray brace would render something other than what was declared.
    try:
        used = format_fields(template)
    except ValueError as exc:
        raise InputError(f"{what}: {exc}", path) from exc
    if sorted(set(used)) != sorted(declared) or any(not name.isidentifier() for name in used):
        raise InputError(f"{what} placeholders {sorted(set(used))} differ from declared {sorted(declared)}", path)
