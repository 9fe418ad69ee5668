"""Issue 49: docs/architecture.md's "Adding an LLM stage", followed literally by a new contributor's throwaway stage
(a yes/no question per passage) with a prompt file and a measure view: five files in two folders (`tasks/yesno/`,
`sql/yesno/`) added to a copy of the project, nothing edited elsewhere. In processes of their own, as a user types
them: the warehouse opens before the stage's first run (its view waits for its tables) and after it (the view is
there, with the share of yes); `peras runs list|delete` show and delete its run; in batch mode the batch-poll flow
carries its run to the end unattended.

The stage's prompt is its own file, read by its own code (`Path(__file__).with_name(...)`, checked for its
placeholder when loaded): the one loader of a stage's prompt files (issue 49, another part) is not used here."""

from __future__ import annotations

import filecmp
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import duckdb
import pytest

from peras.paths import PROJECT_ROOT
from support.fake_batch import BatchScript, FakeBatchAPI
from support.fake_openai import FakeOpenAI

pytestmark = pytest.mark.integration

PROJECT = ("peras", "tasks", "flows", "cli", "sql", "expectations")  # what `peras` runs from (support: the servers)

STAGE_TOML = """\
# A yes/no question asked of each passage of a collection (docs/architecture.md, "Adding an LLM stage").
kind = "yesno"
label = "yes/no run"
command = "ask"
runs_table = "yesno_runs"
run_id = "yesno_run_id"
fixed = "collection_id, question, model"
answers_table = "yesno_answers"
history_table = "yesno_answer_history"
keys = "query_id, doc_id"
values = "answer boolean"
failure_group = []
failure_label = "yesno"
item_format = "passage %s/%s"
item_columns = ["query_id", "doc_id"]
differs = "collection, question, model or prompt"
"""

PROMPT_TOML = '''\
# The question put to each passage; {question} and {passage} are filled in.
template = """{question}

Passage: {passage}

Answer with yes or no only."""
'''

TASKS_PY = '''\
"""The yes/no stage: one question asked of every judged passage of a collection."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from peras.settings import Settings
from peras.warehouse import read_frame
from tasks.engine.endpoint import Endpoint
from tasks.engine.running import HeldItems, StageOutcome
from tasks.engine.runs import Gate, RunClaim
from tasks.engine.spec import Answer, Ask, AskFn, ParsedValue, RunIdentity
from tasks.engine.stage import declaration
from tasks.engine.stages import ask_outcome
from tasks.engine.tasks import run_counts


def load_prompt() -> str:
    """The stage's prompt file, refused unless it fills in {question} and {passage}."""
    template = tomllib.loads(Path(__file__).with_name("prompt.toml").read_text(encoding="utf-8"))["template"]
    if "{question}" not in template or "{passage}" not in template:
        raise ValueError("tasks/yesno/prompt.toml: the template needs {question} and {passage}")
    return str(template)


PROMPT = load_prompt()
YES_NO = re.compile(r"^\\s*(yes|no)\\b", re.IGNORECASE)


def read_yes_no(text: str) -> ParsedValue:
    """Yes (True), no (False), or why the answer is neither."""
    found = YES_NO.match(text)
    return ParsedValue(found.group(1).lower() == "yes", True, "") if found else ParsedValue(None, False, "not yes/no")


@dataclass(frozen=True)
class Passage:
    """One passage to ask about."""

    query_id: str
    doc_id: str
    text: str  # its keys (query_id, doc_id) are read by the engine from the attributes the declaration names


@dataclass
class YesNoStage:
    """A passage to one request, the answer to one outcome row."""

    question: str
    kind: str = "yesno"

    async def handle(self, item: Passage, ask: AskFn) -> dict[str, Any]:
        """Ask the question of the passage."""
        content = PROMPT.format(question=self.question, passage=item.text)
        spec = Ask([{"role": "user", "content": content}], {"temperature": 0.0, "max_tokens": 4}, "yesno", read_yes_no)

        def read(answer: Answer) -> dict[str, Any]:
            return {"answer": answer.parsed.value if answer.ok else None}

        return await ask_outcome(ask, spec, {"query_id": item.query_id, "doc_id": item.doc_id}, ("answer",), read)


@dataclass
class YesNoRecipe(HeldItems):
    """The stage's part of the one flow body."""

    run_name: str
    collection: str
    question: str
    planned: list[Passage]
    gate: Gate = Gate("run not published (its answers are kept)")
    personalities: tuple[()] = ()

    def configure(self, endpoint: Endpoint) -> str:
        """Nothing to configure but the question."""
        return self.question

    def claim(self, config: str) -> RunClaim:
        """A run is fixed by its collection, question, model and prompt."""
        values = {"collection_id": self.collection, "question": config, "scope": {}}
        return RunClaim(declaration("yesno"), self.run_name, values, {"prompt": PROMPT})

    def stage(self, config: str) -> YesNoStage:
        """The stage object."""
        return YesNoStage(config)

    def prepare(self, settings: Settings, run: RunIdentity) -> None:
        """Nothing is stored before asking."""


@dataclass(frozen=True)
class Parameters:
    """What a call takes: each field an option of `peras ask yesno`."""

    collection: str = field(metadata={"help": "The collection whose judged passages are asked."})
    question: str = field(metadata={"help": "The yes/no question asked of each passage."})
    run_name: str = field(default="yesno", metadata={"help": "Name of the run (re-using a name resumes it)."})


def recipe(settings: Settings, parameters: Parameters) -> YesNoRecipe:
    """The recipe of one call: every judged passage of the collection planned."""
    frame = read_frame(settings.warehouse, "yesno/select_passages", {"collection": parameters.collection})
    passages = [Passage(r["query_id"], r["doc_id"], r["passage_text"]) for r in frame.iter_rows(named=True)]
    return YesNoRecipe(parameters.run_name, parameters.collection, parameters.question, passages)


def summarize(outcome: StageOutcome[str], parameters: Parameters) -> dict[str, Any]:
    """The run, the model asked and the engine's counts (what every stage's summary starts with), its failures."""
    return run_counts(outcome.run, outcome.endpoint, outcome.stats) | {"n_failures": outcome.n_failures}
'''

SELECT_PASSAGES_SQL = """\
-- The passages a yes/no run asks about: every judged pair of the collection, with its passage's text.
select query_id, doc_id, passage_text
from pair_texts_in($collection, null)
order by query_id, doc_id
"""

SHARE_VIEW_SQL = """\
-- needs: yesno_runs, yesno_answers
-- Per published yes/no run: the share of passages answered yes.
--   n_read     answers that read as yes or no;  share_yes  yes over n_read
with runs as (
    select yesno_run_id, run_name, question from yesno_runs where status = 'published'
),

final as (
    select
        r.run_name, r.question,
        count(*) filter (where a.status = 'ok') as n_read,
        avg(a.answer::int) filter (where a.status = 'ok') as share_yes
    from yesno_answers as a
    inner join runs as r using (yesno_run_id)
    group by all
)

select * from final
"""

# The walkthrough's files: the stage folder and its SQL folder, nothing else.
FILES = {
    "tasks/yesno/stage.toml": STAGE_TOML,
    "tasks/yesno/prompt.toml": PROMPT_TOML,
    "tasks/yesno/tasks.py": TASKS_PY,
    "sql/yesno/select_passages.sql": SELECT_PASSAGES_SQL,
    "sql/yesno/views/yesno_share.sql": SHARE_VIEW_SQL,
}
QUESTION = "Does the passage mention a number?"


def with_stage(into: Path) -> Path:
    """A copy of the project with the walkthrough's files added."""
    for name in PROJECT:
        shutil.copytree(PROJECT_ROOT / name, into / name, ignore=shutil.ignore_patterns("__pycache__"))
    for name, text in FILES.items():
        (into / name).parent.mkdir(parents=True, exist_ok=True)
        (into / name).write_text(text, encoding="utf-8")
    return into


def changed(copy: Path) -> set[str]:
    """Every file of the copy that differs from the project's, or is not in it."""
    found = set()
    for name in PROJECT:
        for path in (copy / name).rglob("*"):
            if path.is_file() and "__pycache__" not in path.parts:
                original = PROJECT_ROOT / path.relative_to(copy)
                if not original.is_file() or not filecmp.cmp(path, original, shallow=False):
                    found.add(str(path.relative_to(copy)))
    return found


def peras(code: Path, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """`peras ARGS` of the copy, in a process of its own."""
    return subprocess.run(
        [sys.executable, "-m", "cli.main", *args],
        cwd=code,
        env={**env, "PYTHONPATH": str(code)},
        capture_output=True,
        text=True,
        timeout=600,
    )


def answer(request: dict[str, Any]) -> str:
    """Yes when the passage holds a digit; the endpoint check gets 'ok'."""
    content = str(request["messages"][-1]["content"])
    if "Passage: " not in content:
        return "ok"
    return "yes" if any(ch.isdigit() for ch in content.split("Passage: ", 1)[1]) else "no"


def expected_share(warehouse: Path) -> tuple[int, float]:
    """What the scripted answers make of the sample: passages asked, the share with a digit."""
    with duckdb.connect(str(warehouse), read_only=True) as con:
        texts = [row[0] for row in con.execute("select passage_text from pair_texts_in('sample', null)").fetchall()]
    return len(texts), sum(any(ch.isdigit() for ch in text) for text in texts) / len(texts)


def views(warehouse: Path) -> set[str]:
    with duckdb.connect(str(warehouse), read_only=True) as con:
        found = con.execute("select view_name from duckdb_views() where view_name like 'yesno%'").fetchall()
    return {row[0] for row in found}


def test_a_stage_added_as_the_walkthrough_says_runs_lists_deletes_and_opens_before_and_after(tmp_path):
    code = with_stage(tmp_path / "project")
    assert changed(code) == set(FILES)  # nothing edited elsewhere; 5 files in 2 folders
    assert {"/".join(Path(name).parts[:2]) for name in FILES} == {"tasks/yesno", "sql/yesno"}
    warehouse = tmp_path / "peras.duckdb"
    env = {**os.environ, "PERAS_ENDPOINT_SLOTS_DIR": str(tmp_path / "slots")}
    where = ["--warehouse", str(warehouse)]
    ingested = peras(code, "ingest", "sample", *where, env=env)
    assert ingested.returncode == 0, ingested.stderr
    assert views(warehouse) == set()  # the warehouse opened: the view waits for the stage's tables
    helped = peras(code, "ask", "yesno", "--help", env=env)
    assert helped.returncode == 0 and "--question TEXT" in helped.stdout
    with FakeOpenAI(answer) as server:
        endpoint = ["--base-url", server.base_url, "--model", "fake-model"]
        asked = peras(
            code, "ask", "yesno", "--collection", "sample", "--question", QUESTION, *endpoint, *where, env=env
        )
        assert asked.returncode == 0, asked.stderr
        assert "n_failures: 0" in asked.stdout.splitlines()
    n_passages, share = expected_share(warehouse)
    assert views(warehouse) == {"yesno_share"}  # created with the tables, by the first run
    reopened = peras(code, "runs", "list", "--kind", "yesno", *where, env=env)  # opens (and migrates) again
    assert reopened.returncode == 0, reopened.stderr
    (line,) = reopened.stdout.splitlines()[1:]
    assert line.split()[:3] == ["yesno", "yesno", "fake-model"] and " published " in line
    with duckdb.connect(str(warehouse), read_only=True) as con:
        assert con.execute("select run_name, question, n_read, share_yes from yesno_share").fetchall() == [
            ("yesno", QUESTION, n_passages, share)
        ]
    deleted = peras(code, "runs", "delete", "yesno", "--kind", "yesno", "--yes", *where, env=env)
    assert deleted.returncode == 0, deleted.stderr
    with duckdb.connect(str(warehouse), read_only=True) as con:
        assert con.execute(
            "select (select count(*) from yesno_runs), (select count(*) from yesno_answers)"
        ).fetchall() == [(0, 0)]


POLL = """\
import sys
from flows.batch_poll import batch_poll
from peras.settings import load_settings

result = batch_poll(settings=load_settings())
print("\\n".join(result["runs"]))
"""


def test_the_walkthrough_stage_in_batch_mode_is_carried_to_the_end_by_the_batch_poll_flow(tmp_path):
    code = with_stage(tmp_path / "project")
    warehouse = tmp_path / "peras.duckdb"
    env = {**os.environ, "PERAS_ENDPOINT_SLOTS_DIR": str(tmp_path / "slots"), "PERAS_BATCH_POLL_S": "0.01"}
    where = ["--warehouse", str(warehouse)]
    assert peras(code, "ingest", "sample", *where, env=env).returncode == 0
    with FakeBatchAPI(answer, scripts=[BatchScript(steps=("validating",))]) as server:
        endpoint = ["--base-url", server.base_url, "--model", "fake-model", "--mode", "batch"]
        asked = peras(
            code, "ask", "yesno", "--collection", "sample", "--question", QUESTION, *endpoint, *where, env=env
        )
        assert asked.returncode == 0, asked.stderr
        n_passages, share = expected_share(warehouse)
        with duckdb.connect(str(warehouse), read_only=True) as con:
            assert con.execute("select status from yesno_runs").fetchall() == [("waiting",)]
        # the poller's own settings: no endpoint, online; the run's come from the warehouse
        polled = subprocess.run(
            [sys.executable, "-c", POLL],
            cwd=code,
            env={**env, "PYTHONPATH": str(code), "PERAS_WAREHOUSE": str(warehouse)},
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert polled.returncode == 0, polled.stderr
        assert polled.stdout.strip().splitlines()[-1] == f"ask yesno: done ({n_passages:,} answered now)"
        assert len(server.chat_requests) == 0 and server.creates == 1
    with duckdb.connect(str(warehouse), read_only=True) as con:
        assert con.execute("select status from yesno_runs").fetchall() == [("published",)]
        assert con.execute("select n_read, share_yes from yesno_share").fetchall() == [(n_passages, share)]
