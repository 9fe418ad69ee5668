"""The BFI-2 fidelity check (`peras personas check`) against a scripted OpenAI-compatible server."""

from __future__ import annotations

import random
import re

import duckdb
import pytest

from flows.personas import personas_check
from peras.bfi2 import BFI2_ITEMS, load_items, parse_answer
from peras.errors import InputError
from peras.prompting import load_personalities
from support.fake_openai import FakeOpenAI
from tasks.personas.prompt import build_item_messages
from tests.conftest import SHARED_DATA
from tests.helpers import run_cli

ITEMS = {item.statement: item for item in load_items()}
PERSONALITIES = load_personalities()
STATEMENT = re.compile(r"^I am someone who (.+)$", re.M)


def asked(request: dict) -> tuple[str, int, int]:
    """Which personality, item (by id) and seed a request is about (seed 0: a greedy request)."""
    content = request["messages"][-1]["content"]
    personality = next((p for p in PERSONALITIES if p.instruction and content.startswith(p.instruction)), None)
    item = ITEMS[STATEMENT.search(content).group(1)]
    return (personality.code if personality else "default", item.item_id, int(request.get("seed") or 0))


def trait_like(request: dict) -> str:
    """A persona that answers like its trait: its own domain's items at its pole, the rest near neutral, with a
    little seed-dependent noise so that each score has a spread; 'HA' answers at random when `random_ha`."""
    code, item_id, seed = asked(request)
    item = load_items()[item_id - 1]
    noise = random.Random(f"{code} {item_id} {seed}").choice((-1, 0, 0, 1))
    personality = next(p for p in PERSONALITIES if p.code == code)
    if personality.trait == item.domain:
        agree = personality.pole == "high"
        score = 5 + min(0, noise) if agree else 1 + max(0, noise)  # 4-5 or 1-2
        answer = score if item.keyed == "+" else 6 - score
    else:
        answer = 3 + noise
    return str(answer)


def random_ha(request: dict) -> str:
    """As trait_like, except High Agreeableness answers every item at random (seeded by item and seed)."""
    code, item_id, seed = asked(request)
    if code == "HA":
        return str(random.Random(item_id * 1000 + seed).randint(1, 5))
    return trait_like(request)


def use(settings, server: FakeOpenAI):
    settings.base_urls = [server.base_url]
    settings.model = "fake-model"
    return settings


def rows(settings, sql: str) -> list[tuple]:
    con = duckdb.connect(str(settings.warehouse), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


@pytest.mark.core
def test_shipped_items_are_the_shared_file():
    assert BFI2_ITEMS.read_bytes() == (SHARED_DATA / "bfi2" / "items.tsv").read_bytes()
    items = load_items()
    assert (len(items), items[0].statement, items[-1].keyed) == (60, "is curious about many different things.", "-")


@pytest.mark.core
def test_a_malformed_items_file_is_refused(tmp_path):
    broken = tmp_path / "items.tsv"
    lines = BFI2_ITEMS.read_text(encoding="utf-8").splitlines()
    broken.write_text("\n".join([*lines[:5], lines[5].replace("\t+\t", "\t-\t"), *lines[6:]]) + "\n")
    with pytest.raises(InputError, match="domain Openness: expected 12 items in 3 facets, 6 keyed"):
        load_items(broken)


@pytest.mark.core
@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("4", 4),
        (" 5.\n", 5),  # a trailing full stop and whitespace are allowed
        ("1", 1),
        ("0", None),  # outside the scale
        ("6", None),
        ("4 - Agree a little", None),  # a label is not a number alone
        ("I would say 3", None),
        ("3 or 4", None),
        ("", None),
    ],
)
def test_an_answer_is_one_number_1_to_5(text, value):
    parsed = parse_answer(text)
    assert (parsed.value, parsed.ok) == (value, value is not None)


@pytest.mark.core
def test_the_item_prompt_places_the_instruction_as_judging_does():
    ha = next(p for p in PERSONALITIES if p.code == "HA")
    [message] = build_item_messages(ha, "is curious about many different things.")
    assert message["content"].startswith(ha.instruction + "\n\nHere is a characteristic that may or may not apply")
    assert "\nI am someone who is curious about many different things.\n1 = Disagree strongly\n" in message["content"]
    [plain] = build_item_messages(PERSONALITIES[0], "is curious about many different things.")
    assert plain["content"].startswith("Here is a characteristic")


@pytest.mark.integration
def test_scores_are_reverse_keyed_means(settings):
    """Every persona answers 1 + item_id % 5. Openness items 1-12 are keyed + + - - per facet, so the scores are
    2 3 (6-4) (6-5) | 1 2 (6-3) (6-4) | 5 1 (6-2) (6-3): facets 8/4, 8/4, 13/4 and domain 29/12."""
    with FakeOpenAI(lambda request: str(1 + asked(request)[1] % 5)) as server:
        personas_check(samples=2, settings=use(settings, server))
    facets = rows(
        settings,
        "select facet, greedy_score, mean_score, sd_score, n_samples from persona_facet_scores "
        "where personality = 'HO' and domain = 'Openness' order by facet",
    )
    assert facets == [
        ("Aesthetic Sensitivity", 2.0, 2.0, 0.0, 2),
        ("Creative Imagination", 3.25, 3.25, 0.0, 2),
        ("Intellectual Curiosity", 2.0, 2.0, 0.0, 2),
    ]
    [(greedy, mean)] = rows(
        settings,
        "select greedy_score, mean_score from persona_domain_scores where personality = 'HO' and domain = 'Openness'",
    )
    assert (greedy, mean) == (pytest.approx(29 / 12), pytest.approx(29 / 12))
    assert rows(settings, "select count(*) from persona_domain_matrix") == [(11,)]


def even_odd(request: dict) -> str:
    """Every item scored (after reverse-keying) by the sample's seed: HO 5 for an even seed, 4 for an odd one;
    every other personality 2 and 3."""
    code, item_id, seed = asked(request)
    score = (5 if seed % 2 == 0 else 4) if code == "HO" else (2 if seed % 2 == 0 else 3)
    return str(score if load_items()[item_id - 1].keyed == "+" else 6 - score)


@pytest.mark.integration
def test_effect_size_and_interval_by_hand(settings):
    """Two samples (seeds 43 and 44): HO's Openness scores 4 and 5, default's 3 and 2. Difference 4.5 - 2.5 = 2,
    each side's sd sqrt(0.5), so pooled sd sqrt(0.5) and d = 2 / sqrt(0.5) = 2.8284; the interval's half-width is
    1.96 sqrt(4 / 4 + 8 / 8) = 2.7719, so effect_ci_low = 0.0566 < 0.5: too few samples to pass."""
    with FakeOpenAI(even_odd) as server:
        personas_check(samples=2, settings=use(settings, server))
    [row] = rows(
        settings,
        "select upper_score, lower_score, difference, pooled_sd, effect_size, effect_ci_low, effect_ci_high, is_pass "
        "from persona_fidelity where trait = 'Openness' and comparison = 'high_vs_default'",
    )
    expected = (4.5, 2.5, 2.0, 0.5**0.5, 2.8284271, 0.0565685, 5.6002857, False)
    assert row[:7] == pytest.approx(expected[:7], abs=1e-6)
    assert row[7] is False
    greedy = rows(settings, "select personality, greedy_score from persona_domain_scores where domain = 'Openness'")
    assert dict(greedy)["HO"] == 5.0 and dict(greedy)["default"] == 2.0


@pytest.mark.integration
def test_a_persona_that_answers_like_its_trait_passes_and_a_random_one_fails(settings):
    with FakeOpenAI(random_ha) as server:
        summary = personas_check(samples=4, settings=use(settings, server))
    verdicts = {(r["trait"], r["comparison"]): r["is_pass"] for r in summary["fidelity"]}
    assert len(verdicts) == 10
    assert all(r["effect_size"] is not None for r in summary["fidelity"])  # every side's samples vary
    assert [key for key, passed in verdicts.items() if not passed] == [("Agreeableness", "high_vs_default")]
    faithful = rows(
        settings,
        "select personality, is_pass from persona_fidelity_by_personality where personality in ('HA', 'LA', 'default')"
        " order by personality",
    )
    assert faithful == [("HA", False), ("LA", True), ("default", None)]


@pytest.mark.integration
def test_a_rerun_sends_nothing(settings, capsys):
    with FakeOpenAI(trait_like) as server:
        use(settings, server)
        args = ["personas", "check", "--samples", "2", "--base-url", server.base_url, "--model", "fake-model",
                "--warehouse", str(settings.warehouse)]  # fmt: skip
        first = run_cli(capsys, *args)
        assert first.exit_code == 0, first.err
        n_requests = len(server.requests)
        again = run_cli(capsys, *args)
        assert again.exit_code == 0, again.err
        assert len(server.requests) - n_requests == 1  # the endpoint check (GET /v1/models) alone
    assert "1,980 answers (1,980 new; 1,980 requests sent, 0 reused), 0 failed" in first.out
    assert "1,980 answers (0 new; 0 requests sent, 0 reused), 0 failed" in again.out
    assert "10 of 10 comparisons pass" in again.out
    assert rows(settings, "select count(*), count(distinct request_id) from persona_answers") == [(1980, 1980)]


@pytest.mark.integration
def test_an_unknown_set_is_a_usage_error(capsys, settings):
    result = run_cli(capsys, "personas", "check", "--set", "mine", "--warehouse", str(settings.warehouse))
    assert result.exit_code == 2
    assert "no personality set 'mine' in the warehouse (published, or that version)" in result.err


def unreadable_twice(request: dict) -> str:
    """HA's greedy answer to item 1 is never a number; to item 2 only its regeneration (seed 1000+) is."""
    code, item_id, seed = asked(request)
    if code == "HA" and item_id == 1 and seed % 1000 == 0:
        return "I agree."
    if code == "HA" and item_id == 2 and seed == 0:
        return "4 - Agree a little"
    return "3"


@pytest.mark.integration
def test_an_unreadable_answer_is_regenerated_then_recorded(settings):
    with FakeOpenAI(unreadable_twice) as server:
        summary = personas_check(samples=2, settings=use(settings, server))
        asked_again = [asked(r.body)[2] for r in server.requests if r.body and asked(r.body)[:2] == ("HA", 1)]
    assert sorted(asked_again) == [0, 43, 44, 1000, 2000, 3000, 4000]  # greedy, 4 regenerations; 2 samples
    failures = rows(settings, "select personality, item_id, sample_index, status, reason from persona_answers "
                    "where status != 'ok'")  # fmt: skip
    assert failures == [("HA", 1, 0, "parse_failure", "not a single number 1-5: 'I agree.'")]
    assert rows(settings, "select answer from persona_answers where personality = 'HA' and item_id = 2 "
                "and sample_index = 0") == [(3,)]  # fmt: skip
    assert summary["n_failures"] == 1  # 1 of 180 HA answers: under the gate's 5%, published
    assert rows(settings, "select n_items from persona_sample_scores where personality = 'HA' "
                "and domain = 'Openness' and sample_index = 0") == [(11,)]  # fmt: skip


@pytest.mark.integration
def test_the_report_shows_the_heatmap_and_the_verdicts(settings, tmp_path):
    from flows.report import report
    from peras.warehouse import open_migrated
    from tests.metrics_fixtures import Judgment, load_judgments

    with open_migrated(settings.warehouse) as con:  # the report needs a judged run; two judgments will do
        load_judgments(con, [Judgment("r1", "default", False, "none", "q1", f"d{i}", i, i, None) for i in (0, 3)])
    with FakeOpenAI(random_ha) as server:
        personas_check(samples=4, settings=use(settings, server))
    summary = report(output=str(tmp_path), settings=settings)
    assert (tmp_path / "figures" / "personas-personas-builtin-fake-model.png").stat().st_size > 10_000
    html = summary.path.read_text(encoding="utf-8")
    section = html.split('<section id="personas">')[1].split("</section>")[0]
    assert "set builtin, model fake-model, 9 of 10 comparisons pass</h3>" in section
    assert "BFI-2 domain scores · personas-builtin-fake-model · fake-model" in section
    verdicts = re.findall(r"<tr><td>(\w+)</td><td>([\w ]+)</td>.*?<td>(pass|FAIL)</td></tr>", section)
    assert len(verdicts) == 10
    assert [v for v in verdicts if v[2] == "FAIL"] == [("Agreeableness", "high vs default", "FAIL")]


@pytest.mark.integration
def test_a_failure_asked_again_is_replaced_and_kept_in_history(settings):
    with FakeOpenAI(unreadable_twice) as server:
        first = personas_check(samples=2, settings=use(settings, server))
    with FakeOpenAI(lambda request: "3") as fixed:
        again = personas_check(samples=2, retry_failed=True, settings=use(settings, fixed))
        asked_now = sorted(asked(r.body) for r in fixed.requests if r.body)
    assert (first["n_failures"], again["n_failures"]) == (1, 0)
    assert asked_now == [("HA", 1, 0)]  # only the stored failure is asked again
    assert rows(settings, "select answer, status from persona_answers where personality = 'HA' and item_id = 1 "
                "and sample_index = 0") == [(3, "ok")]  # fmt: skip
    history = rows(settings, "select personality, item_id, sample_index, answer, status, reason, why "
                   "from persona_answer_history")  # fmt: skip
    assert history == [
        ("HA", 1, 0, None, "parse_failure", "not a single number 1-5: 'I agree.'", "failure asked again")
    ]
