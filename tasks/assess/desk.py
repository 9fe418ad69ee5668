"""What the assessor page asks of the warehouse: the next pair for an assessor, a label, a skip, an undo. Each is a
short transaction of its own, so a server killed at any moment has lost no label it acknowledged."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from peras.errors import UsageError
from peras.sql import query_rows, run_sql
from peras.warehouse import now, open_migrated, transaction

DONE = {"ok": True}
PAIR_FIELDS = ("query_id", "doc_id", "query_text", "passage_text")


@dataclass
class Desk:
    """One plan's pairs handed to assessors: a pair to at most `overlap` of them; LLM labels only if `show_llm`."""

    warehouse: Path
    plan_id: str
    overlap: int = 1
    show_llm: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)  # one warehouse write at a time, claims atomic

    def next(self, assessor: str) -> dict[str, Any]:
        """The pair the assessor was given and has not answered, else a new one claimed for them; and progress."""
        with self.lock, open_migrated(self.warehouse) as con, transaction(con):
            keys = self._keys(assessor)
            found = query_rows(con, "assess/select_pending", keys)
            if not found:
                found = query_rows(con, "assess/select_unclaimed", keys | {"overlap": self.overlap})
                if found:
                    run_sql(con, "assess/insert_claim", keys | found[0] | {"is_skipped": False, "claimed_at": now()})
            pair = self._pair(con, found[0]) if found else None
            progress = query_rows(con, "assess/select_progress", keys)[0]
        return {"pair": pair, **progress}

    def label(
        self, assessor: str, query_id: str, doc_id: str, relevance: int | None, seconds: float | None
    ) -> dict[str, bool]:
        """Store the assessor's label of a pair of the plan (replacing theirs, if they gave one)."""
        if relevance not in (0, 1, 2, 3):
            raise UsageError(f"label {relevance!r} is not one of 0, 1, 2, 3")
        with self.lock, open_migrated(self.warehouse) as con, transaction(con):
            pair = self._keys(assessor) | {"query_id": query_id, "doc_id": doc_id}
            self._require(con, pair)
            given = {"relevance": relevance, "seconds": seconds, "labelled_at": now()}
            run_sql(con, "assess/upsert_label", pair | given)
        return DONE

    def skip(self, assessor: str, query_id: str, doc_id: str) -> dict[str, bool]:
        """The assessor passes on a pair: it is not given to them again, and may go to another assessor."""
        with self.lock, open_migrated(self.warehouse) as con, transaction(con):
            pair = self._keys(assessor) | {"query_id": query_id, "doc_id": doc_id}
            self._require(con, pair)
            run_sql(con, "assess/insert_claim", pair | {"is_skipped": True, "claimed_at": now()})
        return DONE

    def undo(self, assessor: str) -> dict[str, bool]:
        """Remove the assessor's latest label given on the page; its pair is the next they get."""
        with self.lock, open_migrated(self.warehouse) as con, transaction(con):
            run_sql(con, "assess/delete_last_label", self._keys(assessor))
        return DONE

    def _keys(self, assessor: str) -> dict[str, Any]:
        name = assessor.strip()
        if not name:
            raise UsageError("give the assessor's name")
        return {"plan_id": self.plan_id, "assessor": name}

    def _require(self, con: Any, pair: dict[str, Any]) -> dict[str, Any]:
        found = query_rows(con, "assess/select_pair", pair)
        if not found:
            raise UsageError(f"pair ({pair['query_id']}, {pair['doc_id']}) is not in this plan: label only its pairs")
        return found[0]

    def _pair(self, con: Any, keys: dict[str, Any]) -> dict[str, Any]:
        row = self._require(con, {"plan_id": self.plan_id, **keys})
        return {k: row[k] for k in PAIR_FIELDS} | ({"llm_label": row["llm_label"]} if self.show_llm else {})
