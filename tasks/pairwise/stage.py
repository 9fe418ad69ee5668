"""The pairwise stage as the engine keeps it: one answer per pair x order x personality x prompt."""

from __future__ import annotations

from tasks.engine.stage import StageDeclaration, columns, declare

PAIRWISE = declare(
    StageDeclaration(
        kind="pairwise",
        label="pairwise run",
        runs_table="pairwise_runs",
        run_id="pairwise_run_id",
        fixed=columns("collection_id, subset_name, model, seed bigint"),
        answers_table="pairwise_answers",
        history_table="pairwise_answer_history",
        keys=columns("query_id, doc_1, doc_2, personality, prompt, position"),
        planned=columns("relevance_1 integer, relevance_2 integer"),
        values=columns("relevance_1 integer, relevance_2 integer, choice, confidence double"),
        failure_group=("personality", "prompt"),
        item_name=("topic %s %s/%s %s %s %s", ("query_id", "doc_1", "doc_2", "personality", "prompt", "position")),
        token_caps={"embedded": 96},  # a verdict and a certainty, or the SC JSON with a short explanation
        checks=("assert_run_valid",),
        differs="collection, subset, model, seed, prompt or request parameters",
    )
)
