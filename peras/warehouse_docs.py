"""Write docs/warehouse.md from the SQL itself: every table, view and table macro, with its columns.

    python -m peras.warehouse_docs            # rewrite docs/warehouse.md
    python -m peras.warehouse_docs --check    # exit 1 if docs/warehouse.md is out of date

Names and types come from a freshly migrated in-memory warehouse (information_schema). Meanings come from the
SQL files: the comment above each `create table` and each column's trailing `-- comment` in sql/migrations, the
header comment of each view file, and `name   meaning` lines in the headers of the views and of the macros they
call. Columns no file explains take their meaning from GLOSSARY (a name means one thing everywhere).
"""

from __future__ import annotations

import fnmatch
import re
import sys
from dataclasses import dataclass, field

import duckdb

from peras.paths import PROJECT_ROOT
from peras.sql import query_frame, view_files
from peras.warehouse import FILE_ONLY, migrate, migrations
from peras.warehouse_doc_text import EXAMPLES, INTRO, MACROS_NOTE
from peras.warehouse_glossary import GLOSSARY, TABLES

DOC_PATH = PROJECT_ROOT / "docs" / "warehouse.md"
CREATE_TABLE = re.compile(r"^create table if not exists (\w+)\s*\(", re.IGNORECASE)
ALTER_ADD = re.compile(r"^alter table (\w+) add column if not exists (\w+)\b[^-]*(?:--\s*(.*))?$", re.IGNORECASE)
COLUMN_LINE = re.compile(r"^\s+(\w+)\s+[A-Za-z][^-]*?(?:--\s*(.*))?$")
CONSTRAINTS = {"primary", "unique", "check", "foreign", "constraint"}
CREATE_MACRO = re.compile(r"^create or replace macro (\w+)\((.*?)\) as table", re.IGNORECASE | re.MULTILINE)
NAMED_LINE = re.compile(r"^\s{2,}([\w*]+)\s{2,}(\S.*)$")  # "--   accuracy     sum_i n_ii / N"
CALLS = re.compile(r"\b(\w+)\s*\(")


@dataclass
class Relation:
    """A table or view: where it is defined, what it is, what its columns mean."""

    name: str
    kind: str
    source: str
    about: str = ""
    columns: list[tuple[str, str]] = field(default_factory=list)  # (name, type)
    meanings: dict[str, str] = field(default_factory=dict)


@dataclass
class Macro:
    """A table macro (sql/metrics/*_from.sql and friends): a view that takes arguments."""

    name: str
    arguments: str
    source: str
    about: str
    named: dict[str, str]
    calls: set[str]


def comment_text(lines: list[str]) -> str:
    """Comment lines as one paragraph (the `--` removed)."""
    return " ".join(line.strip().removeprefix("--").strip() for line in lines).strip()


def header(text: str) -> list[str]:
    """The comment lines at the top of a SQL file, without their `--`."""
    out = []
    for line in text.splitlines():
        if not line.lstrip().startswith("--"):
            break
        if not line.startswith("-- needs:"):  # the tables a view waits for (peras.warehouse.apply_views), not prose
            out.append(line.lstrip()[2:])
    return out


def summary_of(lines: list[str]) -> str:
    """A header's prose: its lines up to the first `name  meaning` list or blank comment line."""
    kept = []
    for line in lines:
        if not line.strip() or NAMED_LINE.match(line):
            break
        kept.append(line.strip())
    return " ".join(kept)


def named_meanings(lines: list[str]) -> dict[str, str]:
    """`name   meaning` lines of a header (names may hold a * wildcard)."""
    found: dict[str, str] = {}
    last, indent = "", 0
    for line in lines:
        match = NAMED_LINE.match(line)
        if match:
            # "overconfidence  O = ...      ro = ...": a second formula after a wide gap belongs to another name
            last, indent = match.group(1), match.start(2)
            found[last] = re.split(r"\s{3,}|;\s{2,}", match.group(2).strip())[0]
        elif last and line.strip() and len(line) - len(line.lstrip()) >= indent:
            found[last] += " " + line.strip()  # the meaning continues on an indented line
        else:
            last = ""
    return found


def parse_migrations() -> tuple[dict[str, tuple[str, str]], dict[tuple[str, str], str], dict[tuple[str, str], str]]:
    """From the migrations' comments: table -> (source file, description); (table, column) -> its trailing
    comment; (table, column) -> the comment above an `alter table ... add column` (a weaker hint)."""
    tables: dict[str, tuple[str, str]] = {}
    columns: dict[tuple[str, str], str] = {}
    added: dict[tuple[str, str], str] = {}
    for _, _, path in migrations():
        source = str(path.relative_to(PROJECT_ROOT))
        pending: list[str] = []
        file_header = ""
        table: str | None = None
        last_column: str | None = None
        for line in path.read_text(encoding="utf-8").splitlines():
            stripped = line.strip()
            if stripped == FILE_ONLY:  # a directive for migrate(), not prose
                continue
            if table is not None:
                if stripped.startswith(")"):
                    table = None
                    continue
                if stripped.startswith("--") and last_column:  # a comment line continuing the column's
                    key = (table, last_column)
                    columns[key] = f"{columns.get(key, '')} {stripped[2:].strip()}".strip()
                    continue
                match = COLUMN_LINE.match(line)
                if match and match.group(1).lower() not in CONSTRAINTS:
                    last_column = match.group(1)
                    if match.group(2):
                        columns[(table, last_column)] = match.group(2).strip()
                continue
            if stripped.startswith("--"):
                pending.append(stripped)
            elif not stripped:
                if pending and not file_header:
                    file_header = comment_text(pending)
                pending = []
            elif match := CREATE_TABLE.match(stripped):
                table, last_column = match.group(1), None
                tables[table] = (source, comment_text(pending) or TABLES.get(table, file_header))
                pending = []
            elif match := ALTER_ADD.match(stripped):
                name, column, inline = match.groups()
                if inline:
                    columns[(name, column)] = inline.strip()
                elif pending:
                    added[(name, column)] = comment_text(pending)
                pending = []
            else:
                pending = []
    return tables, columns, added


def parse_views() -> tuple[dict[str, tuple[str, list[str], str]], dict[str, Macro]]:
    """View -> (source file, header lines, body); macro name -> Macro."""
    views: dict[str, tuple[str, list[str], str]] = {}
    macros: dict[str, Macro] = {}
    for path in view_files():
        text = path.read_text(encoding="utf-8")
        source = str(path.relative_to(PROJECT_ROOT))
        lines = header(text)
        body = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("--"))
        macro = CREATE_MACRO.search(text)
        if macro:
            about = summary_of(lines)
            about = re.sub(rf"^{macro.group(1)}\([^)]*\):\s*", "", about)
            macros[macro.group(1)] = Macro(
                macro.group(1), macro.group(2), source, about, named_meanings(lines), set(CALLS.findall(body))
            )
        else:
            views[path.stem] = (source, lines, body)
    return views, macros


def macro_meanings(names: set[str], macros: dict[str, Macro]) -> dict[str, str]:
    """Column meanings from the macros called, and the macros they call (nearest first)."""
    found: dict[str, str] = {}
    seen: set[str] = set()
    queue = [n for n in sorted(names) if n in macros]
    while queue:
        name = queue.pop(0)
        if name in seen:
            continue
        seen.add(name)
        for key, meaning in macros[name].named.items():
            found.setdefault(key, meaning)
        queue += [n for n in sorted(macros[name].calls) if n in macros and n not in seen]
    return found


def wildcard(column: str, sources: list[dict[str, str]]) -> str | None:
    """The most specific wildcard entry (`th_acc_*` before `th_*`) of the first source that has one."""
    for meanings in sources:
        keys = [k for k in meanings if "*" in k and fnmatch.fnmatchcase(column, k)]
        if keys:
            return meanings[max(keys, key=len)]
    return None


def meaning_for(column: str, specific: list[dict[str, str]], general: list[dict[str, str]], combine: bool) -> str:
    """A column's meaning: what its own SQL says, else the glossary's; for views, both (prose: formula)."""
    own = next((m for s in specific if (m := s.get(column))), None)
    shared = next((m for s in general if (m := s.get(column))), None)
    if own and shared and combine and shared != own:
        return f"{shared}: {own}"
    return own or shared or wildcard(column, specific + general) or ""


def collect() -> tuple[list[Relation], dict[str, Macro]]:
    """Every table and view of a fresh warehouse, documented."""
    con = duckdb.connect()
    try:
        migrate(con)
        frame = query_frame(con, "warehouse/select_columns")
    finally:
        con.close()
    tables, table_columns, added = parse_migrations()
    views, macros = parse_views()
    relations: dict[str, Relation] = {}
    for row in frame.iter_rows(named=True):
        name = row["relation_name"]
        if name not in relations:
            # schema_migrations is made by peras/warehouse.py itself, not by a migration
            source, about = tables.get(name, ("peras/warehouse.py", TABLES.get(name, "")))
            if row["relation_kind"] == "view":
                source = views.get(name, ("", [], ""))[0]
                about = summary_of(views.get(name, ("", [], ""))[1])
            relations[name] = Relation(name, row["relation_kind"], source, about)
        relations[name].columns.append((row["column_name"], row["data_type"]))
    by_name = {column: meaning for (_, column), meaning in sorted(table_columns.items())}
    for relation in relations.values():
        if relation.kind == "table":
            own = {c: m for (t, c), m in table_columns.items() if t == relation.name}
            qualified = {k.split(".", 1)[1]: m for k, m in GLOSSARY.items() if k.startswith(relation.name + ".")}
            hints = {c: m for (t, c), m in added.items() if t == relation.name}
            specific, general = [own, qualified, hints], [GLOSSARY]
        else:
            _, lines, body = views.get(relation.name, ("", [], ""))
            specific = [named_meanings(lines), macro_meanings(set(CALLS.findall(body)), macros)]
            general = [GLOSSARY, by_name]
        for column, _ in relation.columns:
            meaning = meaning_for(column, specific, general, combine=relation.kind == "view")
            if meaning:
                relation.meanings[column] = meaning
    return sorted(relations.values(), key=lambda r: (r.kind != "table", r.name)), macros


def render() -> str:
    """The whole of docs/warehouse.md."""
    relations, macros = collect()
    out = [INTRO.strip(), "", "## Example queries", ""]
    for number, (title, note, sql) in enumerate(EXAMPLES, start=1):
        out += [f"### {number}. {title}", "", note, "", "```sql", sql.strip(), "```", ""]
    out += ["## Contents", "", "| name | kind | what it holds |", "|---|---|---|"]
    out += [f"| [`{r.name}`](#{r.name}) | {r.kind} | {first_sentence(r.about)} |" for r in relations]
    for kind, title in (("table", "Tables"), ("view", "Views")):
        out += ["", f"## {title}"]
        for relation in (r for r in relations if r.kind == kind):
            out += ["", f"### {relation.name}", "", f"{relation.about} (`{relation.source}`)".strip(), ""]
            out += ["| column | type | meaning |", "|---|---|---|"]
            for column, dtype in relation.columns:
                meaning = relation.meanings.get(column, "")
                out.append(f"| `{column}` | {dtype} | {escape_cell(meaning)} |")
    out += [
        "",
        "## Table macros",
        "",
        MACROS_NOTE.strip(),
        "",
        "| macro | what it returns | defined in |",
        "|---|---|---|",
    ]
    for macro in sorted(macros.values(), key=lambda m: m.name):
        call = f"`{macro.name}({macro.arguments})`"
        out.append(f"| {escape_cell(call)} | {escape_cell(macro.about)} | `{macro.source}` |")
    return "\n".join(out) + "\n"


def undocumented() -> list[str]:
    """`relation.column` for every column without a meaning."""
    relations, _ = collect()
    return [f"{r.name}.{c}" for r in relations for c, _ in r.columns if c not in r.meanings]


def first_sentence(text: str) -> str:
    """Up to the first full stop, for the contents table."""
    match = re.match(r"(.+?\.)(\s|$)", text)
    return escape_cell((match.group(1) if match else text).rstrip("."))


def escape_cell(text: str) -> str:
    """Text safe inside a markdown table cell."""
    return text.replace("|", "\\|").replace("\n", " ")


def main(argv: list[str] | None = None) -> int:
    """Rewrite docs/warehouse.md, or with --check, report whether it is up to date."""
    args = sys.argv[1:] if argv is None else argv
    text = render()
    if "--check" in args:
        current = DOC_PATH.read_text(encoding="utf-8") if DOC_PATH.exists() else ""
        if current != text:
            print(f"{DOC_PATH} is out of date: run `python -m peras.warehouse_docs`", file=sys.stderr)
            return 1
        return 0
    DOC_PATH.write_text(text, encoding="utf-8")
    missing = undocumented()
    print(
        f"wrote {DOC_PATH} ({len(text.splitlines())} lines); {len(missing)} columns without a meaning"
        + (f": {', '.join(missing)}" if missing else "")
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
