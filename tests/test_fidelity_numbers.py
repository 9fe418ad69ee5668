"""The numbers and sets of the papers that docs/fidelity.md says PERAS uses, read from the papers at test time.

Each test finds the paper's own sentence in its text (../shared/papers, whitespace normalised by
tests/paper_text.py:normalise, so a PDF line break inside the sentence does not matter), takes the numbers or names
out of it with a regular expression, and compares them with what the code uses: the study's five models, their
sampling, CoT settings and collections; the learners' settings, the split and the trials; threshold priming's trials,
topic rule, topics, batch settings and penalties; how MP, SC and certainty sample; the regeneration rule. No expected
number is written here: a paper or code that changes fails the test. Every test is `core` but the one that reads the
ingested DL19 (`integration`).
"""

from __future__ import annotations

import inspect
import re

import numpy as np
import polars as pl
import pytest

from tests.paper_text import normalise, paper_text


def sentence(paper: str, pattern: str) -> tuple[str, ...]:
    """The groups of `pattern` in the paper's normalised text: found, and the same wherever the paper repeats it."""
    found = {match.groups() for match in re.finditer(pattern, normalise(paper_text(paper)))}
    assert len(found) == 1, (paper, pattern, found)
    return found.pop()


def defaults(function) -> dict[str, object]:
    """A flow's (or function's) parameter defaults."""
    target = getattr(function, "fn", function)
    return {name: p.default for name, p in inspect.signature(target).parameters.items()}


def option_defaults(command) -> dict[str, object]:
    """A click command's option defaults."""
    return {param.name: param.default for param in command.params}


def preset(model_name: str) -> str:
    """The study's model names are the presets' names in lower case (GPT-4o-mini -> gpt-4o-mini)."""
    return model_name.lower()


def collection(dataset: str) -> str:
    """The study's dataset names as PERAS's collection ids (TRDL19 -> dl19, LLMJudge -> llmjudge)."""
    return dataset.lower().replace("trdl", "dl")


# PS §5.1: the five models and their sampling


@pytest.mark.core
def test_the_five_models_and_their_sampling_are_section_5_1s():
    from peras.models import load_model_presets

    commercial = sentence("peras-study", r"including two commercial models, (\S+) and (\S+), as well as three")
    open_source = sentence("peras-study", r"three open-source models: (\S+), (\S+), and (\S+) \(DeepSeek-Chat\)")
    temperature, top_p = sentence(
        "peras-study", r"we set the model temperature to ([\d.]+), and top\\_p to ([\d.]+), and all other parameters"
    )
    presets = load_model_presets().models
    assert set(presets) == {preset(m.rstrip(",")) for m in commercial + open_source}
    for name, chosen in presets.items():
        assert chosen.params == {"temperature": float(temperature), "top_p": float(top_p)}, name


# PS §5.2.2 (Experiment 2)


@pytest.mark.core
def test_the_learners_settings_are_section_5_2_2s():
    from tasks.classify.learners import LEARNERS
    from tasks.classify.ordinal import OrdinalLogit

    trees, rate, rf_depth, boost_depth, learning_rate = sentence(
        "peras-study",
        r"RF, LGBM, and XGB were configured with (\d+) estimators and a subsampling rate of ([\d.]+); RF used a "
        r"maximum depth of (\d+), while LGBM and XGB employed a maximum depth of (\d+) with a learning rate of "
        r"([\d.]+)\.",
    )
    # Random Forest (and its ablation): scikit-learn's forest has no subsampling rate; its bootstrap sample of 81% of
    # the training part is the subsample (docs/study.md, "Experiment 2").
    for name in ("rf", "rf_no_conf"):
        rf = LEARNERS[name].make(7).get_params()
        assert (rf["n_estimators"], rf["max_depth"], rf["bootstrap"], rf["max_samples"]) == (
            int(trees),
            int(rf_depth),
            True,
            float(rate),
        )
    xgb = LEARNERS["xgboost"].make(7).get_params()
    assert (xgb["n_estimators"], xgb["max_depth"], xgb["learning_rate"], xgb["subsample"]) == (
        int(trees),
        int(boost_depth),
        float(learning_rate),
        float(rate),
    )
    # LightGBM applies subsample only when bagging runs every subsample_freq iterations.
    lgbm = LEARNERS["lightgbm"].make(7).get_params()
    assert (
        lgbm["n_estimators"],
        lgbm["max_depth"],
        lgbm["learning_rate"],
        lgbm["subsample"],
        lgbm["subsample_freq"],
    ) == (int(trees), int(boost_depth), float(learning_rate), float(rate), 1)
    # The ordinal logit: the paper names no penalty; PERAS's ridge of 1.0 on the standardised coefficients.
    ordinal = LEARNERS["ordinal_logit"].make(7)
    assert isinstance(ordinal, OrdinalLogit) and ordinal.l2 == 1.0


@pytest.mark.core
def test_the_split_and_the_trials_are_section_5_2_2s():
    from cli.commands.classify import classify as classify_command
    from cli.commands.study import study as study_command
    from flows.classify import classify
    from flows.study import study

    train, test = sentence("peras-study", r"We split the TRDL21 dataset into (\d+)% training and (\d+)% test sets")
    [trials] = sentence("peras-study", r"the procedure was repeated over (\d+) randomized trials")
    assert int(train) + int(test) == 100
    for given in (defaults(classify), option_defaults(classify_command)):
        assert (given["train_fraction"], given["trials"]) == (int(train) / 100, int(trials))
    assert defaults(study)["classifier_trials"] == option_defaults(study_command)["classifier_trials"] == int(trials)


@pytest.mark.core
def test_rf_without_confidence_is_the_same_forest_on_the_eleven_labels_only():
    from tasks.classify.learners import LEARNERS, fit_predict
    from tasks.classify.tasks import choose_learners
    from tasks.shared.features import FeatureMatrix

    [n_conditions] = sentence(
        "peras-study", r"trains the Random Forest using only the predicted relevance scores from the (\w+) personality"
    )
    assert n_conditions == "eleven"
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 4, size=(40, 11))
    confidences = rng.integers(50, 101, size=(40, 11)).astype(float)
    relevance = np.repeat(np.arange(4), 10)
    matrix = FeatureMatrix([f"p{j}" for j in range(11)], np.ones(11, bool), labels, confidences, relevance, 0)
    assert matrix.features(LEARNERS["rf"].with_confidence).shape == (40, 22)
    without = matrix.features(LEARNERS["rf_no_conf"].with_confidence)
    assert np.array_equal(without, labels)
    assert "rf_no_conf" in choose_learners.fn(None, matrix)
    train, test = np.arange(0, 40, 4), np.setdiff1d(np.arange(40), np.arange(0, 40, 4))
    assert np.array_equal(
        fit_predict("rf_no_conf", 3, train, test, without, relevance),
        fit_predict("rf", 3, train, test, without, relevance),
    )


@pytest.mark.core
def test_the_oracle_is_the_best_single_personality_per_metric_with_its_sd():
    from tasks.classify.results import build_results_table
    from tasks.shared.features import FeatureMatrix, FeatureSet

    # Table 5's Oracle: "the highest score achieved by any single personality condition ... for a given metric";
    # the paper's example takes kappa, QWK and F1 from three different conditions, as here.
    sentence(
        "peras-study",
        r"Oracle denotes the highest score achieved by any single personality condition induced by the LLM under",
    )
    summary = pl.DataFrame(
        [
            ("rf", 0.30, 0.011, 0.62, 0.008, 0.51, 0.009, 50),
            ("single:default", 0.20, 0.003, 0.60, 0.004, 0.35, 0.002, 50),
            ("single:LA", 0.25, 0.002, 0.55, 0.003, 0.38, 0.003, 50),
            ("single:HN", 0.22, 0.004, 0.58, 0.002, 0.41, 0.001, 50),
        ],
        schema=["learner", "kappa_mean", "kappa_sd", "qwk_mean", "qwk_sd", "f1_mean", "f1_sd", "n_trials"],
        orient="row",
    )
    keys = ["default", "LA", "HN"]
    matrix = FeatureMatrix(keys, np.zeros(3, bool), np.zeros((4, 3)), np.zeros((4, 3)), np.arange(4), 0)
    chosen = FeatureSet("personalities", pl.DataFrame())
    table = build_results_table.fn(summary, "clf-1", "dl21", chosen, matrix, ["rf"])
    oracle = next(row for row in table.rows if row.learner == "oracle")
    assert (oracle.mean, oracle.sd, oracle.source) == (
        {"kappa": 0.25, "qwk": 0.60, "f1": 0.41},
        {"kappa": 0.002, "qwk": 0.004, "f1": 0.001},
        {"kappa": "LA", "qwk": "default", "f1": "HN"},
    )
    assert table.cell(oracle, "kappa") == "0.250 (0.002) [LA]"


# PS §5.2.1 and §5.2.2: which model ran with which prompts, which experiment on which collection


@pytest.mark.core
def test_the_models_cot_settings_are_section_5_2_1s():
    from peras.models import load_model_presets

    # The sentence is split by a footnote in the extraction ("...evaluated only under <footnote> the without-CoT").
    *without_only, both_1, both_2, both_3 = sentence(
        "peras-study",
        r"(\S+) and (\S+) were evaluated only under .*?the without-CoT condition, while (\S+), (\S+), and (\S+) were "
        r"evaluated under both\.",
    )
    cot = {name: p.cot for name, p in load_model_presets().models.items()}
    assert cot == {preset(m): ["without"] for m in without_only} | {
        preset(m.rstrip(",")): ["without", "with"] for m in (both_1, both_2, both_3)
    }


@pytest.mark.core
def test_each_experiment_uses_the_papers_collections():
    from cli.commands.classify import classify as classify_command
    from flows.classify import classify
    from tasks.study.grid import CLASSIFIER_COLLECTION, EXPERIMENT_1, EXPERIMENT_2

    [first] = sentence("peras-study", r"We conducted this experiment on three datasets: ([^.]+)\.")
    [second] = sentence("peras-study", r"we conducted Experiment 2 on a separate dataset, (\w+)\.")
    assert tuple(collection(d) for d in re.split(r", | and ", first)) == EXPERIMENT_1
    assert EXPERIMENT_2 == (collection(second),) == (CLASSIFIER_COLLECTION,)
    assert defaults(classify)["collection"] == option_defaults(classify_command)["collection"] == collection(second)


# TP §4 (threshold priming)


@pytest.mark.core
def test_priming_trials_and_topic_rule_are_section_4s():
    from cli.commands.priming import DEFAULT_COLLECTION
    from cli.commands.priming import priming as priming_command
    from cli.commands.study import study as study_command
    from flows.priming import priming
    from flows.study import study
    from tasks.study.grid import PRIMING_COLLECTION

    [per_level] = sentence("threshold-priming", r"there are at least (\d+) documents for each relevance label")
    [trials] = sentence("threshold-priming", r"For each topic, we conduct (\d+) trials\.")
    [dataset] = sentence("threshold-priming", r"We conduct our experiment on the TREC 2019 Deep Learning \((\w+)\)")
    for given in (defaults(priming), option_defaults(priming_command)):
        assert (given["min_per_level"], given["trials"]) == (int(per_level), int(trials))
    assert defaults(priming)["collection"] == DEFAULT_COLLECTION == collection(dataset)  # the command's argument
    assert defaults(study)["priming_trials"] == option_defaults(study_command)["priming_trials"] == int(trials)
    assert collection(dataset) == PRIMING_COLLECTION


@pytest.mark.core
def test_priming_batch_settings_and_llama_penalties_are_section_4s():
    from peras.models import load_model_presets
    from tasks.priming.draws import DEFAULT_BATCH_SETTINGS

    lengths = sentence(
        "threshold-priming",
        r"prologue length \(PL\) of (\d+) and epilogue length \(EL\) of (\d+), PL of (\d+) and EL of (\d+), and PL of "
        r"(\d+) and EL of (\d+)",
    )
    numbers = [int(n) for n in lengths]
    assert tuple(zip(numbers[0::2], numbers[1::2], strict=True)) == DEFAULT_BATCH_SETTINGS
    frequency, presence = sentence(
        "threshold-priming",
        r"For LLaMa-2-13B and LLaMa-2-70B, we set the temperature to 0, top_p to 1, frequency_penalty to (\d+), and "
        r"presence_penalty to (\d+)\.",
    )
    llama = [p for p in load_model_presets().models.values() if p.backend == "vllm"]
    assert llama and all(
        (p.priming.frequency_penalty, p.priming.presence_penalty) == (int(frequency), int(presence)) for p in llama
    )


# The priming study's first table: topic id | query | #rel=0 | #rel=1 | #rel=2 | #rel=3 |
TABLE_1_ROW = re.compile(r"^(\d+) \| ([^|]+?) \| (\d+) \| (\d+) \| (\d+) \| (\d+) \|$", re.M)


@pytest.mark.integration
def test_the_topic_rule_finds_table_1s_topics_with_its_counts_in_dl19(settings, ingested):
    from flows.priming import priming
    from peras.sql import query_frame
    from peras.warehouse import connect
    from tasks.priming.draws import DEFAULT_BATCH_SETTINGS, choose_topics

    table_1 = {row[0]: (row[1], *map(int, row[2:])) for row in TABLE_1_ROW.findall(paper_text("threshold-priming"))}
    assert len(table_1) == 10  # "This filtering process results in a final selection of ten topics"
    ingested("dl19", settings)
    rule = defaults(priming)["min_per_level"]
    chosen = choose_topics.fn(settings, "dl19", None, rule, None, list(DEFAULT_BATCH_SETTINGS))
    assert sorted(chosen) == sorted(table_1)
    with connect(settings.warehouse, read_only=True) as con:
        counts = query_frame(con, "priming/select_topic_levels", {"collection_id": "dl19"})
        queries = dict(con.execute("select query_id, text from queries where collection_id = 'dl19'").fetchall())
    ours = {
        row["query_id"]: (queries[row["query_id"]], *(row[f"n_level_{k}"] for k in range(4)))
        for row in counts.iter_rows(named=True)
        if row["query_id"] in table_1
    }
    # The extraction prints one query with a typographic apostrophe (medicare’s); DL19's text has a straight one.
    assert ours == {q: (text.replace("\u2019", "'"), *levels) for q, (text, *levels) in table_1.items()}


# OC §3.1 and PJ §4.2, §5: how confidence is asked


@pytest.mark.core
def test_mp_sc_and_certainty_sample_as_the_papers_say():
    from peras.prompting import sampling_params
    from tasks.judge.asking import JudgeConfig
    from tasks.pairwise.asking import PairwiseConfig
    from tests.prompt_files import prompt_file

    samples, mp_temperature = sentence(
        "overconfidence",
        r"reduce the number of requests from 100 to (\d+) for efficiency, while keeping the "
        r"temperature at ([\d.]+)\.",
    )
    [sc_temperature] = sentence("overconfidence", r"Model’s temperature is set to (\d+) to ensure the reproducibility")
    top_p, temperature = sentence("personalized-judge", r"with top-p of ([\d.]+) and temperature of ([\d.]+)\.")
    [threshold] = sentence("personalized-judge", r"we use a certainty threshold of (\d+) to classify")
    judge = JudgeConfig(model="m", backend="b")
    pairwise = PairwiseConfig(model="m", backend="b")
    assert (judge.n_samples, judge.sampling_temperature) == (int(samples), float(mp_temperature))
    assert (pairwise.mp_samples, pairwise.mp_temperature) == (int(samples), float(mp_temperature))
    for prompt in ("self_pairwise", "self_nocot", "self_cot"):
        assert sampling_params(prompt_file(prompt))["temperature"] == float(sc_temperature), prompt
    assert (judge.certainty_temperature, judge.certainty_top_p, judge.certainty_threshold) == (
        float(temperature),
        float(top_p),
        float(threshold),
    )
    for prompt in ("pairwise_certainty", "pairwise_tie", "certainty_nocot", "certainty_cot"):
        assert sampling_params(prompt_file(prompt)) == {"temperature": float(temperature), "top_p": float(top_p)}, (
            prompt
        )


# PJ §4.2: regenerations


@pytest.mark.core
def test_regenerations_are_at_most_four_and_sample_at_0_7():
    from tasks.engine.spec import MAX_REGENERATIONS, regeneration_params

    top_p, temperature = sentence("personalized-judge", r"with top-p of ([\d.]+) and temperature of ([\d.]+)\.")
    [times] = sentence("personalized-judge", r"We ask the model regenerate at most (\d+) times")
    assert int(times) == MAX_REGENERATIONS
    greedy = {"temperature": 0.0, "top_p": 1.0}
    assert regeneration_params(greedy, 0) is greedy  # the request as asked
    # A greedy request would return the same text again: its regenerations sample at the PJ study's temperature.
    assert [regeneration_params(greedy, k) for k in (1, 2)] == [
        {"temperature": float(temperature), "top_p": 1.0, "seed": 1000},
        {"temperature": float(temperature), "top_p": 1.0, "seed": 2000},
    ]
    # A sampling request (the PJ study's own: top-p 0.95, temperature 0.7) keeps its parameters, with a new seed.
    sampled = {"temperature": float(temperature), "top_p": float(top_p), "seed": 3}
    assert regeneration_params(sampled, 4) == sampled | {"seed": 4003}
