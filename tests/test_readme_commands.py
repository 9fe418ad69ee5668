"""Every `peras` command README.md shows, run in the order it shows them, in a fresh directory.

The commands run as written, with two changes: `http://gpu-host:8000/v1` is a scripted OpenAI-compatible server
(support/fake_openai.py), and the two judge commands judge a few pairs (EXTRA) instead of thousands.
What the README assumes was done before (an ingested LLMJudge for `import-judgments`, judge runs on DL21 for
`classify`, a run.txt) is prepared by the `workspace` fixture. The cases depend on the earlier ones, as the
README's lines do: run the module whole.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import click
import pytest

from support.fake_openai import FakeOpenAI, instant
from tests.helpers import CliResult, run_cli

ROOT = Path(__file__).resolve().parents[1]
GPU_HOST = "http://gpu-host:8000/v1"
README_MODEL = "meta-llama/Llama-3.1-8B-Instruct"
EMBEDDED_RUN = "sample-qwen2.5-coder-0.5b-instruct-q4_k_m"
README_RUN = "dl19-balanced-meta-llama_Llama-3.1-8B-Instruct"  # the judge's default name for it
PASSAGE_LINE = re.compile(r"^\[(\S+)\] ", re.M)

# Extra arguments, only where the README's command would take minutes: the balanced DL19 subset is 5,268 pairs
# x 11 personalities x 2 CoT settings, and the sample on the embedded CPU model is 880 judgments (~10 min).
EXTRA = {
    f"peras judge dl19 --subset balanced --base-url {GPU_HOST} --model {README_MODEL}": ["--limit-pairs", "3"],
    "peras judge sample": ["--limit-pairs", "2", "--personality", "default", "--cot", "without"],
}


def readme_commands() -> list[str]:
    """The `peras ...` lines of README.md's shell blocks, comments dropped, in order."""
    blocks = re.findall(r"```bash\n(.*?)```", (ROOT / "README.md").read_text(encoding="utf-8"), re.S)
    commands = []
    for block in blocks:
        for line in block.splitlines():
            words = shlex.split(line, comments=True)
            if words and words[0] == "peras":
                commands.append(shlex.join(words))
    return commands


def respond(request: dict) -> str | list[str]:
    """Labels and confidences as `instant` gives them; a priming batch gets a JSON score 0-3 per passage."""
    content = str(request["messages"][-1]["content"])
    ids = PASSAGE_LINE.findall(content.rsplit("\nPassages:\n", 1)[-1])  # the batch's: the example's come first
    if "Answer with one JSON object" in content:
        return "```json\n" + json.dumps({d: zlib.crc32(d.encode()) % 4 for d in ids}) + "\n```"
    return instant(request)


@dataclass
class Workspace:
    """The directory the commands run in, the scripted server, and what earlier commands left."""

    directory: Path
    server: FakeOpenAI
    ran: set[str] = field(default_factory=set)


@pytest.fixture(scope="module")
def workspace(tmp_path_factory, shared_data_dir) -> Iterator[Workspace]:
    directory = tmp_path_factory.mktemp("readme")
    with pytest.MonkeyPatch.context() as patch, FakeOpenAI(respond, models=("fake-model", README_MODEL)) as server:
        patch.chdir(directory)  # warehouse/, reports/ and the exported file land here, as for a user
        for name in ("PERAS_WAREHOUSE", "PERAS_REPORTS_DIR", "PERAS_BASE_URLS", "PERAS_MODEL", "PERAS_CONFIG"):
            patch.delenv(name, raising=False)
        patch.setenv("PERAS_DATA_DIR", str(shared_data_dir))
        shutil.copyfile(shared_data_dir / "llmjudge" / "judge-runs" / "Olz-gpt4o.txt", directory / "run.txt")
        yield Workspace(directory, server)


@pytest.fixture(scope="module")
def shared_data_dir() -> Path:
    from tests.conftest import SHARED_DATA

    if not SHARED_DATA.is_dir():
        pytest.fail(f"real collections not found at {SHARED_DATA}")
    return SHARED_DATA


def peras(capsys, workspace: Workspace, command: str) -> CliResult:
    """Run one README line (gpu-host replaced, EXTRA appended) through the real entry point."""
    args = shlex.split(command.replace(GPU_HOST, workspace.server.base_url))[1:] + EXTRA.get(command, [])
    return run_cli(capsys, *args)


# README lines that download: offline they must end in the one line that says what to do (with network access they
# run and are checked as any line; tests/test_ingest_irds.py ingests DL19 through ir_datasets from local files).
NEEDS_NETWORK = {
    "peras ingest irds:msmarco-passage/trec-dl-2019/judged": (
        "error: ir_datasets cannot read the qrels of 'msmarco-passage/trec-dl-2019/judged' (All download sources "
        "failed): with network access ir_datasets downloads them into IR_DATASETS_HOME (~/.ir_datasets); offline, "
        "place them there or register the dataset over local files (docs/formats.md)"
    )
}


def prepare(capsys, workspace: Workspace, command: str) -> None:
    """What the README assumes was done before `command` (not shown there, so not itself under test)."""
    base = ["--base-url", workspace.server.base_url, "--model", "fake-model"]
    steps = {
        "peras import-judgments run.txt --name mine --collection llmjudge": [["ingest", "llmjudge"]],
        "peras classify --collection dl21": [
            ["ingest", "dl21"],
            ["judge", "dl21", "--subset", "balanced", "--limit-pairs", "120", "--cot", "without", *base],
        ],
    }
    for step in steps.get(command, []):
        result = run_cli(capsys, *step)
        assert result.exit_code == 0, (step, result.err)


def check(workspace: Workspace, command: str, result: CliResult) -> None:
    """What each command must print (exactly, where its output does not depend on the machine or the time)."""
    out = result.out
    lines = out.splitlines()
    if command.startswith("peras ingest dl19"):
        assert out == (
            "dl19: 9,260 judged pairs, 43 queries, 9,139 passages; balanced subset 22 topics / 5,268 pairs; "
            "published subset 22 topics / 4,141 pairs\n"
        )
    elif command.startswith("peras ingest irds:"):
        assert re.fullmatch(r"irds-\S+: [\d,]+ judged pairs, [\d,]+ queries, [\d,]+ passages;.*\n", out), out
    elif command == "peras ingest sample":
        assert out == "sample: 40 judged pairs, 5 queries, 40 passages; balanced subset 5 topics / 40 pairs\n"
    elif command.startswith("peras subsets dl19"):
        assert out == (
            "collection  subset     topics  pairs  rel 0  rel 1  rel 2  rel 3\n"
            "dl19        balanced       22  5,268  2,624    921  1,089    634\n"
            "dl19        published      22  4,141  2,314    707    760    360\n"
            "dl19        (Table 4)      22  4,141  2,314    707    760    360\n"
        )
    elif command.startswith("peras judge dl19"):
        # 3 pairs x 11 personalities x 2 CoT settings, each a label and a confidence request (some identical)
        found = re.fullmatch(
            rf"{README_RUN}: 66 judgments \(66 new; (\d+) requests sent, (\d+) reused\), 0 parse failures; "
            rf"model {README_MODEL} via openai-compatible\n",
            out,
        )
        assert found and int(found.group(1)) + int(found.group(2)) == 132, out
    elif command == "peras judge sample":
        assert out.startswith(f"{EMBEDDED_RUN}: 2 judgments (2 new; 4 requests sent"), out
    elif command == "peras runs list":
        assert lines[0].split() == [
            "run",
            "collection",
            "subset",
            "model",
            "source",
            "status",
            "judgments",
            "failures",
            "created",
        ]
        assert {line.split()[0] for line in lines[1:]} >= {README_RUN}
    elif command.startswith("peras metrics"):
        assert EMBEDDED_RUN in out or "default" in out, out
    elif command.startswith("peras import-judgments"):
        assert lines[0] == "mine: imported from run.txt into llmjudge"
    elif command.startswith("peras classify"):
        assert re.search(r"dl21: 50 trials, 120 pairs \(0 excluded\), 22 features \(personalities\)", out), out
    elif command.startswith("peras priming"):
        # the ten DL19 topics of the rule x 20 trials x 3 batch settings x 2 conditions, one request per batch
        run = "dl19-priming-meta-llama_Llama-3.1-8B-Instruct"
        assert "Priming index" in out
        assert lines[-1] == (
            f"{run}: 1,200 batches (1,200 new; 1,200 requests sent, 0 reused), 0 failed; model {README_MODEL} "
            f"via openai-compatible; plots in reports/priming/{run}"
        )
    elif command.startswith("peras report"):
        assert out.startswith("wrote ") and (workspace.directory / "reports" / "report.html").is_file()
    elif command.startswith("peras sql"):
        assert lines[-1].endswith("rows") or lines[-1].endswith("row"), out
    elif command.startswith("peras export"):
        assert (workspace.directory / "agreement.parquet").is_file()
    elif command == "peras server status":
        assert out.startswith(("running: ", "not running: ", "starting or not answering: "))
    elif command == "peras deploy":
        assert lines[-1].endswith("prefect worker start --pool peras-process")
    elif command == "peras --help":
        from cli.main import cli

        assert all(name in out for name in cli.list_commands(click.Context(cli)))
    else:
        pytest.fail(f"no check for README command {command!r}: add one to tests/test_readme_commands.py")


def cases() -> list:
    marks = {"peras judge sample": [pytest.mark.model]}  # the embedded llama.cpp model (scripts/setup.sh)
    return [pytest.param(c, marks=marks.get(c, []), id=c.removeprefix("peras ")[:60]) for c in readme_commands()]


@pytest.mark.integration
@pytest.mark.parametrize("command", cases())
def test_readme_command_runs(capsys, workspace, command):
    if command.startswith(f"peras metrics --run {EMBEDDED_RUN}") and "peras judge sample" not in workspace.ran:
        pytest.skip("its run is the one `peras judge sample` makes (deselected: needs the embedded model)")
    prepare(capsys, workspace, command)
    result = peras(capsys, workspace, command)
    if command in NEEDS_NETWORK and result.exit_code != 0:  # these machines reach no ir_datasets host
        assert (result.exit_code, result.err.splitlines()[-1]) == (2, NEEDS_NETWORK[command]), result.err
        return
    assert result.exit_code == 0, f"{command}\n{result.err}"
    check(workspace, command, result)
    workspace.ran.add(command)


@pytest.mark.core
def test_the_readme_shows_commands_and_extra_names_only_those():
    shown = readme_commands()
    assert len(shown) >= 15 and shown[0] == "peras ingest dl19", shown
    assert set(EXTRA) <= set(shown), "EXTRA names a command the README no longer shows"
