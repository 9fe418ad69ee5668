"""The studies' own text (../shared/papers), read for tests that compare PERAS's prompts with what the papers print.

The papers are PDF extractions: a printed line breaks wherever the page did, code listings wrap long lines with an
indented continuation, and a listing split over two pages gains code fences. `normalise` undoes exactly that, on the
paper's text and on ours alike: code-fence lines are dropped, every run of white space (line breaks included) becomes
one space, and a space the wrap left before a comma or a full stop (`confidence_score\\n  , and`, `(e.g\\n  ., 85)`)
is removed. Words, their order and their punctuation are compared as printed.

A prompt PERAS adapts is tested as the paper's text with a table of changes applied: each change is a phrase of the
paper (normalised) and what PERAS has in its place. The tables live in the stage's docs page (`changes_table`), so the
page a reader sees is the list the test applies.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAPERS_DIR = Path(os.environ.get("PERAS_PAPERS_DIR", ROOT.parent / "shared" / "papers"))

# The five papers by the short names the ledger (docs/fidelity.md) uses; ../shared/papers/README.md says which is which.
PAPERS = {
    "peras-study": "000_ba9bfc17f66ca1c1.txt",  # Judging with Personality and Confidence
    "personalized-judge": "001_45d06308c9cd656f.txt",  # Can LLM be a Personalized Judge?
    "threshold-priming": "002_6a00c187f2ad0796.txt",  # Threshold priming in LLM batch relevance assessment
    "personality-evd": "003_ca91ba1f1d651bbe.txt",  # PersonalityEvd (CoPE)
    "overconfidence": "004_eec05ee6e8b4cfdf.txt",  # Overconfidence in LLM-as-a-Judge
}
REMOVED = "(removed)"  # a changes table's PERAS cell for a phrase PERAS leaves out

_FENCE = re.compile(r"^\s*```[a-z]*\s*$", re.MULTILINE)
_WRAPPED_PUNCTUATION = re.compile(r" ([.,])")


def paper_text(paper: str) -> str:
    """The whole extracted text of one paper, by its short name."""
    return (PAPERS_DIR / PAPERS[paper]).read_text(encoding="utf-8")


def normalise(text: str) -> str:
    """One line of words: fences dropped, white space collapsed, wrap-split punctuation rejoined (module doc)."""
    return _WRAPPED_PUNCTUATION.sub(r"\1", " ".join(_FENCE.sub("", text).split()))


def excerpt(paper: str, first: str, last: str, after: str = "") -> str:
    """The paper's text from the first line that starts with `first` (past the line that starts with `after`, if
    given) to the end of the next line that starts with `last`."""
    lines = paper_text(paper).splitlines()
    begin = next(i for i, line in enumerate(lines) if line.strip().startswith(after)) if after else 0
    start = next(i for i in range(begin, len(lines)) if lines[i].strip().startswith(first))
    end = next(i for i in range(start, len(lines)) if lines[i].strip().startswith(last))
    return "\n".join(lines[start : end + 1])


def changes_table(doc: Path, heading: str) -> list[tuple[str, str]]:
    """The (paper, PERAS) rows of the first table after `heading` in a docs page, code spans unwrapped."""
    text = doc.read_text(encoding="utf-8")
    lines = text[text.index(heading) :].splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("|"))
    end = next((i for i in range(start, len(lines)) if not lines[i].startswith("|")), len(lines))
    rows = []
    for line in lines[start + 2 : end]:  # past the header row and its separator
        cells = [cell.strip() for cell in line.strip().strip("|").split(" | ")]
        rows.append((_unwrap(cells[-2]), _unwrap(cells[-1])))
    return rows


def apply_changes(paper: str, changes: list[tuple[str, str]]) -> str:
    """The normalised paper text with each change made once; a change whose phrase is not there exactly once fails."""
    text = normalise(paper)
    for original, ours in changes:
        found = text.count(original)
        if found != 1:
            raise AssertionError(f"the paper has {found} copies of the changed phrase {original!r}")
        text = text.replace(original, "" if ours == REMOVED else ours)
    return normalise(text)


def _unwrap(cell: str) -> str:
    if cell == REMOVED:
        return cell
    if not (cell.startswith("`") and cell.endswith("`")):
        raise AssertionError(f"a changes table cell must be one code span or {REMOVED}: {cell!r}")
    # A code span holding a backtick is written with double backticks and padding spaces.
    return cell[2:-2].strip() if cell.startswith("``") else cell[1:-1]
