"""The assessor page served (`peras assess serve`): a FastAPI app over a Desk, one plan served by one process."""

from __future__ import annotations

import fcntl
import hmac
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from peras.errors import UsageError
from tasks.assess.desk import Desk
from tasks.assess.pages import page

LOOPBACK = ("127.0.0.1", "localhost", "::1")


class Call(BaseModel):
    """What the page sends: who, the token it was opened with, and for a label or skip the pair (and the label)."""

    assessor: str = ""
    token: str = ""
    query_id: str = ""
    doc_id: str = ""
    relevance: int | None = None
    seconds: float | None = None


@contextmanager
def serving_lock(directory: Path, plan_id: str, plan_name: str) -> Iterator[None]:
    """Held while one process serves the plan (a kernel lock: freed when the process dies, however it dies)."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"assess-{plan_id}.lock"
    with path.open("a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            raise UsageError(
                f"plan {plan_name!r} is served already ({handle.read().strip() or 'another process'}): "
                "share that page, or stop it first"
            ) from None
        handle.truncate(0)
        handle.write(f"process {os.getpid()}")
        handle.flush()
        yield


def app(desk: Desk, plan_name: str, token: str | None) -> Any:
    """The page and its four calls; with a token, every call that writes must carry it."""
    from fastapi import FastAPI, HTTPException
    from fastapi.responses import HTMLResponse

    served = FastAPI(title=f"PERAS assessment: {plan_name}", docs_url=None, redoc_url=None, openapi_url=None)
    html = page({"mode": "server", "plan": plan_name, "showLlm": desk.show_llm})

    def checked(call: Call) -> Call:
        if token and not hmac.compare_digest(call.token.encode(), token.encode()):
            raise HTTPException(403, "wrong or missing token: open the page with the URL you were given")
        return call

    def answer(work: Any) -> Any:
        try:
            return work()
        except UsageError as exc:
            raise HTTPException(400, str(exc)) from None

    @served.get("/", response_class=HTMLResponse)
    def index() -> str:
        return html

    @served.post("/api/next")
    def next_pair(call: Call) -> Any:
        return answer(lambda: desk.next(checked(call).assessor))

    @served.post("/api/label")
    def label(call: Call) -> Any:
        c = checked(call)
        return answer(lambda: desk.label(c.assessor, c.query_id, c.doc_id, c.relevance, c.seconds))

    @served.post("/api/skip")
    def skip(call: Call) -> Any:
        c = checked(call)
        return answer(lambda: desk.skip(c.assessor, c.query_id, c.doc_id))

    @served.post("/api/undo")
    def undo(call: Call) -> Any:
        return answer(lambda: desk.undo(checked(call).assessor))

    return served


def exposure_warning(host: str, port: int, token: str | None) -> str | None:
    """What to say when the page is reachable beyond this machine."""
    if host in LOOPBACK:
        return None
    guard = "a label needs the token in the URL" if token else "give --token T and share the URL with ?token=T"
    return f"warning: serving on {host}:{port}: anyone who can reach this port can label ({guard})"
