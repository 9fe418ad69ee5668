"""Batch mode's files for vLLM's offline `run-batch` (no Batch API): a run's rounds exported as input files, and the
runner's output files imported into the warehouse (every line checked first; all of a call's lines or none).
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa

from peras.errors import InputError, UsageError, clip
from peras.llm.batches import OutputLine, input_line, read_output_line
from peras.settings import Settings
from peras.sql import run_sql
from peras.warehouse import connect
from tasks.engine.batch_store import lines_of, store_lines


def export_files(settings: Settings, run_id: str, output: Path) -> list[Path]:
    """Write the input files of a run's exported batches not yet imported, one per batch, for `vllm run-batch`."""
    with connect(settings.warehouse, read_only=True) as con:
        rows = run_sql(con, "engine/batch/select_exported_requests", {"run_id": run_id}).fetchall()
    by_batch: dict[str, list[bytes]] = {}
    for batch_id, cid, _, _, body, is_collected in rows:
        if not is_collected:
            by_batch.setdefault(batch_id, []).append(input_line(cid, json.loads(body)))
    _refuse_output(settings, output)
    paths = [output / f"{batch_id}.jsonl" for batch_id in by_batch]
    in_the_way = [path for path in paths if path.exists()]
    if in_the_way:
        raise UsageError(f"{in_the_way[0]} exists; nothing was written (choose another --output or move it)")
    output.mkdir(parents=True, exist_ok=True)
    for path, lines in zip(paths, by_batch.values(), strict=True):
        path.write_bytes(b"".join(lines))
    return paths


def _refuse_output(settings: Settings, output: Path) -> None:
    """--output must be a directory, or a path one can be made at: not the warehouse, nor a file or a path under
    one (one line, exit 2, before anything is written)."""
    for place in (output, *output.parents):
        if place.exists() and not place.is_dir():
            what = "the warehouse" if place.resolve() == settings.warehouse.resolve() else "a file"
            under = "" if place == output else f" (under {place}, {what})"
            named = f"{output} is {what}" if place == output else f"{output} is no directory{under}"
            raise UsageError(f"--output {named}; give a directory for the input files (nothing was written)")


def import_files(settings: Settings, run_id: str, run_name: str, paths: list[Path]) -> dict[str, int]:
    """Read output files of vLLM's run-batch (or any runner of the format) into a run's exported batches.

    Every line is checked before anything is written, and the first bad one is named with its file and line: a
    line that is no batch output (a foreign or truncated file), a custom_id the run is not waiting for, one given
    twice, an answer of another model, an answer for a request that already has one. A line collected before with
    the same answer is skipped (a file imported twice changes nothing). The batches the files answer are collected:
    their requests without a line go in the next round."""
    with connect(settings.warehouse, read_only=True) as con:
        rows = run_sql(con, "engine/batch/select_exported_requests", {"run_id": run_id}).fetchall()
        before = {
            cid: (status, json.loads(body) if body else None)
            for cid, status, body in run_sql(con, "engine/batch/select_collected_bodies", {"run_id": run_id}).fetchall()
        }
    waiting = {
        cid: (batch_id, rid, json.loads(body)["model"]) for batch_id, cid, rid, _, body, done in rows if not done
    }
    accepted: dict[str, list[OutputLine]] = {}
    where: dict[str, tuple[Path, int]] = {}
    n_same = 0
    for path in paths:
        if not path.is_file():
            raise UsageError(f"{path} is not a file; nothing was imported")
        for number, raw in lines_of(path.read_bytes()):
            line = read_output_line(raw, path, number)
            cid = line.custom_id
            if cid in before and before[cid] == (line.status_code, line.body):
                n_same += 1
                continue
            if cid not in waiting:
                why = (
                    "was answered by an earlier import" if cid in before else f"is no request run {run_name} waits for"
                )
                raise InputError(f"custom_id {clip(cid, quote=True)} {why}; nothing was imported", path, number)
            if cid in where:
                first = f"{where[cid][0]}:{where[cid][1]}"
                raise InputError(
                    f"custom_id {clip(cid, quote=True)} is answered twice (first at {first})", path, number
                )
            answered_by = (line.body or {}).get("model")
            if line.body is not None and answered_by != waiting[cid][2]:
                raise InputError(
                    f"answered by model {clip(answered_by, quote=True)}, run {run_name} asks {waiting[cid][2]!r};"
                    " nothing was imported",
                    path,
                    number,
                )
            accepted.setdefault(waiting[cid][0], []).append(line)
            where[cid] = (path, number)
    _refuse_answered(settings, {cid: waiting[cid][1] for cid in where}, where)
    for batch_id, lines in accepted.items():
        store_lines(settings, batch_id, "completed", None, None, lines, True)
    return {"n_lines": len(where), "n_same": n_same, "n_batches": len(accepted)}


def _refuse_answered(settings: Settings, requests: dict[str, str], where: dict[str, tuple[Path, int]]) -> None:
    """An import never replaces a stored answer: name the first line whose request has one."""
    if not requests:
        return
    frame = pa.table(
        {
            "custom_id": pa.array(list(requests), pa.string()),
            "request_id": pa.array(list(requests.values()), pa.string()),
        }
    )
    with connect(settings.warehouse, read_only=True) as con:
        con.register("imported_lines", frame)
        answered = {cid for (cid,) in run_sql(con, "engine/batch/select_import_conflicts").fetchall()}
    if answered:
        cid = min(answered, key=lambda c: where[c])
        raise InputError(
            f"custom_id {clip(cid, quote=True)}: its request already has an answer stored; nothing was imported",
            *where[cid],
        )
