"""The batch prompt rendered exactly, and the reading of JSON batch answers."""

# The prompt wording is kept verbatim, one paragraph per line:
# ruff: noqa: E501

from __future__ import annotations

from pathlib import Path

import pytest

from peras.errors import InputError
from peras.prompting import load_prompt, select_personalities
from tasks.priming.asking import BatchConfig
from tasks.priming.prompt import BatchParse, build_batch_messages, load_batch_prompt, parse_batch_answer
from tests.prompt_files import prompt_file

pytestmark = pytest.mark.core

# Typed out again here (not read from peras/prompts) so that a drift is caught.
BATCH_PROMPT = """Given a query and a list of passages, you must provide a score on an integer scale of 0 to 3 for each passage with the following meanings:
0 = represent that the passage has nothing to do with the query,
1 = represents that the passage seems related to the query but does not answer it,
2 = represents that the passage has some answer for the query, but the answer may be a bit unclear, or hidden amongst extraneous information,
3 = represents that the passage is dedicated to the query and contains the exact answer.
Important Instruction: Assign category 1 if the passage is somewhat related to the topic but not completely, category 2 if passage presents something very important related to the entire topic but also has some extra information and category 3 if the passage only and entirely refers to the topic. If none of the above satisfies give it category 0.
Split this problem into steps: Consider the underlying intent of the search. Measure how well the content matches a likely intent of the query (M). Measure how trustworthy the passage is (T). Consider the aspects above and the relative importance of each, and decide on a final score (O).
Example:
Query: what is the capital of australia
Passages:
[example-1] Australia's federal parliament has met in Canberra since 1927. The country's largest cities are Sydney and Melbourne, and its best-known building is the Sydney Opera House.
[example-2] The kangaroo is a marsupial that moves by hopping on its powerful hind legs and carries its young in a pouch.
[example-3] Canberra is the capital city of Australia. It was chosen in 1908 as a compromise between Sydney and Melbourne and was built for the purpose.
[example-4] Forum post: pretty sure the capital of Australia is Sydney, it's the biggest city after all.
Answer: {"example-1": 2, "example-2": 0, "example-3": 3, "example-4": 1}
Now score the following passages in the same way.
Query: how long to boil an egg {soft}
Passages:
[7067032] Six minutes in boiling water gives a runny yolk.
[8182161] Eggs are laid by hens; {braces} stay as written.
[99] Boil for ten minutes for a hard yolk.
Answer with one JSON object that maps each passage id to its score, with exactly these ids as keys: 7067032, 8182161, 99. Each score must be an integer from 0 to 3. Only provide the JSON object, without any code or reasoning."""
HE = "You are a person with very high Extraversion. You love being around people, are full of energy, and speak with enthusiasm and confidence. When responding, use vivid, expressive language, initiate topics, ask engaging questions, and inject positive emotion and spontaneity. Don't hesitate to share anecdotes or laugh out loud in your text."
QUERY = "how long to boil an egg {soft}"
PASSAGES = [
    ("7067032", "Six minutes in boiling water gives a runny yolk."),
    ("8182161", "Eggs are laid by hens; {braces} stay as written."),
    ("99", "Boil for ten minutes for a hard yolk."),
]
IDS = ["7067032", "8182161", "99"]
EXAMPLE_IDS = ("example-1", "example-2", "example-3", "example-4")
EXAMPLE_ANSWER = '{"example-1": 2, "example-2": 0, "example-3": 3, "example-4": 1}'


def test_batch_prompt_is_rendered_verbatim_for_default():
    default = select_personalities(["default"])[0]
    assert build_batch_messages(default, QUERY, PASSAGES) == [{"role": "user", "content": BATCH_PROMPT}]


def test_personality_instruction_comes_first_then_a_blank_line():
    he = select_personalities(["HE"])[0]
    assert build_batch_messages(he, QUERY, PASSAGES) == [{"role": "user", "content": f"{HE}\n\n{BATCH_PROMPT}"}]


def test_intent_and_trust_steps_are_worded_as_in_the_cot_label_prompt():
    steps = next(line for line in BATCH_PROMPT.splitlines() if line.startswith("Split this problem into steps:"))
    assert steps in load_prompt("label_cot").template.splitlines()
    assert "(M)" in steps and "(T)" in steps


def test_example_ids_are_loaded_and_a_batch_using_one_is_refused():
    prompt = load_batch_prompt()
    assert prompt.example_ids == EXAMPLE_IDS
    with pytest.raises(ValueError, match="passage id example-2 is an id of the batch prompt's example"):
        prompt.render(QUERY, [*PASSAGES, ("example-2", "a passage whose id is the example's")])


def test_sampling_is_greedy_and_penalties_are_added_only_when_given():
    prompt = load_batch_prompt()
    assert prompt.sampling == {"temperature": 0.0, "top_p": 1.0}
    plain = BatchConfig("m", "vllm", prompt.sampling)
    llama = BatchConfig("m", "vllm", prompt.sampling, frequency_penalty=1.0, presence_penalty=0.0)
    assert plain.params() == {"temperature": 0.0, "top_p": 1.0}
    assert llama.params() == {"temperature": 0.0, "top_p": 1.0, "frequency_penalty": 1.0, "presence_penalty": 0.0}


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        # a placeholder the file does not declare
        (("{ids}", "{ids} {extra}"), "template placeholders ['extra', 'ids', 'passages', 'query'] differ"),
        # a passage line without its text
        (("'''[{doc_id}] {text}'''", "'''[{doc_id}]'''"), "passage placeholders ['doc_id'] differ"),
        # a renamed file
        (('name = "batch_umbrela"', 'name = "batch"'), "name is 'batch', expected 'batch_umbrela'"),
        # the example's ids not declared
        (('example_ids = ["example-1", "example-2", "example-3", "example-4"]\n', ""), "missing key example_ids"),
        # an example id the example does not list as a passage
        (('"example-4"]', '"example-5"]'), "the example lists no passage '[example-5]'"),
        # an id twice
        (('"example-4"]', '"example-3"]'), "example_ids repeat an id"),
        # an id in brackets would not survive the parser's key normalisation
        (('"example-4"]', '"[example-4]"]'), "example_ids must be two or more ids"),
        # the example's answer misses an id
        ((', "example-4": 1}}', "}}"), "the example's answer does not read as an answer: missing id example-4"),
        # a score the parser would refuse
        (
            ('"example-3": 3', '"example-3": 5'),
            "the example's answer does not read as an answer: score of example-3 out of range 0-3: 5",
        ),
        # single braces: the answer becomes a placeholder of the template
        (('{{"example-1"', '{"example-1"'), "template: "),
    ],
)
def test_a_broken_template_is_refused_on_load(tmp_path: Path, edit, message):
    text = prompt_file("batch_umbrela").read_text(encoding="utf-8")
    assert edit[0] in text
    path = tmp_path / "batch_umbrela.toml"
    path.write_text(text.replace(edit[0], edit[1], 1), encoding="utf-8")
    with pytest.raises(InputError, match=message.replace("[", r"\[").replace("]", r"\]")):
        load_batch_prompt(path)


OK = BatchParse((2, 0, 3), True, "ok")


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        # plain JSON
        ('{"7067032": 2, "8182161": 0, "99": 3}', OK),
        # inside a code fence
        ('```json\n{"7067032": 2, "8182161": 0, "99": 3}\n```', OK),
        # prose before and after the object
        ('Here are the scores:\n{"7067032": 2, "8182161": 0, "99": 3}\nHope this helps {not json}', OK),
        # keys in another order, with whitespace and the [brackets] of the listing
        ('{"99": 3, " [7067032] ": 2, "[8182161]": 0}', OK),
        # a digit as a string and an integral float both count
        ('{"7067032": "2", "8182161": 0.0, "99": 3}', OK),
        # a closed reasoning block is dropped
        ('<think>{"7067032": 1}</think>{"7067032": 2, "8182161": 0, "99": 3}', OK),
        # a stray brace before the object is skipped
        ('Scores {as asked}: {"7067032": 2, "8182161": 0, "99": 3}', OK),
        # an id missing
        ('{"7067032": 2, "99": 3}', BatchParse(None, False, "missing id 8182161")),
        # an id that is not in the batch
        ('{"7067032": 2, "8182161": 0, "99": 3, "100": 1}', BatchParse(None, False, "unexpected id 100")),
        # the same id twice
        ('{"7067032": 2, "8182161": 0, "99": 3, "99": 1}', BatchParse(None, False, "duplicate id 99")),
        # score 4
        ('{"7067032": 4, "8182161": 0, "99": 3}', BatchParse(None, False, "score of 7067032 out of range 0-3: 4")),
        # a negative score
        ('{"7067032": 2, "8182161": -1, "99": 3}', BatchParse(None, False, "score of 8182161 out of range 0-3: -1")),
        # a fraction
        ('{"7067032": 2.5, "8182161": 0, "99": 3}', BatchParse(None, False, "score of 7067032 not an integer: 2.5")),
        # a word
        (
            '{"7067032": "high", "8182161": 0, "99": 3}',
            BatchParse(None, False, 'score of 7067032 not an integer: "high"'),
        ),
        # a boolean is not a score
        ('{"7067032": true, "8182161": 0, "99": 3}', BatchParse(None, False, "score of 7067032 not an integer: true")),
        # null
        ('{"7067032": null, "8182161": 0, "99": 3}', BatchParse(None, False, "score of 7067032 not an integer: null")),
        # the scores nested one level down
        ('{"scores": {"7067032": 2, "8182161": 0, "99": 3}}', BatchParse(None, False, "missing id 7067032")),
        # a list of scores instead of an object
        ("[2, 0, 3]", BatchParse(None, False, "no JSON object")),
        # no JSON at all
        ("The first passage is relevant (2), the others not.", BatchParse(None, False, "no JSON object")),
        # JSON cut off by the token limit
        ('{"7067032": 2, "8182161": 0, "9', BatchParse(None, False, "no JSON object")),
        # a Python dict, not JSON
        ("{'7067032': 2, '8182161': 0, '99': 3}", BatchParse(None, False, "no JSON object")),
        # empty
        ("", BatchParse(None, False, "no JSON object")),
    ],
)
def test_batch_answers(answer, expected):
    assert parse_batch_answer(answer, IDS) == expected
    assert parse_batch_answer(answer, IDS, EXAMPLE_IDS) == expected  # no answer above repeats the example


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        # the example's answer repeated, then the real one: the example's is passed over
        (f'{EXAMPLE_ANSWER}\n{{"7067032": 2, "8182161": 0, "99": 3}}', OK),
        # part of the example's answer repeated (keys all the example's) is passed over too
        ('{"[example-3]": 3} then {"7067032": 2, "8182161": 0, "99": 3}', OK),
        # only the example's answer: never read as the batch's scores
        (EXAMPLE_ANSWER, BatchParse(None, False, "only the example's JSON object")),
        # example ids mixed into the batch's answer: an id the batch does not have
        ('{"7067032": 2, "8182161": 0, "99": 3, "example-1": 2}', BatchParse(None, False, "unexpected id example-1")),
        # an empty object is not the example's
        ('{} {"7067032": 2, "8182161": 0, "99": 3}', BatchParse(None, False, "missing id 7067032")),
    ],
)
def test_the_examples_answer_is_never_read_as_scores(answer, expected):
    assert parse_batch_answer(answer, IDS, EXAMPLE_IDS) == expected


def test_the_engines_parser_passes_over_the_example():
    from tasks.priming.asking import batch_parser

    parsed = batch_parser(tuple(IDS))(f'{EXAMPLE_ANSWER} {{"7067032": 2, "8182161": 0, "99": 3}}')
    assert (parsed.value, parsed.ok, parsed.reason) == ((2, 0, 3), True, "ok")
