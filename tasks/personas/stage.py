"""The personas check as the engine keeps it: one BFI-2 answer per personality x item x sample."""

from __future__ import annotations

from tasks.engine.stage import StageDeclaration, columns, declare

PERSONAS = declare(
    StageDeclaration(
        kind="personas",
        label="personas check run",
        runs_table="persona_check_runs",
        run_id="check_run_id",
        fixed=columns("personality_set, model, n_samples integer, sample_temperature double, seed bigint"),
        answers_table="persona_answers",
        history_table="persona_answer_history",
        keys=columns("personality, item_id integer, sample_index integer"),
        values=columns("answer integer"),
        time_column="answered_at",
        item_name=("%s item %d sample %d", ("personality", "item_id", "sample_index")),
        token_caps={"embedded": 8},  # one digit, perhaps a full stop
        differs="set, model, samples, temperature, seed, prompt or items",
    )
)
