-- needs: probe_sets, probe_docs
-- What a detector sees of each probe copy and of each clean copy it is compared with, per signal:
-- low_confidence (100 - confidence; per personality) and persona_disagreement (highest minus lowest label over the
-- run's personalities, personality 'all'; only where at least two personalities labelled it).
--   signal        'low_confidence' or 'persona_disagreement'
--   is_attacked   1 for a copy of the kind, 0 for a clean copy
--   score         higher means more suspicious
with facts as (
    select * from probe_facts
),

confidence_scores as (
    select run_id, run_name, kind, personality, cot, confidence_method, query_id, doc_id, 1 as is_attacked,
        100 - confidence as score
    from facts
    where confidence is not null
    union all
    select distinct run_id, run_name, kind, personality, cot, confidence_method, query_id, baseline_doc_id, 0,
        100 - clean_confidence
    from facts
    where clean_confidence is not null
),

labels as (
    select run_id, run_name, kind, personality, cot, confidence_method, query_id, doc_id, 1 as is_attacked, label
    from facts
    union all
    select distinct run_id, run_name, kind, personality, cot, confidence_method, query_id, baseline_doc_id, 0,
        clean_label
    from facts
),

disagreement_scores as (
    select run_id, run_name, kind, 'all' as personality, cot, confidence_method, query_id, doc_id, is_attacked,
        (max(label) - min(label))::double as score
    from labels
    where label is not null
    group by all
    having count(distinct personality) >= 2
),

final as (
    select 'low_confidence' as signal, * from confidence_scores
    union all
    select 'persona_disagreement' as signal, * from disagreement_scores
)

select * from final
