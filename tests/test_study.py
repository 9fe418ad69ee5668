"""`peras study` through the CLI against scripted servers: the dry run's plan is what the servers then receive."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import duckdb
import pytest

from peras.errors import UsageError
from peras.models import MODELS_FILE, load_model_presets
from peras.prompting import sampling_params
from support.fake_openai import FakeOpenAI
from tasks.study.estimate import CHARS_PER_TOKEN, Estimate, EstimateRow, estimate_tokens, format_estimate
from tests.conftest import SHARED_DATA
from tests.helpers import run_cli

PASSAGE_LINE = re.compile(r"^\[(\S+)\] ", re.M)
COT_MARK = "Split this problem into steps"  # only the CoT label prompt says it


def distinct_labels(request: dict) -> str:
    """Labels that differ between the settings (1 without CoT, 2 with), so no confidence request is shared."""
    content = str(request["messages"][-1]["content"])
    if "\nPassages:\n" in content:  # a priming batch: every passage of the batch (after the example's) scored 1
        return json.dumps(dict.fromkeys(PASSAGE_LINE.findall(content.rsplit("\nPassages:\n", 1)[1]), 1))
    if "please give a confidence score" in content:
        return "80"
    return "2" if COT_MARK in content else "1"


@pytest.fixture(scope="module")
def dl19_file(tmp_path_factory, ingested) -> Path:
    from peras.settings import load_settings

    directory = tmp_path_factory.mktemp("study-dl19")
    settings = load_settings(warehouse=directory / "peras.duckdb", data_dir=SHARED_DATA)
    ingested("dl19", settings)
    return settings.warehouse


@pytest.fixture
def warehouse(tmp_path, dl19_file) -> Path:
    path = tmp_path / "peras.duckdb"
    shutil.copyfile(dl19_file, path)
    return path


def endpoints(tmp_path: Path, **urls: str) -> Path:
    path = tmp_path / "endpoints.toml"
    path.write_text("".join(f'[{name}]\nbase_urls = ["{url}"]\nconcurrency = 4\n' for name, url in urls.items()))
    return path


def study_args(warehouse: Path, endpoints_file: Path, *more: str) -> list[str]:
    return [
        "study",
        "--warehouse",
        str(warehouse),
        "--endpoints",
        str(endpoints_file),
        "--collection",
        "dl19",
        "--limit-pairs",
        "3",
        "--personality",
        "default",
        "--personality",
        "HA",
        *more,
    ]


def plan_lines(out: str) -> dict[tuple[str, str], list[str]]:
    """The dry run's rows by (model, CoT): their columns."""
    rows = {}
    for line in out.splitlines():
        cells = line.split()
        if len(cells) == 10 and cells[1] == "dl19":
            rows[(cells[0], cells[3])] = cells
    return rows


@pytest.mark.core
def test_the_shipped_presets_are_the_studys():
    presets = load_model_presets()
    assert {n: (p.model, p.cot) for n, p in presets.models.items()} == {
        "gpt-4o": ("gpt-4o", ["without"]),
        "gpt-4o-mini": ("gpt-4o-mini", ["without", "with"]),
        "deepseek-v3": ("deepseek-chat", ["without", "with"]),
        "llama-3-8b": ("meta-llama/Meta-Llama-3-8B-Instruct", ["without", "with"]),
        "llama-3-70b": ("meta-llama/Meta-Llama-3-70B-Instruct", ["without"]),
    }
    for preset in presets.models.values():
        # temperature 0, top_p 1, nothing else: exactly what the judge's prompt files send
        assert preset.params == {k: float(v) for k, v in sampling_params("label_nocot").items()}
        assert preset.hosted == (preset.price is not None)
        llama = preset.backend == "vllm"
        assert (preset.priming.frequency_penalty, preset.priming.presence_penalty) == (
            (1, 0) if llama else (None, None)
        )
    assert presets.models["gpt-4o"].price.input == 2.50 and presets.models["gpt-4o"].price.output == 10.00
    # OpenAI's Batch API at half the list price; DeepSeek has none
    assert [presets.models[name].price.batch for name in ("gpt-4o", "gpt-4o-mini", "deepseek-v3")] == [
        (1.25, 5.00),
        (0.075, 0.30),
        None,
    ]


@pytest.mark.core
def test_the_dry_run_prices_online_and_batch_mode():
    rows = [
        # 4,000,000 characters = 1,000,000 prompt tokens, and 1,000,000 answer tokens
        EstimateRow("gpt-4o", "dl19", "balanced", False, 10, 20, 20, 0, 4_000_000, 1_000_000, (2.5, 10.0), (1.25, 5.0)),
        # no Batch API: priced online only
        EstimateRow("deepseek-v3", "dl19", "balanced", False, 10, 20, 20, 0, 4_000_000, 1_000_000, (0.27, 1.10)),
    ]
    lines = format_estimate(Estimate(rows))
    assert [line.split()[-2:] for line in lines[1:3]] == [["12.50", "6.25"], ["1.37", "-"]]
    assert lines[3] == (
        "total: 40 requests (at least 40), 2,000,000 prompt tokens (characters / 4), 0 answered from the warehouse,"
        " est. USD 13.87 for hosted models (prices to be checked); in batch mode (--mode batch) the 12.50 of models"
        " with a Batch API cost 6.25"
    )


@pytest.mark.core
@pytest.mark.parametrize(
    ("edit", "message"),
    [
        # a parameter the study did not set
        (
            ("top_p = 1.0 }", "top_p = 1.0, seed = 1.0 }"),
            "models.gpt-4o: params may set only temperature, top_p, not seed",
        ),
        # a hosted model without a price cannot be costed
        (
            ("price = { input = 2.50, output = 10.00, batch_input = 1.25, batch_output = 5.00 }\n", ""),
            "models.gpt-4o: a hosted preset needs a price and an api_key_env",
        ),
        # a Batch API price is an input and an output price
        (
            ("batch_input = 1.25, batch_output = 5.00", "batch_input = 1.25"),
            "models.gpt-4o.price: give batch_input and batch_output together (the provider's Batch API price)",
        ),
        # a typo in a field name is refused, not ignored
        (('cot = ["without"]\nparams', 'cots = ["without"]\nparams'), "models.gpt-4o.cot: Field required"),
        (('cot = ["without"]', 'cot = ["never"]'), "models.gpt-4o.cot.0: Input should be 'without' or 'with'"),
    ],
)
def test_a_bad_presets_file_is_one_line(tmp_path, edit, message):
    path = tmp_path / "models.toml"
    path.write_text(MODELS_FILE.read_text().replace(*edit, 1))
    with pytest.raises(UsageError) as raised:
        load_model_presets(path)
    assert str(raised.value) == f"model presets {path.resolve()}: {message}"


@pytest.mark.integration
def test_dry_run_counts_what_the_servers_then_receive(capsys, tmp_path, warehouse):
    """Two presets, each on its own scripted server: requests exactly, prompt tokens as estimated."""
    presets = load_model_presets().models
    with (
        FakeOpenAI(distinct_labels, models=[presets["llama-3-8b"].model]) as small,
        FakeOpenAI(distinct_labels, models=[presets["llama-3-70b"].model]) as large,
    ):
        urls = {"llama-3-8b": small.base_url, "llama-3-70b": large.base_url}
        path = endpoints(tmp_path, **urls)
        dry = run_cli(
            capsys, *study_args(warehouse, path, "--model", "llama-3-8b", "--model", "llama-3-70b", "--dry-run")
        )
        assert dry.exit_code == 0, dry.err
        assert small.chat_requests == [] and large.chat_requests == []
        rows = plan_lines(dry.out)
        # 3 pairs x 2 personalities per setting; label + confidence each; 70B without CoT only
        assert {key: cells[4:7] for key, cells in rows.items()} == {
            ("llama-3-8b", "without"): ["6", "12", "12"],
            ("llama-3-8b", "with"): ["6", "12", "6"],  # at least: confidence shared when both settings agree
            ("llama-3-70b", "without"): ["6", "12", "12"],
        }
        assert "total: 36 requests" in dry.out

        done = run_cli(
            capsys,
            *study_args(warehouse, path, "--model", "llama-3-8b", "--model", "llama-3-70b", "--priming-topics", "1",
                        "--priming-trials", "1", "--classifier-trials", "2"),
        )  # fmt: skip
        assert done.exit_code == 0, done.err
        judged = [r.body for r in small.chat_requests + large.chat_requests if "Passages:" not in str(r.body)]
        assert len([r for r in small.chat_requests if "Passages:" not in str(r.body)]) == 24
        assert len(judged) == 36
        estimated = {key: int(cells[7].replace(",", "")) for key, cells in rows.items()}
        received = sum(estimate_tokens(body["messages"]) for body in judged)
        assert round(received) == pytest.approx(sum(estimated.values()), abs=len(estimated))  # rounding per row
        # the scripted server counts words as tokens: characters / 4 reads about 1.2-1.5 of them
        words = sum(len(str(m["content"]).split()) for body in judged for m in body["messages"])
        assert 1.0 < received / words < 1.8
        # the Llama presets' priming batches carry the study's penalties
        batches = [r.body for r in small.chat_requests if "Passages:" in str(r.body)]
        assert batches and all((b["frequency_penalty"], b["presence_penalty"]) == (1.0, 0.0) for b in batches)

        again = run_cli(
            capsys, *study_args(warehouse, path, "--model", "llama-3-8b", "--model", "llama-3-70b", "--dry-run")
        )
        assert again.exit_code == 0, again.err
        assert "total: 0 requests" in again.out  # a resume asks nothing already judged
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        names = con.execute("select run_name, status from judge_runs order by 1").fetchall()
    finally:
        con.close()
    # DL19 is judged on its `published` subset (Table 4's counts), as the study chooses where one exists
    assert names == [("dl19-published-llama-3-70b", "published"), ("dl19-published-llama-3-8b", "published")]
    assert CHARS_PER_TOKEN == 4


@pytest.mark.integration
@pytest.mark.parametrize(
    ("entries", "args", "message"),
    [
        # a preset name that does not exist
        ("", ("--model", "llama-3"), "error: unknown model preset 'llama-3'; the study's are gpt-4o, gpt-4o-mini, "),
        # the chosen preset has no endpoint
        ("[llama-3-70b]\nbase_urls = ['URL']\n", ("--model", "llama-3-8b"), "error: endpoints file "),
        # a hosted model whose key variable is unset
        ("[gpt-4o]\napi_key_env = 'PERAS_TEST_UNSET_KEY'\n", ("--model", "gpt-4o"), "error: model preset gpt-4o reads"),
    ],
)
def test_usage_errors_are_one_line_before_anything_is_asked(capsys, tmp_path, warehouse, entries, args, message):
    with FakeOpenAI(distinct_labels) as server:
        path = tmp_path / "endpoints.toml"
        path.write_text(entries.replace("URL", server.base_url))
        result = run_cli(capsys, *study_args(warehouse, path, *args))
        assert server.requests == []
    assert result.exit_code == 2
    assert result.err.startswith(message) and result.err.count("\n") == 1, result.err


@pytest.mark.integration
def test_priming_takes_a_model_preset_and_explicit_flags_win(capsys, warehouse):
    preset = load_model_presets().get("llama-3-8b")
    common = ["priming", "dl19", "--warehouse", str(warehouse), "--limit-topics", "1", "--trials", "1"]
    served = run_cli(capsys, *common, "--model-preset", "llama-3-8b")
    assert served.exit_code == 2
    assert served.err == "error: model preset llama-3-8b is served by vllm: give its --base-url\n"
    with FakeOpenAI(distinct_labels, models=[preset.model]) as server:
        url = ["--model-preset", "llama-3-8b", "--base-url", server.base_url]
        assert run_cli(capsys, *common, *url, "--run-name", "p1").exit_code == 0
        first = {
            (r.body["model"], r.body["frequency_penalty"], r.body["presence_penalty"]) for r in server.chat_requests
        }
        server.reset()
        assert run_cli(capsys, *common, *url, "--run-name", "p2", "--frequency-penalty", "0.5").exit_code == 0
        second = {(r.body["frequency_penalty"], r.body["presence_penalty"]) for r in server.chat_requests}
    assert first == {(preset.model, 1.0, 0.0)}
    assert second == {(0.5, 0.0)}


@pytest.mark.integration
def test_judge_with_a_model_preset_takes_its_model_and_cot_settings(settings, tmp_path, capsys, monkeypatch):
    from flows.ingest import ingest
    from support.fake_openai import FakeOpenAI, instant
    from tests.test_integrity import rows

    monkeypatch.setenv("PERAS_ENDPOINT_SLOTS_DIR", str(tmp_path / "slots"))
    ingest(preset="sample", settings=settings)
    model = "meta-llama/Meta-Llama-3-70B-Instruct"
    with FakeOpenAI(instant, models=[model]) as server:
        args = ("judge", "sample", "--warehouse", str(settings.warehouse), "--base-url", server.base_url)
        result = run_cli(
            capsys, *args, "--model-preset", "llama-3-70b", "--personality", "default", "--limit-pairs", "2"
        )
        assert result.exit_code == 0, result.err
        assert {r.body["model"] for r in server.chat_requests} == {model}
        # an explicit --cot wins over the preset's (llama-3-70b: without CoT only)
        explicit = run_cli(
            capsys, *args, "--model-preset", "llama-3-70b", "--personality", "default", "--limit-pairs", "2",
            "--cot", "with", "--run-name", "explicit",
        )  # fmt: skip
        assert explicit.exit_code == 0, explicit.err
    assert rows(
        settings.warehouse,
        "select run_name, model, cot, count(*) from judge_runs join judgments using (run_id) group by all order by all",
    ) == [("explicit", model, True, 2), (f"sample-{model.replace('/', '_')}", model, False, 2)]
    served = run_cli(capsys, "judge", "sample", "--warehouse", str(settings.warehouse), "--model-preset", "llama-3-8b")
    assert served.exit_code == 2
    assert served.err.strip().endswith("model preset llama-3-8b is served by vllm: give its --base-url")


@pytest.mark.core
@pytest.mark.parametrize(
    ("text", "said"),
    [(None, "cannot read: No such file or directory"), ("[gpt-4o\n", "not valid TOML: Expected ']'")],
)
def test_a_bad_presets_or_endpoints_file_is_one_line_naming_it(tmp_path, text, said):
    from peras.models import load_model_presets
    from tasks.study.endpoints import load_endpoints

    path = tmp_path / "bad.toml"
    if text is not None:
        path.write_text(text, encoding="utf-8")
    with pytest.raises(UsageError) as presets:
        load_model_presets(path)
    with pytest.raises(UsageError) as endpoints:
        load_endpoints(path, load_model_presets())
    assert str(presets.value).startswith(f"model presets {path}: {said}")
    assert str(endpoints.value).startswith(f"endpoints file {path}: {said}")
