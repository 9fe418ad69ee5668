"""The fuse stage as the engine keeps it: one fuser answer per pair."""

from __future__ import annotations

from tasks.engine.stage import StageDeclaration, columns, declare

FUSE = declare(
    StageDeclaration(
        kind="fuse",
        label="fuse run",
        runs_table="fuse_runs",
        run_id="fuse_run_id",
        fixed=columns("collection_id, feature_set_id, model, seed bigint"),
        answers_table="fuse_answers",
        history_table="fuse_answer_history",
        keys=columns("query_id, doc_id"),
        values=columns("judge_order, label integer, confidence double"),
        failure_group=(),
        failure_label="fuser",
        item_name=("topic %s passage %s", ("query_id", "doc_id")),
        token_caps={"embedded": 256},  # the fuser's JSON with a short explanation
        owned_tables=("fuse_judges", "fuse_votes"),
        differs="collection, judges, fuser model, seed, prompt or request parameters",
    )
)
