"""The hand-written parts of docs/warehouse.md: its introduction, the note on macros, the example queries.

Each example is (title, what it shows, SQL); tests/test_warehouse_tools.py runs every one.
"""

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

INTRO = """
# The warehouse

Everything PERAS knows is in one DuckDB file (`PERAS_WAREHOUSE`, default `warehouse/peras.duckdb`): the
collections, every judge run and every LLM request behind it, the metric views, the classifier's trials and the
priming experiment. Tables are written only by the flows, each publishing in one transaction after its quality
gate; views are recomputed from the tables whenever they are read, so they are never stale.

Read it with `peras sql "SELECT ..."` (a table, `--format csv` or `--format json`), export any table or view with
`peras export NAME --output FILE.parquet` (or `.csv`), or open **the analysts' snapshot**
`warehouse/peras.analyst.duckdb` from Python, a notebook or the `duckdb` shell, never the warehouse file itself
(see [Reading it while stages run](#reading-it-while-stages-run)).

Layers: the tables (`sql/migrations`), the staging view `stg_judgment_facts` (published judgments joined to their
qrels), the marts (`sql/marts`), and the metric views (`sql/metrics`), each a call of a table macro that analysts
can also call with their own arguments (see [Table macros](#table-macros)). A metric *group* is one run x
personality x CoT setting x confidence method.

Judging keeps the warehouse consistent with itself. A judgment is derivable from the `llm_requests` rows it
references (`label_request_id`, `confidence_request_id`, `sample_request_ids`): its label and confidence are what
those stored answers read as. The table macro `judgment_check` says so row by row, with the reason when not
(`select * from judgment_check('judgments') where not is_derivable`); a judge run stores only judgments that pass
it. A judgment also records the texts it was made on (`text_sha`): when a re-ingest changes its query or passage
text, its `text_sha` differs from `pair_texts.text_sha` and the judgment is stale, not scored (left out of
`stg_judgment_facts`) and asked again the next time its run is judged (judgments without a `text_sha`, such as
imported ones, are always scored). Nothing is overwritten without a trace: replaced answers are kept in
`llm_request_history`, replaced judgments in `judgment_history`. While a run goes on, its engine journals to
append-only shards under `<shards>/<warehouse_id>/<stage>/<run_id>/` (`<shards>`: `PERAS_SHARDS_DIR`, default
`shards/` beside the warehouse; `warehouse_id`: the one row of `warehouse_identity`) and loads them as they fill, at
most every `load_interval_s` seconds (default 5; the last load as the asking ends).

This file is generated by `python -m peras.warehouse_docs` from the SQL files and a freshly migrated warehouse; a
test fails when it is out of date. Change the SQL comments, `peras/warehouse_glossary.py` or
`peras/warehouse_doc_text.py` (this text and the examples), not this file.

## Reading it while stages run

DuckDB locks the warehouse file while *any* connection to it is open, a read-only one included. A notebook that
keeps `duckdb.connect("warehouse/peras.duckdb", read_only=True)` open therefore blocks every stage that writes
(ingest, judge, import-judgments, classify, priming): the stage waits up to 120 s for the lock, then fails with
`error: the warehouse warehouse/peras.duckdb is locked by <program> (PID <n>), still after 120 s: ...`, naming the
process to close.

So PERAS publishes a copy for analysts next to the warehouse, `<warehouse stem>.analyst.duckdb`
(`warehouse/peras.analyst.duckdb` by default), and no stage ever opens it: keep it open as long as you like.

- **When it is refreshed**: at the end of every stage that writes, after it publishes (a stage that fails
  publishes nothing and leaves the snapshot as it was); during a run that asks an LLM also after shards are
  loaded (a run loads its journal at most every `load_interval_s` seconds, default 5; `PERAS_LOAD_INTERVAL_S`), at
  most every `analyst_snapshot_interval_s` seconds (default 60; `PERAS_ANALYST_SNAPSHOT_INTERVAL_S`),
  the first time that long after the asking began, so progress counts move (a shorter run refreshes it once, as it
  ends). `PERAS_ANALYST_SNAPSHOT=false` turns it off.
- **How**: the warehouse is checkpointed, copied to a temporary file in the same directory and renamed over the
  snapshot in one step: a reader never sees a half-written file. A refresh that cannot be made (disk full, the
  warehouse busy) never fails the stage; the previous snapshot stays.
- **Its age**: the snapshot keeps the modification time of the warehouse state it copies (`ls -l`, or
  `os.path.getmtime`). An open connection keeps reading the snapshot it opened (the rename replaces the name,
  not the open file): reconnect to see newer data.
- **`peras sql` and `peras export`** read the snapshot when it holds the warehouse's latest state, else the
  warehouse itself, read-only, for the moment of the query (waiting while a stage publishes). `peras sql` can
  change nothing and read no other file: no `COPY ... TO`, `ATTACH`, `read_csv`; save a result with
  `--format csv > FILE` or `peras export`.

```python
import duckdb

con = duckdb.connect("warehouse/peras.analyst.duckdb", read_only=True)  # the snapshot, never peras.duckdb
con.sql("select run_name, personality, cot, cohen_kappa from metrics_agreement order by 1, 2, 3").show()
con.close()  # then connect again to see what stages published since
```

```bash
duckdb -readonly warehouse/peras.analyst.duckdb
peras sql "select run_name, count(*) as n_judgments from judgments join judge_runs using (run_id) group by 1"
ls -l warehouse/peras.analyst.duckdb    # its time: the warehouse state it holds
```
"""

MACROS_NOTE = """
Each metric view is `select * from <macro>()`. Call the macro yourself for other parameters, or on a filtered copy
of the cells: `cells` / `metrics` name a relation shaped like `metrics_cells` / `metrics_long` (a view, a table, or
a CTE of the same query), e.g.
`with c as (select * from metrics_cells where collection_id = 'dl19') select * from agreement_from(cells := 'c')`.
"""
