"""The judge stage as the engine keeps it: one judgment per pair x personality x CoT setting x confidence method.

A judgment references several requests (label, confidence, samples) and is re-derived from them at loading
(sql/judge/views/judgment_check.sql), so judge keeps its own staging, merge and status files (`own_sql`); its runs,
imported ones included, are listed, shown, renamed and deleted with every other stage's (`peras runs`).
"""

from __future__ import annotations

from tasks.engine.stage import StageDeclaration, columns, declare

JUDGE = declare(
    StageDeclaration(
        kind="judge",
        label="judge run",
        runs_table="judge_runs",
        run_id="run_id",
        fixed=columns("collection_id, subset_name, model"),
        answers_table="judgments",
        history_table="judgment_history",
        keys=columns("query_id, doc_id, personality, cot boolean, confidence_method"),
        values=columns("label integer, confidence double, expected_score double"),
        item_name=("topic %s passage %s %s", ("query_id", "doc_id", "personality")),
        items="judgments",
        token_caps={"embedded": 4},  # the label prompt's one digit (tasks/judge/tasks.py caps each purpose)
        own_sql=frozenset({"stage_outcomes", "merge_outcomes", "set_run_status", "delete_run", "rename_run"}),
        owned_tables=("import_reports",),
    )
)
