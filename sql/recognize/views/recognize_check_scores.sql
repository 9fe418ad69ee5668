-- needs: recognize_runs, recognize_states
-- How far to trust the recognizer, per published recognize run: its readings of the check set (personality
-- 'check-set'; texts written for PERAS, their expectations in recognize_check_texts: text_id, dimension, level,
-- evidence_ids).
--   n_texts      check texts expected;  n_correct  read at the expected level (a failure is wrong)
--   accuracy     n_correct / n_texts
--   n_id_texts   texts expected high or low (they carry evidence ids)
--   id_precision, id_recall, id_f1   micro over every cited id of those texts: true = cited and expected,
--                F1 = 2 true / (cited + expected) (the paper's binary F1 of evidence ids)
with readings as (
    select s.recognize_run_id, s.query_id as text_id, s.dimension, s.level as read_level, s.utterance_ids
    from recognize_states as s
    where s.personality = 'check-set'
),

joined as (
    select e.*, r.read_level, coalesce(r.utterance_ids, []) as cited
    from recognize_check_texts as e
    left join readings as r using (recognize_run_id, text_id, dimension)
),

levels as (
    select recognize_run_id, count(*) as n_texts, count(*) filter (where read_level = level) as n_correct
    from joined
    group by all
),

ids as (
    select
        recognize_run_id,
        count(*) as n_id_texts,
        sum(len(list_intersect(evidence_ids, cited))) as n_true,
        sum(len(cited)) as n_cited,
        sum(len(evidence_ids)) as n_expected
    from joined
    where level != 'uncertain'
    group by all
),

final as (
    select
        r.run_name,
        n_texts,
        n_correct,
        n_correct / nullif(n_texts, 0) as accuracy,
        n_id_texts,
        n_true / nullif(n_cited, 0) as id_precision,
        n_true / nullif(n_expected, 0) as id_recall,
        2 * n_true / nullif(n_cited + n_expected, 0) as id_f1
    from levels
    inner join recognize_runs as r using (recognize_run_id)
    left join ids using (recognize_run_id)
    where r.status = 'published'
)

select * from final
