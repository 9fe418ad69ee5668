"""docs/fidelity.md, the ledger of the papers' requirements: every row names files and a test that exist, and every
prompt marked exact is the paper's text word for word (read from ../shared/papers, PDF line breaks normalised)."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from peras.prompting import load_personalities, load_prompt
from tests.paper_text import excerpt, normalise, paper_text
from tests.prompt_files import FOLDERS, prompt_file

pytestmark = pytest.mark.core

ROOT = Path(__file__).resolve().parents[1]
LEDGER = ROOT / "docs" / "fidelity.md"
CODE_SPAN = re.compile(r"`([^`]+)`")


def ledger_rows() -> list[dict[str, str]]:
    """The ledger's table rows by column name."""
    lines = [line for line in LEDGER.read_text(encoding="utf-8").splitlines() if line.startswith("|")]
    header = [cell.strip() for cell in lines[0].strip("|").split("|")]
    return [
        dict(zip(header, (cell.strip() for cell in line.strip("|").split(" | ")), strict=True)) for line in lines[2:]
    ]


def unmark(text: str) -> str:
    """The PERAS study's extraction: a prompt line is set in italics (`*...*`) and underscores are escaped (`\\_`)."""
    lines = []
    for line in text.splitlines():
        stripped = line.strip()
        italic = stripped.startswith("*") and stripped.endswith("*") and not stripped.startswith("**")
        lines.append(stripped[1:-1] if italic else line)
    return "\n".join(lines).replace("\\_", "_")


def peras_study(first: str, last: str, after: str = "") -> str:
    return normalise(unmark(excerpt("peras-study", f"*{first}", f"*{last}", after=after)))


def double_braced(text: str) -> str:
    """The overconfidence paper writes placeholders as {{name}}; PERAS's str.format templates as {name}."""
    return re.sub(r"\{\{(\w+)\}\}", r"{\1}", text)


def template(name: str) -> str:
    """A str.format prompt's text as sent: doubled braces are literal ones."""
    return normalise(load_prompt(prompt_file(name)).template.replace("{{", "{").replace("}}", "}"))


def personalities() -> tuple[str, str]:
    """Table 1's ten rows (`CODE<TAB>instruction`) against the shipped instructions, in the shipped order."""
    rows = {
        line.split("\t")[0]: line.split("\t", 1)[1] for line in paper_text("peras-study").splitlines() if "\t" in line
    }
    shipped = [p for p in load_personalities() if p.instruction]
    assert len(shipped) == 10
    return "\n".join(normalise(rows[p.code]) for p in shipped), "\n".join(normalise(p.instruction) for p in shipped)


# For each file the ledger marks exact: (the paper's text, PERAS's text), both normalised.
EXACT: dict[str, Callable[[], tuple[str, str]]] = {
    "peras/personalities/": personalities,
    "tasks/personas/prompts/persona_keywords.toml": lambda: (
        peras_study("Please provide keywords", "Please provide keywords"),
        template("persona_keywords"),
    ),
    "tasks/personas/prompts/persona_instruction.toml": lambda: (
        peras_study("{personality", "{personality"),
        template("persona_instruction"),
    ),
    "peras/prompts/label_nocot.toml": lambda: (
        peras_study("You are an expert", "How relevant is this passage"),
        template("label_nocot"),
    ),
    # Table 3 to its last line, "Final score must be an integer value only. ... without providing any reasoning."
    "peras/prompts/label_cot.toml": lambda: (
        peras_study("Given a query and a passage", "Final score must be", after="Table 3."),
        template("label_cot"),
    ),
    # The extraction garbles Table 6's placeholder as {pblueicted_score}; §4.3 prints it as predicted_score.
    "peras/prompts/confidence.toml": lambda: (
        peras_study("You are an expert", "Your given relevance score", after="Table 6.").replace(
            "{pblueicted_score}", "{predicted_score}"
        ),
        template("confidence"),
    ),
    "tasks/pairwise/prompts/self_pairwise.toml": lambda: (
        double_braced(normalise(excerpt("overconfidence", "You are a helpful", "output ANYTHING", after="#### SELF-"))),
        template("self_pairwise"),
    ),
    "tasks/pairwise/prompts/mp_logp_pairwise.toml": lambda: (
        double_braced(normalise(excerpt("overconfidence", "You are a helpful", "output ANYTHING", after="#### MULTI"))),
        template("mp_logp_pairwise"),
    ),
}
PROMPT_FILES = ("peras/personalities/", *(f"{folder.relative_to(ROOT)}/" for folder in FOLDERS))


STATUSES = ("exact", "adapted", "not implemented", "missing")


def status_of(row: dict[str, str]) -> str:
    """The status word(s) before any ':' (how or why) or ' (' (a note)."""
    return row["status"].split(":")[0].split(" (")[0]


def test_every_row_names_existing_files_and_a_test():
    rows = ledger_rows()
    assert [int(row["#"]) for row in rows] == list(range(1, len(rows) + 1))
    for row in rows:
        files = CODE_SPAN.findall(row["implemented in"])
        assert files, row["#"]
        for file in files:
            assert (ROOT / file).exists(), (row["#"], file)
        status = status_of(row)
        assert status in STATUSES, (row["#"], row["status"])
        if status != "exact":
            assert ":" in row["status"], (row["#"], "an adapted or missing requirement says how or why")
        if status in ("not implemented", "missing") and row["test"] == "-":
            continue
        named = CODE_SPAN.findall(row["test"])
        assert named, (row["#"], "a row names one test or more, `file::function`")
        for test in named:
            path, function = test.split("::")
            source = (ROOT / path).read_text(encoding="utf-8")
            assert re.search(rf"^def {function}\(", source, re.M), (row["#"], test)


def test_every_exact_prompt_is_in_the_comparison():
    # A prompt (or personality) file the ledger calls exact is compared with the paper below; none is skipped.
    exact = {
        file
        for row in ledger_rows()
        if status_of(row) == "exact"
        for file in CODE_SPAN.findall(row["implemented in"])
        if file.startswith(PROMPT_FILES)
    }
    assert exact == set(EXACT)


@pytest.mark.parametrize("file", sorted(EXACT))
def test_exact_prompts_equal_the_papers_text(file):
    paper, ours = EXACT[file]()
    assert ours == paper


def test_the_counts_the_ledger_states():
    counts = Counter(status_of(row) for row in ledger_rows())
    stated = (
        f"Counts: {counts['exact']} exact, {counts['adapted']} adapted, {counts['not implemented']} not implemented, "
        f"{counts['missing']} missing"
    )
    assert stated in LEDGER.read_text(encoding="utf-8")
