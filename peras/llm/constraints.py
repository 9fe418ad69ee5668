"""Constrained decoding: each prompt's answer shape (`answers.toml` beside its prompt file) as the fields a server
enforces.

A shape is dialect-free (a choice of strings, a regex with its GBNF twin, a JSON schema); `constrain` writes it into
a request's parameters as the endpoint's dialect spells it, inside `extra_body`, so that the constraint is part of
the stored parameters and of the cache key (a constrained and a free request are different requests) and the
client sends it as it sends every other parameter (`LLMClient._body`: extra_body keys join the JSON body).

Dialects (the fields each sends; docs/constrained.md):
- `vllm`        vLLM 0.12 and later: `structured_outputs: {choice | regex | json}`;
- `vllm-guided` vLLM before 0.12: `guided_choice`, `guided_regex`, `guided_json`;
- `llama.cpp`   llama-server (the embedded model): `grammar` (GBNF) for choices and regexes, `json_schema`;
- `openai`      hosted OpenAI-compatible APIs: `response_format: {type: json_schema, json_schema: {name, schema,
                strict: true}}`; JSON shapes only, a choice or regex prompt stays free text there;
- `free`        no constraint: the request is sent as before.

Which dialect an endpoint speaks is found by `probe_dialect`: one tiny constrained request per dialect, in turn,
until one answer shows that the constraint held (an HTTP 400 or an answer that ignores it moves to the next).
"""

from __future__ import annotations

import contextlib
import json
import re
import tomllib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, TypeVar

from peras.errors import InputError, RequestRejected, UsageError
from peras.prompting import prompt_path

ANSWERS_FILE = "answers.toml"  # beside the prompt files of a folder: peras/prompts/, tasks/<stage>/prompts/
ANSWER_FORMATS = ("auto", "free", "constrained")  # what a user asks for (--answer-format)
DIALECTS = ("vllm", "vllm-guided", "llama.cpp", "openai")  # the probe's order
FREE = "free"
OPENAI_UNSUPPORTED = ("maxLength",)  # keywords strict structured outputs refuse; dropped for the openai dialect


@dataclass(frozen=True)
class AnswerShape:
    """What one prompt's answer must look like: exactly one of choice, regex (with its GBNF grammar) or schema."""

    name: str
    choice: tuple[str, ...] | None = None
    regex: str | None = None
    grammar: str | None = None
    schema: dict[str, Any] | None = None

    @property
    def kind(self) -> str:
        """'choice', 'regex' or 'json'."""
        return "choice" if self.choice else "regex" if self.regex else "json"

    def allows(self, text: str) -> bool:
        """Whether `text` is an answer the constraint lets through (the scripted server's check; JSON: the keys)."""
        if self.choice is not None:
            return text in self.choice
        if self.regex is not None:
            return re.fullmatch(self.regex, text) is not None
        try:
            value = json.loads(text)
        except ValueError:
            return False
        schema = self.schema or {}
        return isinstance(value, dict) and sorted(value) == sorted(schema.get("required", []))


@dataclass(frozen=True)
class KeyedShape:
    """A JSON object whose keys are given per request (the priming batch's passage ids), each value as `value`."""

    name: str
    value: dict[str, Any]

    def for_keys(self, keys: tuple[str, ...]) -> AnswerShape:
        """The object schema with exactly these keys, all required, in this order."""
        schema = {
            "type": "object",
            "properties": {key: dict(self.value) for key in keys},
            "required": list(keys),
            "additionalProperties": False,
        }
        return AnswerShape(self.name, schema=schema)


@dataclass(frozen=True)
class NumberedShape:
    """A regex (with its GBNF twin) whose `{id}` is one of the numbers 1..n, n given per request (the recognize
    stage's utterance ids: the sentences of the answer it reads)."""

    name: str
    regex: str
    grammar: str

    def for_count(self, n: int) -> AnswerShape:
        """The shape whose ids are exactly 1..n (longest first, so a regex alternative is never cut short)."""
        if n < 1:
            raise ValueError(f"{self.name}: no ids to allow (n = {n})")
        numbers = [str(i) for i in range(n, 0, -1)]
        regex_id = "(?:" + "|".join(numbers) + ")"
        # `{more_ids}`: at most n - 1 further ids, so a list never outgrows the answer's sentences (unbounded, the
        # embedded model looped "1, 2, 3, 1, 2, 3, ..." until its token cap)
        more_regex = f"(?:, ?{regex_id}){{0,{n - 1}}}" if n > 1 else ""
        more_grammar = f' ("," " "? id){{0,{n - 1}}}' if n > 1 else ""
        regex = self.regex.replace("{more_ids}", more_regex).replace("{id}", regex_id)
        grammar = self.grammar.replace("{more_ids}", more_grammar).replace(
            "{id}", "(" + " | ".join(f'"{i}"' for i in numbers) + ")"
        )
        return AnswerShape(self.name, regex=regex, grammar=grammar)


S = TypeVar("S", AnswerShape, KeyedShape, NumberedShape)


@dataclass(frozen=True)
class Probe:
    """What the probe found: the dialect requests are sent in (`free`: none) and what happened, said once."""

    answer_format: str
    found: str

    @property
    def line(self) -> str:
        """The one line the terminal shows."""
        return f"answer format: {self.answer_format} ({self.found})"


def answer_shape(prompt: str | Path) -> AnswerShape:
    """The shape of a prompt's answer: its table in the `answers.toml` beside the prompt file (`prompt_path`: a
    stage's own prompt by its path, a shared one by its name)."""
    return _shape_of(prompt, AnswerShape, "fixed")


def keyed_shape(prompt: str | Path) -> KeyedShape:
    """The per-request key shape of a prompt's answer (the priming batch)."""
    return _shape_of(prompt, KeyedShape, "keyed")


def numbered_shape(prompt: str | Path) -> NumberedShape:
    """The per-request id shape of a prompt's answer (the recognize stage's utterance ids)."""
    return _shape_of(prompt, NumberedShape, "numbered")


def _shape_of(prompt: str | Path, kind: type[S], word: str) -> S:
    path = prompt_path(prompt)
    shape = _shapes(path.with_name(ANSWERS_FILE)).get(path.stem)
    if not isinstance(shape, kind):
        raise ValueError(f"prompt {path.stem!r} has no {word} answer shape in {path.with_name(ANSWERS_FILE)}")
    return shape


def constraint_fields(shape: AnswerShape, dialect: str) -> dict[str, Any] | None:
    """The request fields that ask `dialect` for `shape`, or None where it cannot (then the request is free)."""
    if dialect == FREE:
        return None
    if dialect in ("vllm", "vllm-guided"):
        key, value = {
            "choice": ("choice", list(shape.choice or ())),
            "regex": ("regex", shape.regex),
            "json": ("json", shape.schema),
        }[shape.kind]
        return {"structured_outputs": {key: value}} if dialect == "vllm" else {f"guided_{key}": value}
    if dialect == "llama.cpp":
        if shape.kind == "json":
            return {"json_schema": shape.schema}
        return {"grammar": shape.grammar if shape.kind == "regex" else choice_grammar(shape.choice or ())}
    if dialect == "openai":
        if shape.kind != "json":
            return None
        schema = _without(shape.schema or {}, OPENAI_UNSUPPORTED)
        return {
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": shape.name, "schema": schema, "strict": True},
            }
        }
    raise ValueError(f"unknown answer dialect {dialect!r}")


def constrain(params: dict[str, Any], shape: AnswerShape | None, dialect: str) -> dict[str, Any]:
    """`params` with the constraint for `shape` in `dialect` added to its extra_body (unchanged when none applies)."""
    fields = constraint_fields(shape, dialect) if shape is not None else None
    if not fields:
        return params
    return params | {"extra_body": dict(params.get("extra_body") or {}) | fields}


def choice_grammar(choices: tuple[str, ...] | list[str]) -> str:
    """A GBNF grammar whose only sentences are `choices`."""
    return "root ::= " + " | ".join(json.dumps(choice, ensure_ascii=False) for choice in choices)


# The probe: answers no model writes unasked ("Say hello."), a different one per dialect, so the answer shows which
# dialect's constraint held. The first request carries the fields of every dialect servers ignore when they do not
# speak it (vLLM and llama-server do); the openai dialect goes alone (llama-server refuses response_format beside a
# grammar), and after an HTTP 400 each dialect goes alone (a strict server refuses fields it does not know).
PROBE_MESSAGES = [{"role": "user", "content": "Say hello."}]
PROBE_ANSWERS = {dialect: f"peras probe {i}" for i, dialect in enumerate(DIALECTS, 1)}
TOGETHER = ("vllm", "vllm-guided", "llama.cpp")

Chat = Callable[[list[dict[str, str]], dict[str, Any]], Awaitable[Any]]


def probe_shape(dialect: str) -> AnswerShape:
    """The probe's constraint in `dialect`: its own answer as a choice (a one-key JSON object for openai)."""
    answer = PROBE_ANSWERS[dialect]
    if dialect != "openai":
        return AnswerShape("probe", choice=(answer,))
    schema = {
        "type": "object",
        "properties": {"probe": {"type": "string", "enum": [answer]}},
        "required": ["probe"],
        "additionalProperties": False,
    }
    return AnswerShape("probe", schema=schema)


def probe_params(dialects: tuple[str, ...]) -> dict[str, Any]:
    """One probe request's parameters carrying the constraints of `dialects` (greedy, a few tokens)."""
    params: dict[str, Any] = {"temperature": 0.0, "max_tokens": 24}
    for dialect in dialects:
        params = constrain(params, probe_shape(dialect), dialect)
    return params


def probe_answer(text: str, dialects: tuple[str, ...]) -> str | None:
    """The dialect among `dialects` whose constraint the answer shows held, or None."""
    for dialect in dialects:
        if dialect == "openai":
            with contextlib.suppress(ValueError):
                if json.loads(text) == {"probe": PROBE_ANSWERS[dialect]}:
                    return dialect
        elif text.strip() == PROBE_ANSWERS[dialect]:
            return dialect
    return None


async def probe_dialect(chat: Chat) -> Probe:
    """The dialect the endpoint enforces, found with as few tiny requests as can tell (1 for vLLM and llama.cpp, 2
    for a hosted OpenAI-compatible API); `free`, with what each attempt did, if none holds.

    `chat(messages, params)` sends one request (LLMClient.chat); a 400/413/422 (RequestRejected) means the server
    refused a field, an answer other than an allowed one that it ignored them. Anything else propagates."""
    seen: list[str] = []
    together_refused = False
    for dialects in (TOGETHER, ("openai",), *((d,) for d in TOGETHER)):
        if dialects[0] in TOGETHER and len(dialects) == 1 and not together_refused:
            break  # the fields together were ignored, not refused: alone they would be too
        try:
            result = await chat(PROBE_MESSAGES, probe_params(dialects))
        except RequestRejected as exc:
            together_refused = together_refused or dialects == TOGETHER
            seen.append(f"{' + '.join(dialects)}: rejected ({_status(str(exc))})")
            continue
        held = probe_answer(result.text, dialects)
        if held is not None:
            return Probe(held, f"the probe's {held} constraint held")
        seen.append(f"{' + '.join(dialects)}: ignored")
    return Probe(FREE, "no constraint held, answers are free text read by the parsers: " + "; ".join(seen))


# The log-probabilities probe: one tiny request of its own (a server refusing `logprobs` must not read as refusing a
# dialect's fields), answered with them or not.
LOGPROBS_PROBE_PARAMS = {"temperature": 0.0, "max_tokens": 1, "logprobs": True, "top_logprobs": 1}


async def probe_logprobs(chat: Chat) -> bool:
    """Whether the endpoint returns log-probabilities: one tiny request asking for them (a refusal, HTTP 400/413/422,
    says no; anything else propagates)."""
    try:
        result = await chat(PROBE_MESSAGES, LOGPROBS_PROBE_PARAMS)
    except RequestRejected:
        return False
    return bool(result.logprobs and result.logprobs[0])


def resolve_answer_format(wanted: str, probe: Probe) -> Probe:
    """What a run asks in: a probe that found no dialect is refused when constraints were demanded."""
    if wanted == "constrained" and probe.answer_format == FREE:
        raise UsageError(f"--answer-format constrained: the endpoint enforces no constraint ({probe.found})")
    return probe


def check_answer_format(value: str) -> str:
    """`value` if it is one of ANSWER_FORMATS."""
    if value not in ANSWER_FORMATS:
        raise UsageError(f"answer format must be one of {', '.join(ANSWER_FORMATS)}, not {value!r}")
    return value


def _status(message: str) -> str:
    found = re.search(r"HTTP \d{3}", message)
    return found.group(0) if found else "refused"


def _without(value: Any, keys: tuple[str, ...]) -> Any:
    if isinstance(value, dict):
        return {k: _without(v, keys) for k, v in value.items() if k not in keys}
    if isinstance(value, list):
        return [_without(v, keys) for v in value]
    return value


@cache
def _shapes(path: Path) -> dict[str, AnswerShape | KeyedShape | NumberedShape]:
    """A prompt folder's answer shapes, read and checked once per process (a folder without the file has none)."""
    if not path.exists():
        return {}
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise InputError(f"cannot read answer shapes: {exc}", path) from exc
    return {name: _shape(name, table, path) for name, table in data.items()}


def _shape(name: str, table: dict[str, Any], path: Path) -> AnswerShape | KeyedShape | NumberedShape:
    kinds = [key for key in ("choice", "regex", "schema", "keys") if key in table]
    allowed = {"choice": {"choice"}, "regex": {"regex", "grammar"}, "schema": {"schema"}, "keys": {"keys", "value"}}
    numbered = "ids" in table and kinds == ["regex"]
    if numbered:
        if set(table) != {"ids", "regex", "grammar"} or "{id}" not in table["regex"] or "{id}" not in table["grammar"]:
            raise InputError(f"[{name}] needs ids, and regex with grammar both using {{id}}", path)
        re.compile(table["regex"].replace("{id}", "1"))
        return NumberedShape(name, table["regex"], table["grammar"].strip())
    if len(kinds) != 1 or set(table) != allowed[kinds[0]]:
        needs = "exactly one of choice, regex with grammar (and ids), schema, keys with value"
        raise InputError(f"[{name}] needs {needs}", path)
    if kinds[0] == "keys":
        return KeyedShape(name, dict(table["value"]))
    if kinds[0] == "choice":
        return AnswerShape(name, choice=tuple(str(c) for c in table["choice"]))
    if kinds[0] == "regex":
        re.compile(table["regex"])
        return AnswerShape(name, regex=table["regex"], grammar=table["grammar"].strip())
    return AnswerShape(name, schema=dict(table["schema"]))
