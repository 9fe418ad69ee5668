"""Issue 53 item 2: every qrels and run export carries its provenance as an ir_metadata block (side file
`<file>.ir_metadata`: ir_measures cannot skip a `#` line), and an export replayed from the warehouse is the same bytes.
"""

from __future__ import annotations

import hashlib
import json

import ir_measures
import pytest

import peras
from peras.warehouse import open_migrated
from tasks.engine.endpoint import Endpoint
from tasks.evaluate.provenance import NOT_REPORTED, model_digest, prompt_hashes, prompt_names, seeds
from tasks.judge.runs import judge_config, run_parameters
from tasks.shared.ir_metadata import END, START, header_text, read_header, side_path, source_commit
from tests.prompt_files import prompt_file
from tests.test_evaluate import cli, judged  # noqa: F401 - the fixture

EMBEDDED = "qwen2.5-coder-0.5b-instruct-q4_k_m"
SERVED_SHA = "6b3e9725dba9173adf0f3179b1503899e4a01f6f36b009f9ecffa203cd2defb5"


def sha(name: str) -> str:
    return hashlib.sha256(prompt_file(name.removesuffix(".toml")).read_bytes()).hexdigest()


@pytest.fixture
def embedded_run(judged):  # noqa: F811 - the fixture imported above
    """The scripted run recorded as the embedded model's, its label requests with a seed and a grammar."""
    config = judge_config(Endpoint(["http://127.0.0.1:1"], EMBEDDED, "llama.cpp", "llama.cpp", "grammar"), 10)
    found = {"answer_format": "llama.cpp", "answer_probe": "grammar", "probe_requests": 0}  # the claim adds them
    run_params = run_parameters(config, ["verbalized"]) | found
    label_params = config.label_params(False, "verbalized") | {"seed": 7}
    with open_migrated(judged.warehouse) as con:
        con.execute(
            "update judge_runs set model = ?, backend = 'llama.cpp', params = ? where run_id = 'run-scripted'",
            [EMBEDDED, json.dumps(run_params)],
        )
        con.execute("update llm_requests set params = ?", [json.dumps(label_params)])
    return judged, run_params, label_params


@pytest.mark.integration
def test_a_qrels_export_names_its_judge_run_and_replays_to_the_same_bytes(embedded_run, tmp_path, capsys):
    settings, run_params, label_params = embedded_run
    first, second = tmp_path / "a" / "ha.qrels", tmp_path / "b" / "ha.qrels"
    for out in (first, second):
        result = cli(capsys, settings, "export-qrels", "--run", "scripted", "--personality", "HA", "--output", str(out))
        assert result.exit_code == 0, result.err
    for suffix in ("", ".confidence.tsv", ".ir_metadata"):
        assert first.with_name(first.name + suffix).read_bytes() == second.with_name(second.name + suffix).read_bytes()
    text = side_path(first).read_text()
    assert (text.splitlines()[0], text.splitlines()[-1]) == (START, END)
    header = read_header(text)
    judge = header["method"]["judge"]
    assert (header["schema-version"], header["tag"]) == ("0.1", "scripted-HA")
    assert (judge["model"], judge["backend"], judge["digest"]) == (
        EMBEDDED, "llama.cpp", f"sha256:{SERVED_SHA} (the embedded model's pinned file)"
    )  # fmt: skip
    assert (judge["personality"], judge["cot"], judge["confidence method"]) == ("HA", False, "verbalized")
    assert judge["prompt files"] == {n: sha(n) for n in ("label_nocot.toml", "confidence.toml")}
    assert judge["label request parameters"] == [label_params]
    assert judge["answer constraint"] == {"answer_format": "llama.cpp", "answer_probe": "grammar"}
    assert (judge["seeds"], judge["run parameters"]) == ([7], run_params)
    assert header["data"] == {"test collection": {"name": "sample", "subset": None}, "qrels": "LLM labels alone"}
    assert header["implementation"]["source"]["commit"] == source_commit()
    assert header["implementation"]["executable"]["cmd"] == (
        "peras export-qrels --run scripted --personality HA --no-cot --confidence-method verbalized --output FILE"
    )
    assert header["platform"]["software"]["libraries"]["python"][0] == f"peras=={peras.__version__}"
    # the qrels file itself stays as ir_measures (and trec_eval) read it
    assert len(list(ir_measures.read_trec_qrels(str(first)))) == 40


@pytest.mark.integration
def test_a_filled_majority_export_says_so(judged, tmp_path, capsys):  # noqa: F811 - the fixture imported above
    out = tmp_path / "filled.qrels"
    args = ["--run", "scripted", "--aggregate", "majority", "--fill-from-human", "--output", str(out)]
    assert cli(capsys, judged, "export-qrels", *args).exit_code == 0
    header = read_header(side_path(out).read_text())
    judge = header["method"]["judge"]
    assert (header["tag"], judge["aggregate"], "personality" in judge) == ("scripted-majority", "majority", False)
    assert (judge["digest"], judge["seeds"], judge["label request parameters"]) == (NOT_REPORTED, [], [{}])
    assert header["data"]["qrels"] == "human qrels, LLM labels where they judge nothing"


@pytest.mark.integration
def test_built_runs_carry_their_bm25_settings(settings, tmp_path, capsys, ingested):
    ingested("sample", settings)
    out = tmp_path / "runs"
    result = cli(capsys, settings, "build-runs", "--collection", "sample", "--output-dir", str(out), "--depth", "5")
    assert result.exit_code == 0, result.err
    assert len(result.out.splitlines()) == 11 and len(list(out.glob("*.run.ir_metadata"))) == 11
    path = out / "bm25-lucene-k0.9-b0.4-stem.run"
    header = read_header(side_path(path).read_text())
    assert header["tag"] == "bm25-lucene-k0.9-b0.4-stem"
    assert header["method"]["retrieval"] == [
        {"name": "bm25-lucene-k0.9-b0.4-stem", "method": "bm25s.BM25(method='lucene')", "k1": 0.9, "b": 0.4,
         "tokenizer": "bm25s.tokenize", "stemmer": "PyStemmer english (Snowball)", "stopwords": "bm25s 'en'"}
    ]  # fmt: skip
    assert header["implementation"]["executable"]["cmd"] == (
        "peras build-runs --collection sample --depth 5 --output-dir DIR"
    )
    assert {r.query_id for r in ir_measures.read_trec_run(str(path))} == {"s1", "s2", "s3", "s4", "s5"}


def test_the_block_reads_back_as_repro_eval_reads_it():
    text = header_text("t", {"method": {"automatic": True, "grammar": 'root ::= "0" | "1"\nx'}})
    assert text.splitlines()[:4] == [START, "# schema-version: '0.1'", "# run-version: '1.0'", "# tag: t"]
    assert read_header(text) == {
        "schema-version": "0.1", "run-version": "1.0", "tag": "t",
        "method": {"automatic": True, "grammar": 'root ::= "0" | "1"\nx'},
    }  # fmt: skip
    assert read_header("q1 0 d1 1\n") == {}


@pytest.mark.parametrize(
    ("source", "cot", "method", "names"),
    [
        ("llm", False, "verbalized", ["label_nocot", "confidence"]),  # label, then the post-hoc confidence
        ("llm", True, "logprob", ["label_cot"]),  # the label request's log-probabilities
        ("llm", True, "certainty", ["certainty_cot"]),  # one joint request
        ("import", False, "given", []),  # asked elsewhere
    ],
)
def test_prompt_files_follow_the_cot_setting_and_method(source, cot, method, names):
    assert prompt_names(source, cot, method) == names


def test_digests_and_seeds():
    assert model_digest("m", "vllm", {"model_revision": "abc"}) == "abc"
    assert model_digest("m", "vllm", {}) == NOT_REPORTED
    assert seeds([{"seed": 3, "x": [{"seed": 1}, {"seed": 3}]}, {"y": {"seed": 0}}]) == [0, 1, 3]


def test_the_hashes_name_the_judge_s_own_prompt_files_as_well_as_the_shared_ones():
    names = ["label_cot", "self_cot", "certainty_nocot"]  # peras/prompts/ and tasks/judge/prompts/
    assert prompt_hashes(names) == {f"{name}.toml": sha(f"{name}.toml") for name in names}
