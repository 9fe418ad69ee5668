"""Recognize flow: does the persona show in the judge's reasoning? Explainable personality recognition (the
PersonalityEvd paper's EPR-S and EPR-T) over a judge run's own with-CoT answers.

First the recognizer reads its check set (texts written for PERAS with a known level and evidence: its accuracy
and evidence-id F1 are reported before any verdict on a persona). Then, for each personality of the judge run, a
seeded sample of its CoT answers (tasks/recognize/tasks.py) is split into numbered sentences and read, per answer
and Big-Five dimension, with the paper's Figure 6 prompt (level high / low / uncertain, the analysis, the ids of the
sentences it rests on); then, per personality and dimension, the recognizer writes the trait evidence over the same
sample (one paragraph per facet, Figure 8's form); last, with an evidence judge model named, that LLM scores the
recognizer's check-set evidence 1-5 against the check set's (the paper's §4.1-4.2 evaluation). Every part runs on
the asking engine (cached, resumable, regenerated, gated) with the recognizer's model and endpoint (the evidence
judge: its model, and its endpoint where given). See docs/personas.md.
"""

from __future__ import annotations

from typing import Any

from prefect import flow

from peras.settings import Settings, load_settings
from tasks.engine.running import run_stage
from tasks.publish.tasks import publish_analyst_snapshot
from tasks.recognize.check_set import plan_check
from tasks.recognize.tasks import (
    RecognizeRecipe,
    choose_dimensions,
    load_cot_answers,
    load_measures,
    plan_evidence,
    plan_states,
    plan_traits,
    recognizer_settings,
    sample_answers,
    summarize,
)


@flow(name="recognize", flow_run_name="recognize-{judge_run}", log_prints=True)
def recognize(
    judge_run: str,
    dimensions: list[str] | None = None,
    sample: int = 30,
    seed: int = 42,
    run_name: str | None = None,
    recognizer_model: str | None = None,
    recognizer_base_url: str | None = None,
    evidence_judge_model: str | None = None,
    evidence_judge_base_url: str | None = None,
    chunk_size: int = 64,
    backend: str | None = None,
    retry_failed: bool = False,
    settings: Settings | None = None,
) -> dict[str, Any]:
    """Read the judge run's sampled CoT answers for the personas' Big-Five levels (per answer, then per trait).

    A run keeps its judge run, sample size, seed, recognizer model and prompt; calling it again resumes it: no
    request is sent twice. The trait judgments are run RUN_NAME-traits (default: JUDGE_RUN-traits-MODEL), the
    evidence scores (with `evidence_judge_model`) RUN_NAME-evidence (default: JUDGE_RUN-evidence-JUDGE_MODEL).
    """
    settings = settings or load_settings()
    chosen = choose_dimensions(dimensions)
    sampled = sample_answers(load_cot_answers(settings, judge_run), sample, seed)
    asking = recognizer_settings(settings, recognizer_model, recognizer_base_url)
    states = plan_check(chosen) + plan_states(sampled, chosen)
    state_recipe = RecognizeRecipe("recognize", judge_run, sample, seed, run_name, states, chosen)
    state_outcome = run_stage(asking, state_recipe, backend, chunk_size, retry_failed)
    traits = plan_traits(sampled, chosen)
    trait_name = f"{run_name}-traits" if run_name else None
    trait_recipe = RecognizeRecipe("recognize_traits", judge_run, sample, seed, trait_name, traits, chosen)
    trait_outcome = run_stage(asking, trait_recipe, backend, chunk_size, retry_failed)
    if evidence_judge_model:  # the paper's judges were other models than the recognizer: named, or not asked
        evidence = plan_evidence(settings, state_outcome.run.run_id)
        evidence_name = f"{run_name}-evidence" if run_name else None
        recipe = RecognizeRecipe("recognize_evidence", judge_run, sample, seed, evidence_name, evidence, chosen)
        judge_asking = recognizer_settings(asking, evidence_judge_model, evidence_judge_base_url)
        if evidence:  # no check-set text read: nothing to score
            run_stage(judge_asking, recipe, backend, chunk_size, retry_failed)
    if state_outcome.n_waiting or trait_outcome.n_waiting:  # batch mode: both parts submit rounds (docs/batch.md)
        summary = state_outcome.waiting(len(states))
        summary["n_waiting"] += trait_outcome.n_waiting
        summary["batches"] = summary["batches"] + trait_outcome.stats["batches"]
        return summary
    publish_analyst_snapshot(settings)
    tables = load_measures(settings, state_outcome.run.run_name)
    return summarize(state_outcome, trait_outcome, len(states), len(traits), tables)
