"""Personalities and prompt templates: data files validated on load, rendered into chat messages.

What every stage shares: the personalities, the one reader of prompt files (`read_prompt`; `load_prompt`,
`cached_prompt`, `sampling_params` for str.format templates), the message layout (`personality_messages`) and the
request hashes. A stage's own prompt files live in its folder, `tasks/<stage>/prompts/<name>.toml`, beside their
answer shapes (`answers.toml`); `peras/prompts/` keeps only those several stages share (the label and confidence
prompts). Each stage builds its own messages from them (tasks/judge/prompt.py, tasks/pairwise/prompt.py,
tasks/personas/prompt.py, tasks/priming/prompt.py, ...).

Message layout (one request = one user message, no system message):

    <personality instruction>
    <blank line>
    <task template with query and passage filled in>

For the `default` personality the instruction is empty and the message is the task text alone, with no
leading blank line. This is Phi = [pi || tau || q || d]: the query and passage sit inside the task
template, as in the study. A single user message is used because not every chat template (Gemma, some
Mistral versions) accepts a system role, and it keeps the prompt identical across backends.
"""

from __future__ import annotations

import hashlib
import json
import re
import string
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import orjson

from peras.errors import InputError, UsageError
from peras.paths import PERSONALITIES_DIR, PROMPTS_DIR

CANONICAL_ORDER = ("default", "HA", "LA", "HC", "LC", "HE", "LE", "HN", "LN", "HO", "LO")
DEFAULT_CODE = "default"
POLES = ("high", "low", "none")
PERSONALITY_KEYS = ("code", "name", "trait", "pole", "instruction")
# Codes become column values, file names and CLI arguments: keep them short and shell-safe.
CODE_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,31}")
PROMPT_KEYS: dict[str, type] = {
    "name": str,
    "description": str,
    "placeholders": list,
    "template": str,
    "sampling": dict,
}


@dataclass(frozen=True, slots=True)
class Personality:
    """One personality condition; `trait` and `pole` are "none" for the default condition."""

    code: str
    name: str
    trait: str
    pole: str
    instruction: str
    source: Path = field(compare=False, repr=False)

    @property
    def is_builtin(self) -> bool:
        """True for the eleven conditions shipped with PERAS."""
        return self.source.parent == PERSONALITIES_DIR


@dataclass(frozen=True, slots=True)
class PromptTemplate:
    """A task template with its declared placeholders and sampling parameters."""

    name: str
    description: str
    placeholders: tuple[str, ...]
    template: str
    sampling: dict[str, Any]

    def render(self, **values: object) -> str:
        """Fill every placeholder; missing or unexpected values are a programming error.

        As `template.format_map(values)` (which only parses the template: braces inside a query or passage are left
        alone), from the template parsed once (`_parts`): format_map parsed the ~2 KB template on every request.
        """
        parts = _PARTS.get(self.template)
        if parts is None:
            parts = _PARTS[self.template] = _parts(self)
        keys, pieces = parts
        if values.keys() != keys:
            raise ValueError(f"prompt {self.name} takes {sorted(self.placeholders)}, got {sorted(values)}")
        if pieces is None:
            return self.template.format_map(values)
        out: list[str] = []
        for literal, name in pieces:
            out.append(literal)
            if name is not None:
                value = values[name]
                out.append(value if type(value) is str else format(value, ""))
        return "".join(out)


_PARTS: dict[str, tuple[frozenset[str], list[tuple[str, str | None]] | None]] = {}


def _parts(template: PromptTemplate) -> tuple[frozenset[str], list[tuple[str, str | None]] | None]:
    """The declared placeholders, and the template as (literal text, placeholder or None) pieces; None for a template
    with anything but plain `{name}` fields (a format spec, a conversion, an index: format_map does those)."""
    pieces: list[tuple[str, str | None]] = []
    for literal, name, spec, conversion in string.Formatter().parse(template.template):
        if name is not None and (spec or conversion or not name.isidentifier()):
            return frozenset(template.placeholders), None
        pieces.append((literal, name))
    return frozenset(template.placeholders), pieces


def load_personalities(extra_dir: Path | None = None) -> list[Personality]:
    """The eleven built-in conditions in canonical order, then user files from `extra_dir` by code."""
    builtin = {p.code: p for p in (_read_personality(path) for path in sorted(PERSONALITIES_DIR.glob("*.toml")))}
    if set(builtin) != set(CANONICAL_ORDER):
        raise InputError(
            f"built-in personalities are {sorted(builtin)}, expected {list(CANONICAL_ORDER)}",
            PERSONALITIES_DIR,
        )
    result = [builtin[code] for code in CANONICAL_ORDER]
    if extra_dir is None:
        return result
    if not extra_dir.is_dir():
        raise UsageError(f"personalities directory {extra_dir} does not exist")
    seen = {p.code.lower(): p.source for p in result}
    user: list[Personality] = []
    for path in sorted(extra_dir.glob("*.toml")):
        personality = _read_personality(path)
        # Case-insensitive, because codes end up as file names on case-insensitive file systems.
        if personality.code.lower() in seen:
            raise InputError(
                f"duplicate personality code {personality.code!r} (also in {seen[personality.code.lower()]})",
                path,
            )
        if not personality.instruction.strip():
            raise InputError("instruction is empty; only the built-in 'default' has no instruction", path)
        seen[personality.code.lower()] = path
        user.append(personality)
    return result + sorted(user, key=lambda p: p.code)


def select_personalities(codes: list[str] | None, extra_dir: Path | None = None) -> list[Personality]:
    """The named conditions in canonical order (all of them for None); an unknown code is a UsageError."""
    available = load_personalities(extra_dir)
    if codes is None:
        return available
    known = {p.code for p in available}
    unknown = [code for code in codes if code not in known]
    if unknown:
        raise UsageError(f"unknown personality {', '.join(unknown)}; known: {', '.join(p.code for p in available)}")
    wanted = set(codes)
    return [p for p in available if p.code in wanted]


@dataclass(frozen=True)
class PromptSyntax:
    """How a template names its placeholders: `fields` lists those it uses (a ValueError: it does not parse),
    `is_name` says which declared names the syntax can write; `word` is what the refusal calls them."""

    fields: Callable[[str], list[str]]
    is_name: Callable[[str], bool] = str.isidentifier
    word: str = "placeholders"


def format_fields(template: str) -> list[str]:
    """The fields a str.format template uses, as written (`{0}` or `{a.b}` too: they then differ from any name)."""
    return [name for _, name, _, _ in string.Formatter().parse(template) if name is not None]


FORMAT = PromptSyntax(format_fields)  # str.format: `{name}`, literal braces doubled


@dataclass(frozen=True)
class PromptFile:
    """A prompt file read and checked (`read_prompt`): its declared keys, a stage's own keys (`extra`) and its text."""

    path: Path
    name: str
    description: str
    placeholders: tuple[str, ...]
    template: str
    sampling: dict[str, Any]
    extra: dict[str, Any]
    text: str


def read_prompt(
    path: Path, syntax: PromptSyntax = FORMAT, extra: dict[str, type] | None = None, name: str | None = None
) -> PromptFile:
    """The one reader of prompt files, the foundation's and every stage's (`tasks/<stage>/prompts/<name>.toml`).

    It holds exactly PROMPT_KEYS and the stage's `extra` keys, its `name` is the file's (its stem unless given), and
    the placeholders its template uses in `syntax` are exactly the declared ones; else an InputError names the file.
    """
    data = read_toml(path)
    check_keys(data, PROMPT_KEYS | (extra or {}), path)
    expected = name or path.stem
    if data["name"] != expected:
        raise InputError(f"name is {data['name']!r}, expected {expected!r}", path)
    declared = tuple(data["placeholders"])
    if not all(isinstance(p, str) for p in declared):
        raise InputError("placeholders must be a list of strings", path)
    bad = [p for p in declared if not syntax.is_name(p)]
    if bad:
        raise InputError(f"placeholder {bad[0]!r} is not a name the template can use", path)
    try:
        used = syntax.fields(data["template"])
    except ValueError as exc:
        raise InputError(f"template: {exc}", path) from exc
    # A field like {0} or {a.b} or a stray brace would render something other than what was declared.
    if sorted(set(used)) != sorted(declared):
        raise InputError(f"template {syntax.word} {sorted(set(used))} differ from declared {sorted(declared)}", path)
    text = path.read_text(encoding="utf-8")
    extras = {key: data[key] for key in extra or {}}
    return PromptFile(path, data["name"], data["description"], declared, data["template"], dict(data["sampling"]),
                      extras, text)  # fmt: skip


def prompt_path(prompt: str | Path) -> Path:
    """A prompt file: a Path as given (a stage's own), a name one of the foundation's shared prompts (peras/prompts/,
    the label and confidence prompts the judge, the study and the assessor page share)."""
    return prompt if isinstance(prompt, Path) else PROMPTS_DIR / f"{prompt}.toml"


def load_prompt(prompt: str | Path) -> PromptTemplate:
    """A str.format prompt file (`read_prompt`), by its path or a shared prompt's name (`prompt_path`)."""
    found = read_prompt(prompt_path(prompt))
    return PromptTemplate(found.name, found.description, found.placeholders, found.template, found.sampling)


@cache
def _cached(path: Path) -> PromptTemplate:
    return load_prompt(path)


def cached_prompt(prompt: str | Path) -> PromptTemplate:
    """`load_prompt(prompt)`, read and validated once per process: rendering runs once per request."""
    return _cached(prompt_path(prompt))


def personality_messages(personality: Personality, task: str) -> list[dict[str, str]]:
    """The one user message of a request: the personality's instruction, a blank line, the task (module doc)."""
    text = f"{personality.instruction}\n\n{task}" if personality.instruction else task
    return [{"role": "user", "content": text}]


def sampling_params(prompt: str | Path) -> dict[str, Any]:
    """The sampling parameters of a prompt (a copy: callers add max_tokens, logprobs, seed...)."""
    return dict(cached_prompt(prompt).sampling)


def prompt_hash(messages: list[dict[str, str]]) -> str:
    """sha256 hex of the canonical JSON of the messages: equal prompts, equal hash, on any machine."""
    return hashlib.sha256(_canonical_json(messages)).hexdigest()


def request_hash(model: str, messages: list[dict[str, str]], params: dict[str, Any], sample_index: int) -> str:
    """sha256 hex identifying one request: resending it must give the same answer at temperature 0.

    It is the hash of the canonical JSON of {"model", "messages", "params", "sample_index"}.
    """
    return request_hashes(model, messages, params, sample_index)[0]


def request_hashes(
    model: str, messages: list[dict[str, str]], params: dict[str, Any], sample_index: int
) -> tuple[str, str]:
    """(request_hash, prompt_hash) encoding the messages once (they are most of the bytes of a request).

    The payload is assembled in canonical key order (messages < model < params < sample_index), so the bytes are
    exactly those of the canonical JSON of the whole dictionary.
    """
    encoded = _canonical_messages(messages)
    payload = b"".join((
        b'{"messages":', encoded,
        b',"model":', _canonical_model(model),
        b',"params":', _canonical_params(params),
        b',"sample_index":', b"%d" % sample_index if type(sample_index) is int else _canonical_json(sample_index),
        b"}",
    ))  # fmt: skip
    return hashlib.sha256(payload).hexdigest(), hashlib.sha256(encoded).hexdigest()


_MODEL_CACHE: dict[str, bytes] = {}


def _canonical_model(model: str) -> bytes:
    """`_canonical_json(model)`, remembered: a run asks one model (or a few) thousands of times."""
    found = _MODEL_CACHE.get(model) if type(model) is str else None
    if found is None:
        found = _canonical_json(model)
        if type(model) is str:
            if len(_MODEL_CACHE) >= _PARAMS_CACHE_SIZE:
                _MODEL_CACHE.clear()
            _MODEL_CACHE[model] = found
    return found


_PARAMS_CACHE: dict[bytes, bytes] = {}
_PARAMS_CACHE_SIZE = 4096


def _canonical_params(params: dict[str, Any]) -> bytes:
    """`_canonical_json(params)`, remembered: a run asks with a handful of parameter sets, each thousands of times.

    The key is orjson's encoding, which tells apart every value the canonical form does not (1 and 1.0 get two
    keys, both mapping to the same canonical bytes); parameters orjson cannot encode, and any holding a null (orjson
    writes NaN and infinities as null too), take the general path.
    """
    try:
        key = orjson.dumps(params, option=orjson.OPT_SORT_KEYS)
    except TypeError:
        return _canonical_json(params)
    if b"null" in key:
        return _canonical_json(params)
    found = _PARAMS_CACHE.get(key)
    if found is None:
        if len(_PARAMS_CACHE) >= _PARAMS_CACHE_SIZE:
            _PARAMS_CACHE.clear()
        found = _PARAMS_CACHE[key] = _canonical_json(params)
    return found


def _canonical_messages(messages: list[dict[str, str]]) -> bytes:
    """The canonical JSON of chat messages, fast: orjson writes strings exactly as json.dumps(ensure_ascii=False,
    separators=(",", ":"), sort_keys=True) does; anything but strings takes the general path (floats differ)."""
    for message in messages:  # plain loops: this runs once per request, a generator in all() costs twice as much
        for value in message.values():
            if type(value) is not str:
                return _canonical_json(messages)
    return orjson.dumps(messages, option=orjson.OPT_SORT_KEYS)


def _canonical_json(value: object) -> bytes:
    return json.dumps(_normalise(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def _normalise(value: object) -> object:
    # 0 and 0.0 are the same temperature: write integral floats as ints so both hash alike.
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {str(k): _normalise(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_normalise(v) for v in value]
    return value


def _read_personality(path: Path) -> Personality:
    data = read_toml(path)
    check_keys(data, dict.fromkeys(PERSONALITY_KEYS, str), path)
    if not CODE_PATTERN.fullmatch(data["code"]):
        raise InputError(
            f"code {data['code']!r} must be 1-32 letters, digits, '_' or '-', starting with a letter or digit",
            path,
        )
    if data["pole"] not in POLES:
        raise InputError(f"pole {data['pole']!r} must be one of {', '.join(POLES)}", path)
    for key in ("name", "trait"):
        if not data[key].strip():
            raise InputError(f"{key} is empty", path)
    return Personality(**{key: data[key] for key in PERSONALITY_KEYS}, source=path)


def read_toml(path: Path) -> dict[str, Any]:
    """A prompt or personality data file's TOML; unreadable or invalid is an InputError naming the file."""
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read: {exc}", path) from exc
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"not valid TOML: {exc}", path) from exc


def check_keys(data: dict[str, Any], expected: dict[str, type], path: Path) -> None:
    """A data file holds exactly the expected keys, each of its type; else an InputError naming the key and file."""
    missing = [key for key in expected if key not in data]
    unknown = [key for key in data if key not in expected]
    if missing:
        raise InputError(f"missing key {', '.join(missing)}", path)
    if unknown:
        raise InputError(f"unknown key {', '.join(unknown)} (allowed: {', '.join(expected)})", path)
    for key, kind in expected.items():
        if not isinstance(data[key], kind):
            raise InputError(f"{key} must be a {kind.__name__}, not {type(data[key]).__name__}", path)
