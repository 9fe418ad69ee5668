"""The priming stage as the engine keeps it: one batch of scores per topic x trial x PL/EL x personality x condition."""

from __future__ import annotations

from tasks.engine.stage import StageDeclaration, columns, declare

PRIMING = declare(
    StageDeclaration(
        kind="priming",
        label="priming run",
        runs_table="priming_runs",
        run_id="priming_run_id",
        fixed=columns("collection_id, model, seed bigint"),
        answers_table="priming_batches",
        history_table="priming_batch_history",
        keys=columns("query_id, trial integer, n_prologue integer, n_epilogue integer, personality, condition"),
        planned=columns("doc_ids varchar[]"),
        values=columns("doc_ids varchar[], scores integer[]"),
        item_name=(
            "topic %s trial %d PL=%d EL=%d %s %s",
            ("query_id", "trial", "n_prologue", "n_epilogue", "personality", "condition"),
        ),
        items="batches",
        token_caps={"embedded": 256},  # a JSON object of 16 ids and scores is about 130 tokens
        checks=("assert_run_valid",),
        differs="collection, model, seed, prompt or request parameters",
        owned_tables=("priming_tests", "priming_indexes"),
    )
)
