"""Where batch rounds live: submitted to a Batch API or recorded for export, collected, imported (V540 tables).

Every write is one transaction: a batch is recorded with its lines right after the provider created it, a batch's
lines are stored with its new status, an import stores every line of its files or none.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from peras.errors import UsageError, mask_secrets
from peras.llm.batches import (
    DONE_STATUSES,
    BatchAPI,
    OutputLine,
    batch_errors,
    input_line,
    read_collected_line,
    split_lines,
)
from peras.settings import Settings
from peras.sql import query_rows, run_sql
from peras.warehouse import connect, now, open_migrated, retrying, transaction
from tasks.engine.endpoint import Endpoint, public_url
from tasks.engine.runs import run_probe_requests
from tasks.engine.spec import RunIdentity


def batch_api(settings: Settings, endpoint: Endpoint) -> BatchAPI | None:
    """The Batch API of the endpoint; None when batch mode writes files for vLLM's run-batch (no base URL)."""
    if not endpoint.base_urls:
        return None
    if len(endpoint.base_urls) > 1:
        raise UsageError("batch mode submits to one Batch API: give one --base-url")
    return BatchAPI(endpoint.base_urls[0], settings.api_key_env, settings.request_timeout_s)


def submit(
    settings: Settings, api: BatchAPI | None, identity: RunIdentity, pending: dict[str, tuple[str, int, dict[str, Any]]]
) -> list[str]:
    """Submit a round's lines (split at the providers' limits); their batch ids.

    Each batch is recorded with its lines BEFORE the provider creates it: as 'submitting', under a token that the
    create call carries in the batch's metadata; then it takes the provider's batch id. A process killed between the
    create and that second write leaves a 'submitting' batch, which the next call adopts (the provider's batch with
    its token) instead of creating another (`settle_submissions`): a round is never created twice."""
    if not pending:
        return []
    with connect(settings.warehouse, read_only=True) as con:
        round_ = int(run_sql(con, "engine/batch/select_next_round", {"run_id": identity.run_id}).fetchone()[0])
    order = sorted(pending)
    ids: list[str] = []
    start = 0
    for index, chunk in enumerate(split_lines([input_line(cid, pending[cid][2]) for cid in order])):
        chosen, start = order[start : start + len(chunk)], start + len(chunk)
        if api is None:
            batch_id = f"file-{uuid.uuid4().hex[:16]}"
            record_batch(settings, identity, batch_id, round_, "exported", None, None, chosen, pending, keep_body=True)
        else:
            file_id = api.upload(b"".join(chunk), f"peras-{identity.run_name}-round{round_}-{index + 1}.jsonl")
            token = uuid.uuid4().hex
            pending_id, url = f"{SUBMITTING}-{token}", public_url(api.base_url)
            record_batch(settings, identity, pending_id, round_, SUBMITTING, file_id, url, chosen, pending, False)
            created = api.create(file_id, submission_metadata(token, round_))
            batch_id = adopt_batch(settings, pending_id, created)
        ids.append(batch_id)
    return ids


SUBMITTING = "submitting"  # a batch recorded, not yet known to be created at the provider (its id: submitting-<token>)
TOKEN_KEY = "peras_submission"


def submission_metadata(token: str, round_: int) -> dict[str, str]:
    """The metadata a batch is created with: its submission token (how a resume finds it) and its round."""
    return {TOKEN_KEY: token, "peras_round": str(round_)}


def adopt_batch(settings: Settings, pending_id: str, created: dict[str, Any]) -> str:
    """The recorded submission takes the provider's batch id and status (one transaction); the batch id."""
    params = {"pending_id": pending_id, "batch_id": str(created["id"]), "status": str(created["status"]),
              "updated_at": now()}  # fmt: skip

    def write() -> None:
        with open_migrated(settings.warehouse) as con, transaction(con):
            run_sql(con, "engine/batch/adopt_batch", params)

    retrying(write)
    return str(created["id"])


def settle_submissions(settings: Settings, api: BatchAPI, model: str) -> list[tuple[str, str]]:
    """Every submission of the model at this Batch API recorded but not known to be created (a process killed
    between create and record): adopt the provider's batch whose metadata carries its token, or create it now.
    (batch id, 'adopted' or 'created')."""
    with connect(settings.warehouse, read_only=True) as con:
        rows = run_sql(
            con, "engine/batch/select_submitting", {"model": model, "base_url": public_url(api.base_url)}
        ).fetchall()
    if not rows:
        return []
    made = {
        str((batch.get("metadata") or {}).get(TOKEN_KEY)): batch
        for batch in api.list_batches()
        if (batch.get("metadata") or {}).get(TOKEN_KEY)
    }
    settled = []
    for pending_id, round_, file_id in rows:
        token = str(pending_id).removeprefix(f"{SUBMITTING}-")
        found = made.get(token)
        created = found or api.create(str(file_id), submission_metadata(token, int(round_)))
        settled.append((adopt_batch(settings, pending_id, created), "adopted" if found else "created"))
    return settled


def within_budget(
    settings: Settings, identity: RunIdentity, pending: dict[str, tuple[str, int, dict[str, Any]]]
) -> tuple[dict[str, tuple[str, int, dict[str, Any]]], int, int]:
    """The lines of a round that the run's --request-budget leaves room for (in custom_id order), how many are held
    back, and how many the run has spent (every line of its batches counts, answered or not)."""
    if settings.request_budget is None or not pending:
        return pending, 0, 0
    with connect(settings.warehouse, read_only=True) as con:
        spent = int(run_sql(con, "engine/batch/select_budget_spent", {"run_id": identity.run_id}).fetchone()[0])
        spent += run_probe_requests(con, identity)  # the answer-format probe's requests, online
    left = max(0, settings.request_budget - spent)
    kept = sorted(pending)[:left]
    return {cid: pending[cid] for cid in kept}, len(pending) - len(kept), spent


def record_batch(
    settings: Settings,
    identity: RunIdentity,
    batch_id: str,
    round_: int,
    status: str,
    file_id: str | None,
    base_url: str | None,
    custom_ids: list[str],
    pending: dict[str, tuple[str, int, dict[str, Any]]],
    keep_body: bool,
) -> None:
    """A submitted batch and its lines, in one transaction."""
    frame = pa.table(
        {
            "batch_id": pa.array([batch_id] * len(custom_ids), pa.string()),
            "custom_id": pa.array(custom_ids, pa.string()),
            "request_id": pa.array([pending[c][0] for c in custom_ids], pa.string()),
            "attempt": pa.array([pending[c][1] for c in custom_ids], pa.int32()),
            "body": pa.array([json.dumps(pending[c][2]) if keep_body else None for c in custom_ids], pa.string()),
        }
    )
    params = {
        "batch_id": batch_id,
        "run_id": identity.run_id,
        "kind": identity.kind,
        "model": identity.model,
        "base_url": base_url,
        "round": round_,
        "status": status,
        "input_file_id": file_id,
        "n_requests": len(custom_ids),
        "submitted_at": now(),
    }

    def write() -> None:
        with open_migrated(settings.warehouse) as con:
            con.register("submitted_lines", frame)
            with transaction(con):
                run_sql(con, "engine/batch/insert_batch", params)
                run_sql(con, "engine/batch/insert_batch_requests")

    retrying(write)


def collect(settings: Settings, api: BatchAPI, model: str) -> list[tuple[str, str]]:
    """Settle the model's unfinished submissions at this Batch API, poll its live batches, store what the ended
    ones answered. (batch id, status)."""
    settle_submissions(settings, api, model)
    seen = []
    for batch_id in live_batches(settings, api, model):
        batch = api.retrieve(batch_id)
        status = mask_secrets(str(batch["status"]))[:40]  # a provider's text, stored and shown: masked as every one
        lines: list[OutputLine] = []
        if status in DONE_STATUSES:
            for key in ("output_file_id", "error_file_id"):
                if batch.get(key):
                    data = api.content(str(batch[key]))
                    read = (read_collected_line(raw, f"{batch_id} {key}", n) for n, raw in lines_of(data))
                    lines += [line for line in read if line is not None]
        failure = batch_errors(batch) if status == "failed" else None
        store_lines(settings, batch_id, status, batch.get("output_file_id"), batch.get("error_file_id"), lines,
                    status in DONE_STATUSES, failure)  # fmt: skip
        seen.append((batch_id, status))
    return seen


def live_batches(settings: Settings, api: BatchAPI, model: str) -> list[str]:
    """The model's live batches at this Batch API, whichever run submitted them (two runs share a request's batch)."""
    with connect(settings.warehouse, read_only=True) as con:
        rows = run_sql(
            con, "engine/batch/select_live_batches", {"model": model, "base_url": public_url(api.base_url)}
        ).fetchall()
    return [batch_id for batch_id, _, _ in rows]


def lines_of(data: bytes) -> Iterator[tuple[int, bytes]]:
    """A file's non-blank lines, numbered from 1."""
    for number, raw in enumerate(data.splitlines(), 1):
        if raw.strip():
            yield number, raw


def store_lines(
    settings: Settings,
    batch_id: str,
    status: str,
    output_file_id: Any,
    error_file_id: Any,
    lines: list[OutputLine],
    done: bool,
    failure: str | None = None,
) -> None:
    """A batch's status, and when it has ended its lines, collected in one transaction. `failure`: the provider's
    reason for a batch that failed as a whole (each of its requests gets a 'batch_failed' line)."""
    frame = pa.table(
        {
            "custom_id": pa.array([line.custom_id for line in lines], pa.string()),
            "status_code": pa.array([line.status_code for line in lines], pa.int32()),
            "body": pa.array([json.dumps(line.body) if line.body is not None else None for line in lines], pa.string()),
            "error_code": pa.array([line.error_code for line in lines], pa.string()),
            "error_message": pa.array([line.error_message for line in lines], pa.string()),
        }
    )
    at = now()

    def write() -> None:
        with open_migrated(settings.warehouse) as con:
            con.register("collected_lines", frame)
            with transaction(con):
                run_sql(
                    con,
                    "engine/batch/update_batch_status",
                    {
                        "batch_id": batch_id,
                        "status": status,
                        "output_file_id": output_file_id,
                        "error_file_id": error_file_id,
                        "updated_at": at,
                    },
                )
                if done:
                    run_sql(con, "engine/batch/insert_batch_lines", {"batch_id": batch_id, "collected_at": at})
                    if failure is not None:
                        failed = {"batch_id": batch_id, "error_message": failure, "collected_at": at}
                        run_sql(con, "engine/batch/insert_failed_batch_lines", failed)
                    run_sql(con, "engine/batch/mark_collected", {"batch_id": batch_id, "collected_at": at})

    retrying(write)


def run_batches(settings: Settings, run_id: str) -> list[dict[str, Any]]:
    """A run's batches: id, round, status, requests, answered and failed lines, when submitted and collected."""
    with connect(settings.warehouse, read_only=True) as con:
        return query_rows(con, "engine/batch/select_run_batches", {"run_id": run_id})


def wait_line(batches: list[dict[str, Any]], n_waiting: int) -> str:
    """What a waiting run has out, in one line."""
    live = [b for b in batches if b["collected_at"] is None]
    states = ", ".join(f"{b['batch_id']} {b['status']} ({b['n_requests']:,} requests)" for b in live)
    return f"{n_waiting:,} items wait for batch answers; live: {states or 'none'}"


def cancel_batches(settings: Settings, run_id: str, model: str, api_key_env: str | None) -> list[tuple[str, str]]:
    """Cancel a run's live batches: at the provider (it keeps what it answered, collected later), or, for exported
    files, here (their requests go in the next round). A submission not known to be created is settled first (it
    is adopted, or created, then cancelled). (batch id, status)."""
    for url in sorted({b["base_url"] for b in run_batches(settings, run_id) if b["status"] == SUBMITTING}):
        api = BatchAPI(url, api_key_env, settings.request_timeout_s)
        try:
            settle_submissions(settings, api, model)
        finally:
            api.close()
    done = []
    for batch in run_batches(settings, run_id):
        if batch["collected_at"] is not None:
            continue
        if batch["base_url"] is None:
            store_lines(settings, batch["batch_id"], "cancelled", None, None, [], True)
            done.append((batch["batch_id"], "cancelled"))
            continue
        api = BatchAPI(batch["base_url"], api_key_env, settings.request_timeout_s)
        try:
            answer = api.cancel(batch["batch_id"])
        finally:
            api.close()
        status = mask_secrets(str(answer["status"]))[:40]
        store_lines(settings, batch["batch_id"], status, None, None, [], False)
        done.append((batch["batch_id"], status))
    return done


def collect_run(settings: Settings, run_id: str, model: str, api_key_env: str | None) -> list[tuple[str, str]]:
    """Collect what a run's live batches at their Batch APIs answered (each API polled once). (batch id, status)."""
    urls = {b["base_url"] for b in run_batches(settings, run_id) if b["collected_at"] is None and b["base_url"]}
    seen = []
    for url in sorted(urls):
        api = BatchAPI(url, api_key_env, settings.request_timeout_s)
        try:
            seen += collect(settings, api, model)
        finally:
            api.close()
    return seen
