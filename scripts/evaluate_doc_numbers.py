"""Recompute the numbers docs/evaluate.md quotes for LLMJudge, with the real commands, and write or check them.

In a temporary warehouse: `peras ingest llmjudge`, `peras build-runs` (the 11 bm25s runs), `peras import-judgments`
of six submissions (`--out-of-range clip`), then per submission `peras evaluate --qrels NAME --format json` (the
agreement table) and `peras holes llmjudge --run NAME --run-file ...` over the 11 runs built (Olz-gpt4o at every share,
five more at 30/60/90%; given the files, holes does not build the same runs again).
The tables sit in docs/evaluate.md between `<!-- generated: NAME -->` and `<!-- end generated -->`.

    .venv/bin/python scripts/evaluate_doc_numbers.py           # rewrite the tables in docs/evaluate.md
    .venv/bin/python scripts/evaluate_doc_numbers.py --check   # exit 1 if a table differs from what the code gives

About 10 minutes on two shared cores. Data from ../shared/data (PERAS_DATA_DIR).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import re
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "evaluate.md"
DATA = Path(os.environ.get("PERAS_DATA_DIR", ROOT.parent / "shared" / "data"))
AGREEMENT = ["h2oloo-fewself", "willia-umbrela1", "Olz-gpt4o", "RMITIR-llama70B", "h2oloo-zeroshot1", "RMITIR-GPT4o"]
HOLES_RUN = "Olz-gpt4o"
HOLES_MORE = ["h2oloo-fewself", "willia-umbrela1", "RMITIR-llama70B", "h2oloo-zeroshot1", "RMITIR-GPT4o"]
BLOCK = re.compile(r"(<!-- generated: (?P<name>[\w-]+) -->\n)(?P<body>.*?)(<!-- end generated -->)", re.S)


def peras(warehouse: Path, *args: str) -> str:
    """One real `peras` command against the temporary warehouse; its stdout (a failure stops the script).

    Through the real entry point (cli.main.main: same error handling and exit codes) in this process, as the tests'
    run_cli does: twenty new processes would each import Prefect and the pipeline again (~2 s of CPU each).
    """
    from cli.main import main

    out, err, argv, code = io.StringIO(), io.StringIO(), sys.argv, 0
    sys.argv = ["peras", *args, "--warehouse", str(warehouse)]
    try:
        with contextlib.chdir(ROOT), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            main()
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1
    finally:
        sys.argv = argv
    if code != 0:
        raise SystemExit(f"peras {' '.join(args)} failed:\n{err.getvalue()}")
    return out.getvalue()


def holes_rows(text: str) -> dict[float, list[str]]:
    """`peras holes`'s table: share -> [n_hidden, hidden_accuracy, kendall_tau, spearman_rho, tau_ap, mean tau]."""
    rows = {}
    for line in text.splitlines()[2:]:
        share, _measure, *values = line.split()
        rows[float(share)] = values
    return rows


def f3(value: str | float | None) -> str:
    return "-" if value in (None, "-") else f"{float(value):.3f}"


def compute() -> dict[str, str]:
    """Every generated table's markdown body, by name."""
    with tempfile.TemporaryDirectory(prefix="peras-doc-numbers-") as tmp:
        warehouse, runs = Path(tmp) / "peras.duckdb", Path(tmp) / "runs"
        peras(warehouse, "ingest", "llmjudge", "--data-dir", str(DATA))
        files = peras(warehouse, "build-runs", "--collection", "llmjudge", "--output-dir", str(runs)).split()
        for name in dict.fromkeys([*AGREEMENT, HOLES_RUN, *HOLES_MORE]):
            path = DATA / "llmjudge" / "judge-runs" / f"{name}.txt"
            peras(warehouse, "import-judgments", str(path), "--name", name, "--collection", "llmjudge",
                  "--out-of-range", "clip")  # fmt: skip
        agreement = [
            "| submission | Kendall's tau | Spearman's rho | tau-AP | mean per-topic tau |",
            "|---|---|---|---|---|",
        ]
        for name in AGREEMENT:
            summary = json.loads(peras(warehouse, "evaluate", *files, "--collection", "llmjudge", "--qrels", name,
                                       "--format", "json"))  # fmt: skip
            [row] = [r for r in summary["agreement"] if r["measure"] == "nDCG@10"]
            values = [row["kendall_tau"], row["spearman_rho"], row["tau_ap"], row["mean_topic_tau"]]
            agreement.append(f"| {name} | " + " | ".join(f3(v) for v in values) + " |")
        # the runs just built, not built again by each `peras holes` (the same eleven files: it builds them alike)
        systems = [option for path in files for option in ("--run-file", path)]
        shares = holes_rows(peras(warehouse, "holes", "llmjudge", "--run", HOLES_RUN, *systems))
        olz = [
            "| share | hidden | LLM = human on hidden | Kendall's tau | Spearman's rho | tau-AP | mean per-topic tau |",
            "|---|---|---|---|---|---|---|",
        ]
        for share, (hidden, accuracy, *taus) in sorted(shares.items()):
            olz.append(
                f"| {share:.0%} | {int(hidden.replace(',', '')):,} | " + " | ".join(map(f3, [accuracy, *taus])) + " |"
            )
        more = [
            "| submission | LLM = human on hidden (30/60/90%) | Kendall's tau 30% | 60% | 90% "
            "| tau-AP 30% | 60% | 90% |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for name in HOLES_MORE:
            got = holes_rows(peras(warehouse, "holes", "llmjudge", "--run", name, *systems, "--share", "0.3",
                                   "--share", "0.6", "--share", "0.9"))  # fmt: skip
            rows = [got[s] for s in (0.3, 0.6, 0.9)]
            accuracy = " / ".join(f3(r[1]) for r in rows)
            more.append(f"| {name} | {accuracy} | " + " | ".join(f3(r[i]) for i in (2, 4) for r in rows) + " |")
    return {
        "llmjudge-agreement": "\n".join(agreement),
        "llmjudge-holes": "\n".join(olz),
        "llmjudge-holes-more": "\n".join(more),
    }


def render(doc: str, tables: dict[str, str]) -> str:
    """The doc with every generated block's body replaced by its table."""
    return BLOCK.sub(lambda m: f"{m[1]}{tables[m['name']]}\n{m[4]}", doc)


def main() -> None:
    """Rewrite docs/evaluate.md's generated tables, or with --check say whether they are up to date."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if docs/evaluate.md differs")
    args = parser.parse_args()
    doc = DOC.read_text(encoding="utf-8")
    wanted = render(doc, compute())
    if args.check:
        if wanted != doc:
            raise SystemExit("docs/evaluate.md's generated tables are stale: run scripts/evaluate_doc_numbers.py")
        print("docs/evaluate.md: generated tables up to date")
        return
    DOC.write_text(wanted, encoding="utf-8")
    print(f"wrote {DOC}")


if __name__ == "__main__":
    main()
