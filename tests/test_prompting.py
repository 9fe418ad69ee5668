"""Personalities and prompt templates: the study's wording verbatim, the rendered prompts exact."""

# The study's wording is kept verbatim, one paragraph per line:
# ruff: noqa: E501

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from peras.errors import InputError, UsageError
from peras.prompting import (
    PromptTemplate,
    _canonical_json,
    load_personalities,
    load_prompt,
    prompt_hash,
    request_hash,
    request_hashes,
    sampling_params,
    select_personalities,
)
from tasks.judge.prompt import build_confidence_messages, build_label_messages
from tests.prompt_files import FORMAT_PROMPTS, prompt_file

pytestmark = pytest.mark.core

# The ten instructions exactly as published; the files must match them character for character.
INSTRUCTIONS = {
    "HA": "You are a person with very high Agreeableness. You always listen kindly, show empathy, and seek to help others. When responding, express understanding and warmth, offer supportive suggestions, and use gentle, cooperative language. Emphasize collaboration, kindness, and a willingness to forgive or accommodate differing viewpoints.",
    "LA": "You are a person with very low Agreeableness. You speak frankly, prioritize your own perspective, and question others' motives. When responding, show skepticism, offer critical analysis, and use assertive or blunt language. Emphasize self-interest and competitiveness, and don't shy away from disagreeing or pointing out flaws.",
    "HC": "You are a person with very high Conscientiousness. You keep everything organized, plan your day down to the minute, and follow through on commitments without fail. When responding, demonstrate meticulous attention to detail, reference task lists or schedules, and emphasize reliability and responsibility. Speak in a clear, structured manner and always include next steps or to-do items.",
    "LC": "You are a person with very low Conscientiousness. You prefer to go with the flow, dislike strict schedules, and often leave tasks until the last minute or forget them altogether. When responding, show a casual attitude toward planning, admit to occasional procrastination or messiness, and focus on spontaneity over structure. Keep your tone relaxed and unhurried.",
    "HE": "You are a person with very high Extraversion. You love being around people, are full of energy, and speak with enthusiasm and confidence. When responding, use vivid, expressive language, initiate topics, ask engaging questions, and inject positive emotion and spontaneity. Don't hesitate to share anecdotes or laugh out loud in your text.",
    "LE": "You are a person with very low Extraversion. You prefer quiet settings, think before you speak, and engage only when necessary. When responding, use concise, measured language, focus on thoughtful reflection rather than small talk, and maintain a calm, reserved tone. Share insights succinctly and avoid overly enthusiastic expressions.",
    "HN": "You are a person with very high Neuroticism. You often feel anxious and tense, worry about potential problems, and react strongly to stress. When responding, express your concerns vividly, mention your fears or doubts, and let your moodiness show through your words. Use self-critical or pessimistic remarks, and don't hesitate to voice insecurity or vulnerability.",
    "LN": "You are a person with very low Neuroticism. You remain calm under pressure, seldom worry, and quickly bounce back from setbacks. When responding, use composed, reassuring language, focus on solutions rather than fears, and convey confidence and emotional stability. Avoid dramatizing problems and demonstrate resilience and optimism.",
    "HO": "You are a person with very high Openness to Experience. You love exploring new ideas, thinking outside the box, and finding creative connections in everything. When discussing a topic, you sprinkle in imaginative metaphors, reference artistic or philosophical concepts, and show genuine excitement about novel perspectives. Answer enthusiastically, stay intellectually playful, and don't be afraid to propose unconventional or abstract ideas.",
    "LO": "You are a person with very low Openness to Experience. You prefer practical, tried-and-true approaches and stick to routines. When discussing a topic, you focus on concrete facts, avoid abstract theorizing, and express skepticism toward untested or radical ideas. Answer in a straightforward, no-nonsense manner, emphasizing tradition, stability, and clear practical benefits.",
}

RUBRIC = """You are an expert in evaluating the relevance of text passages to user queries. Your task is to assign a relevance score to a passage based on how well it addresses the information need expressed in a query. Use the following scale:
[3] Perfectly relevant: The passage is fully focused on the query and provides a clear and complete answer.
[2] Highly relevant: The passage provides some relevant information but may include extraneous details or lack clarity.
[1] Related: The passage is tangentially related to the query but does not answer it.
[0] Irrelevant: The passage has no connection to the query."""

LABEL_NOCOT = (
    RUBRIC
    + """
Respond with a single integer (0, 1, 2, or 3) and no explanation.
Query: {query} Passage: {document}
How relevant is this passage to the query? Provide a single integer (0 to 3). Do not provide any extra words, just a number from 0 to 3."""
)

LABEL_COT = """Given a query and a passage, you must provide a score on an integer scale of 0 to 3 with the following meanings:
0 = represent that the passage has nothing to do with the query,
1 = represents that the passage seems related to the query but does not answer it,
2 = represents that the passage has some answer for the query, but the answer may be a bit unclear, or hidden amongst extraneous information,
3 = represents that the passage is dedicated to the query and contains the exact answer.
Important Instruction: Assign category 1 if the passage is somewhat related to the topic but not completely, category 2 if passage presents something very important related to the entire topic but also has some extra information and category 3 if the passage only and entirely refers to the topic. If none of the above satisfies give it category 0.
Query: {query}
Passage: {document}
Split this problem into steps: Consider the underlying intent of the search. Measure how well the content matches a likely intent of the query (M). Measure how trustworthy the passage is (T). Consider the aspects above and the relative importance of each, and decide on a final score (O).
Final score must be an integer value only. Do not provide any code in result. Only provide your final score without providing any reasoning."""

CONFIDENCE = (
    RUBRIC
    + """
Query: {query} Passage: {document}
Your given relevance score is {predicted_score}, please give a confidence score for this answer representing how confident you believe this answer is correct. 0 means you have no confidence at all, and 100 means you have absolute confidence. ONLY return a number from 0 to 100 to show your confidence to your answer and do not return any other content."""
)

GOOD_PERSONALITY = 'code = "HX"\nname = "High X"\ntrait = "Honesty"\npole = "high"\ninstruction = "Be honest."\n'


def test_builtin_personalities_in_canonical_order() -> None:
    personalities = load_personalities()
    assert [p.code for p in personalities] == [
        "default",
        "HA",
        "LA",
        "HC",
        "LC",
        "HE",
        "LE",
        "HN",
        "LN",
        "HO",
        "LO",
    ]
    assert all(p.is_builtin for p in personalities)


@pytest.mark.parametrize("code", sorted(INSTRUCTIONS))
def test_instruction_verbatim(code: str) -> None:
    personality = {p.code: p for p in load_personalities()}[code]
    assert personality.instruction == INSTRUCTIONS[code]


@pytest.mark.parametrize(
    ("code", "trait", "pole"),
    [
        ("default", "none", "none"),
        ("HA", "Agreeableness", "high"),
        ("LA", "Agreeableness", "low"),
        ("HC", "Conscientiousness", "high"),
        ("LC", "Conscientiousness", "low"),
        ("HE", "Extraversion", "high"),
        ("LE", "Extraversion", "low"),
        ("HN", "Neuroticism", "high"),
        ("LN", "Neuroticism", "low"),
        ("HO", "Openness", "high"),
        ("LO", "Openness", "low"),
    ],
)
def test_trait_and_pole(code: str, trait: str, pole: str) -> None:
    personality = {p.code: p for p in load_personalities()}[code]
    assert (personality.trait, personality.pole) == (trait, pole)


def test_default_has_no_instruction() -> None:
    assert load_personalities()[0].instruction == ""


@pytest.mark.parametrize(
    ("name", "template", "placeholders"),
    [
        ("label_nocot", LABEL_NOCOT, ("query", "document")),
        ("label_cot", LABEL_COT, ("query", "document")),
        ("confidence", CONFIDENCE, ("query", "document", "predicted_score")),
    ],
)
def test_template_verbatim(name: str, template: str, placeholders: tuple[str, ...]) -> None:
    prompt = load_prompt(name)
    assert prompt.template == template
    assert prompt.placeholders == placeholders
    assert prompt.sampling == {"temperature": 0.0, "top_p": 1.0}


def test_rendered_label_prompt_default_is_task_alone() -> None:
    default = load_personalities()[0]
    messages = build_label_messages(default, "what is a cat", "A cat is a small {feline}.", cot=False)
    expected = LABEL_NOCOT.replace("{query}", "what is a cat").replace("{document}", "A cat is a small {feline}.")
    assert messages == [{"role": "user", "content": expected}]
    assert messages[0]["content"].startswith("You are an expert")  # no stray blank line


def test_rendered_cot_prompt_with_personality() -> None:
    ha = load_personalities()[1]
    messages = build_label_messages(ha, "q1", "d1", cot=True)
    expected = INSTRUCTIONS["HA"] + "\n\n" + LABEL_COT.replace("{query}", "q1").replace("{document}", "d1")
    assert messages == [{"role": "user", "content": expected}]
    assert "Query: q1\nPassage: d1\nSplit this problem" in messages[0]["content"]


def test_rendered_confidence_prompt() -> None:
    ln = {p.code: p for p in load_personalities()}["LN"]
    messages = build_confidence_messages(ln, "q1", "d1", predicted_score=2)
    content = messages[0]["content"]
    assert (
        content == INSTRUCTIONS["LN"] + "\n\n" + RUBRIC + "\nQuery: q1 Passage: d1\nYour given relevance score is 2, "
        "please give a confidence score for this answer representing how confident you believe this answer is "
        "correct. 0 means you have no confidence at all, and 100 means you have absolute confidence. ONLY return a "
        "number from 0 to 100 to show your confidence to your answer and do not return any other content."
    )


def test_sampling_params_are_a_copy() -> None:
    params = sampling_params("label_nocot")
    params["max_tokens"] = 4
    assert sampling_params("label_nocot") == {"temperature": 0.0, "top_p": 1.0}


def test_prompt_hash_is_sha256_of_canonical_json() -> None:
    messages = [{"role": "user", "content": "hi"}]
    assert prompt_hash(messages) == hashlib.sha256(b'[{"content":"hi","role":"user"}]').hexdigest()
    assert prompt_hash(messages) == "4e79873118cd9be7a1f0308b9cd772950c5410c74ca3fe1ba2626cba009a9237"


def test_request_hash_ignores_key_order_and_int_float() -> None:
    messages = [{"role": "user", "content": "hi"}]
    a = request_hash("m", messages, {"temperature": 0.0, "top_p": 1.0}, 0)
    assert a == request_hash("m", messages, {"top_p": 1, "temperature": 0}, 0)
    assert a == "23b115b6cdcdc50927294d72794d3a355bb703b9e2fdfb277959ddb84e47d4dd"
    assert a != request_hash("m", messages, {"temperature": 0.0, "top_p": 1.0}, 1)
    assert a != request_hash("m2", messages, {"temperature": 0.0, "top_p": 1.0}, 0)


def test_request_hashes_match_the_canonical_json_of_the_whole_request() -> None:
    messages = [{"role": "user", "content": 'Query: é ü "x"'}]
    params = {"temperature": 0.0, "top_p": 1.0, "max_tokens": 4}
    whole = {
        "model": "m",
        "messages": messages,
        "params": {"temperature": 0, "top_p": 1, "max_tokens": 4},
        "sample_index": 3,
    }
    canonical = json.dumps(whole, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    assert request_hashes("m", messages, params, 3) == (hashlib.sha256(canonical).hexdigest(), prompt_hash(messages))
    assert request_hashes("m", messages, params, 3)[0] == (
        "24957b2944decbd1bb6583eb374ca504c14d99bf43ef62dbe2a7b92cf648c76c"
    )


_JSON_SCALARS = st.none() | st.booleans() | st.integers(-(10**6), 10**6) | st.floats(-1e6, 1e6) | st.text(max_size=8)


@settings(max_examples=300, deadline=None)
@given(
    messages=st.lists(
        st.dictionaries(st.sampled_from(["role", "content", "name"]), st.text() | _JSON_SCALARS, min_size=1),
        max_size=3,
    ),
    model=st.text(max_size=12),
    params=st.dictionaries(st.sampled_from(["temperature", "top_p", "max_tokens", "seed"]), _JSON_SCALARS),
    sample_index=st.integers(0, 10**6),
)
def test_request_hashes_equal_the_canonical_json_of_any_request(
    messages: list[dict[str, object]], model: str, params: dict[str, object], sample_index: int
) -> None:
    # The fast paths (messages of text only, remembered models and parameters) hash exactly what the general
    # canonical JSON of the whole request says; a model or parameter set asked twice hashes alike.
    whole = {"model": model, "messages": messages, "params": params, "sample_index": sample_index}
    expected = (
        hashlib.sha256(_canonical_json(whole)).hexdigest(),
        hashlib.sha256(_canonical_json(messages)).hexdigest(),
    )
    for _ in range(2):
        assert request_hashes(model, messages, params, sample_index) == expected  # type: ignore[arg-type]


def test_user_personality_comes_after_builtins(tmp_path: Path) -> None:
    (tmp_path / "hx.toml").write_text(GOOD_PERSONALITY)
    personalities = load_personalities(tmp_path)
    assert [p.code for p in personalities][-2:] == ["LO", "HX"]
    assert personalities[-1].instruction == "Be honest."
    assert not personalities[-1].is_builtin


@pytest.mark.parametrize(
    ("text", "message"),
    [
        # a key left out
        ('code = "HX"\nname = "X"\ntrait = "T"\npole = "high"\n', "missing key instruction"),
        # a key nobody reads is a typo waiting to happen
        (GOOD_PERSONALITY + 'instructions = "x"\n', "unknown key instructions"),
        # TOML integers are not text
        (GOOD_PERSONALITY.replace('"Be honest."', "3"), "instruction must be a str, not int"),
        # a built-in code cannot be redefined (case-insensitively: codes become file names)
        (GOOD_PERSONALITY.replace('"HX"', '"ha"'), "duplicate personality code 'ha'"),
        # codes become columns and CLI arguments
        (GOOD_PERSONALITY.replace('"HX"', '"H X"'), "code 'H X' must be 1-32 letters"),
        (GOOD_PERSONALITY.replace('"HX"', '"-x"'), "code '-x' must be 1-32 letters"),
        # poles are a closed set
        (GOOD_PERSONALITY.replace('"high"', '"medium"'), "pole 'medium' must be one of high, low, none"),
        # only the built-in default may have no instruction
        (GOOD_PERSONALITY.replace('"Be honest."', '"  "'), "instruction is empty"),
        # not TOML at all
        ("code = HX\n", "not valid TOML"),
    ],
)
def test_malformed_user_personality_rejected_naming_file(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(InputError) as caught:
        load_personalities(tmp_path)
    assert str(caught.value).startswith(f"{path}: ")
    assert message in str(caught.value)


def test_duplicate_code_between_user_files(tmp_path: Path) -> None:
    (tmp_path / "a.toml").write_text(GOOD_PERSONALITY)
    (tmp_path / "b.toml").write_text(GOOD_PERSONALITY)
    with pytest.raises(InputError, match="^" + re.escape(f"{tmp_path / 'b.toml'}: duplicate personality code 'HX' ")):
        load_personalities(tmp_path)


def test_missing_personality_dir_is_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="does not exist"):
        load_personalities(tmp_path / "nope")


def test_select_personalities_keeps_canonical_order() -> None:
    assert [p.code for p in select_personalities(["LO", "default", "HA"])] == ["default", "HA", "LO"]
    with pytest.raises(UsageError, match="^unknown personality XX; known: default, HA"):
        select_personalities(["XX"])


def _write_prompt(directory: Path, template: str, placeholders: str = '["query", "document"]') -> None:
    (directory / "label_nocot.toml").write_text(
        f'name = "label_nocot"\ndescription = "d"\nplaceholders = {placeholders}\n'
        f"template = '''{template}'''\n[sampling]\ntemperature = 0.0\n"
    )


@pytest.mark.parametrize(
    ("template", "placeholders", "message"),
    [
        # a declared placeholder the template never uses: the passage would silently be left out
        ("Query: {query}", '["query", "document"]', "template placeholders ['query'] differ"),
        # a placeholder nobody fills would raise at render time, thousands of requests later
        ("{query} {document} {score}", '["query", "document"]', "differ from declared"),
        # positional and attribute fields are not placeholders
        ("{query} {document} {0}", '["query", "document"]', "differ from declared"),
        ("{query.x} {document}", '["query", "document"]', "differ from declared"),
        # placeholders must be names
        ("{query} {document}", '["query", 1]', "placeholders must be a list of strings"),
    ],
)
def test_prompt_placeholders_checked(tmp_path: Path, template: str, placeholders: str, message: str) -> None:
    _write_prompt(tmp_path, template, placeholders)
    with pytest.raises(InputError, match=re.escape(message)) as caught:
        load_prompt(tmp_path / "label_nocot.toml")
    assert str(caught.value).startswith(str(tmp_path / "label_nocot.toml"))


def test_unknown_prompt_name() -> None:
    # No list of names: a name is a file of the shared folder (peras/prompts/), a missing one is named.
    with pytest.raises(InputError, match=re.escape("prompts/nope.toml: cannot read")):
        load_prompt("nope")


@settings(max_examples=200, deadline=None)
@given(text=st.text(), other=st.text(alphabet="{}x ", max_size=12), score=st.integers(0, 3))
def test_render_writes_what_format_map_writes_for_every_prompt(text: str, other: str, score: int) -> None:
    """render fills the template parsed once (peras/prompting.py, _parts); format_map is the definition."""
    for name in FORMAT_PROMPTS:
        template = load_prompt(prompt_file(name))
        values = {key: score if key == "predicted_score" else text + other for key in template.placeholders}
        assert template.render(**values) == template.template.format_map(values), name


def test_render_leaves_a_template_with_a_format_spec_to_format_map() -> None:
    template = PromptTemplate("t", "", ("score", "query"), "{score:03d} {query!r} {{literal}}", {})
    assert template.render(score=7, query="q") == "007 'q' {literal}"
    with pytest.raises(ValueError, match="takes"):
        template.render(score=7)
