"""Example queries for docs/warehouse.md: (title, what it shows, SQL). tests/test_warehouse_tools.py runs each."""

EXAMPLES: list[tuple[str, str, str]] = [
    (
        "Kappa per personality on DL19, without chain-of-thought",
        "Agreement with the qrels of every personality condition, best first (`peras sql` prints it as a table).",
        """
select run_name, personality, n_scored, n_label_failures,
       round(cohen_kappa, 3) as kappa, round(qwk, 3) as qwk, round(macro_f1, 3) as macro_f1
from metrics_agreement
where collection_id = 'dl19' and not cot
order by run_name, cohen_kappa desc nulls last
""",
    ),
    (
        "Which personalities beat the default prompt, and on what",
        "For each personality and headline metric: in how many runs and settings it beats `default`, and the mean "
        "difference (the metric's direction applied: for ece, lower is better).",
        """
select personality, metric,
       count(*) filter (where is_better) as n_better, count(*) as n_compared,
       round(avg(delta), 4) as mean_delta
from metrics_vs_default
where metric in ('cohen_kappa', 'qwk', 'hmr', 'ece') and personality <> 'default'
group by personality, metric
order by metric, n_better desc, personality
""",
    ),
    (
        "Is the confidence worth anything? Reliability and calibration side by side",
        "Sakai's HMR next to ECE, Brier and the TH-Score for every group that stated a confidence.",
        """
select r.run_name, r.personality, r.cot, r.confidence_method, r.n_scored_confidence,
       round(r.hmr, 3) as hmr, round(c.ece, 3) as ece, round(c.brier, 3) as brier, round(c.th_score, 2) as th_score
from metrics_reliability as r
inner join metrics_calibration as c using (run_id, personality, cot, confidence_method)
where r.n_scored_confidence > 0
order by r.run_name, r.cot, hmr desc
""",
    ),
    (
        "Certainty thresholding at 90 instead of the study's 80",
        "Keep only the judgments stated with confidence >= 90: how many remain and how accurate they are. The "
        "metric macros take arguments; `metrics_thresholds` is `certainty_split(80)`.",
        """
select run_name, personality, cot, n_scored_confidence, n_confident,
       round(coverage_confident, 3) as coverage, round(accuracy_confident, 3) as accuracy_confident,
       round(accuracy_unconfident, 3) as accuracy_rest
from certainty_split(90)
order by run_name, personality, cot
""",
    ),
    (
        "The topics the judges get most wrong",
        "Mean absolute distance between label and qrel per topic, over every published run's scored judgments, "
        "with the topic's text.",
        """
with facts as (
    select * from stg_judgment_facts where not is_label_failure
)
select facts.collection_id, facts.query_id, any_value(queries.text) as query,
       count(*) as n_judgments, round(avg(abs(facts.label - facts.relevance)), 3) as mean_abs_error,
       round(avg((facts.label = facts.relevance)::integer), 3) as accuracy
from facts
left join queries using (collection_id, query_id)
group by facts.collection_id, facts.query_id
order by mean_abs_error desc, facts.query_id
limit 10
""",
    ),
    (
        "A confusion matrix, pivoted",
        "Human relevance down, the judge's label across, for the `default` personality without CoT on DL19.",
        """
pivot (
    select run_name, confidence_method, relevance, 'label_' || label as label, n_judgments
    from metrics_confusion
    where collection_id = 'dl19' and personality = 'default' and not cot
)
on label using sum(n_judgments)
order by run_name, confidence_method, relevance
""",
    ),
]
