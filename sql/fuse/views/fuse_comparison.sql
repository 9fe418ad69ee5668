-- The study's Table 5/7 shape for each published fuse run: the fuser, each baseline, the judge that is best on each
-- metric (detail names it), the default personality's judge, and the classifier on the same judge streams (the
-- newest classify run whose feature_set_id matches; Random Forest, mean over its trials' test parts: kappa, QWK and
-- macro-F1 only, the metrics classify keeps) with that run's baselines on the same test parts, one row per row x
-- metric with the delta against the default judge. Every value but the classify run's is over the same pairs
-- (fuse_cells.sql); the metrics are long_from's.
--   row_order   the row's place in the table: 1 fuser, 2 baselines, 3 best single judge, 4 default, 5 classifier,
--               6 the classify run's baselines on its test parts
--   row_kind    'fuser', 'baseline', 'best_single', 'default', 'classifier' or 'classifier_vote'
--   row_name    'fuser', the baseline ('vote_majority', ...), 'best single judge', 'default', 'Random Forest' or
--               '<baseline> (test parts)'
--   detail      the best judge on that metric (best_single; ties: the first name), or the classify run (classifier,
--               classifier_vote)
with metrics as (
    select * from fuse_long
    where metric in (
        'accuracy', 'cohen_kappa', 'qwk', 'macro_f1', 'ece', 'ace', 'mce', 'brier', 'nll', 'th_score', 'ro', 'ru',
        'hmr'
    )
),

judges as (
    select m.*
    from metrics as m
    inner join fuse_judges as j on j.fuse_run_id = m.run_id and j.judge = m.personality
),

methods as (
    select
        run_id,
        case when personality = 'fuser' then 1 else 2 end as row_order,
        case when personality = 'fuser' then 'fuser' else 'baseline' end as row_kind,
        personality as row_name,
        null::varchar as detail,
        metric,
        is_higher_better,
        value
    from metrics
    where personality = 'fuser' or personality like 'vote\_%' escape '\'
),

best as (
    select
        run_id,
        3 as row_order,
        'best_single' as row_kind,
        'best single judge' as row_name,
        best_personality as detail,
        metric,
        is_higher_better,
        best_value as value
    from oracle_of(metrics := 'judges')
),

default_judge as (
    select run_id, 4 as row_order, 'default' as row_kind, 'default' as row_name, null::varchar as detail, metric,
        is_higher_better, value
    from judges
    where personality = 'default'
),

classify_runs as (
    select
        f.fuse_run_id as run_id,
        arg_max(c.classify_run_id, c.finished_at) as classify_run_id
    from fuse_runs as f
    inner join clf_runs as c on c.collection_id = f.collection_id and c.feature_set_id = f.feature_set_id
    group by f.fuse_run_id
),

classifier as (
    select
        k.run_id,
        case when s.learner = 'rf' then 5 else 6 end as row_order,
        case when s.learner = 'rf' then 'classifier' else 'classifier_vote' end as row_kind,
        case when s.learner = 'rf' then 'Random Forest' else s.learner || ' (test parts)' end as row_name,
        k.classify_run_id as detail,
        unnest(['cohen_kappa', 'qwk', 'macro_f1']) as metric,
        true as is_higher_better,
        unnest([s.kappa_mean, s.qwk_mean, s.f1_mean]) as value
    from classify_runs as k
    inner join clf_summary as s
        on s.classify_run_id = k.classify_run_id and (s.learner = 'rf' or s.learner like 'vote\_%' escape '\')
),

all_rows as (
    select * from methods
    union all select * from best
    union all select * from default_judge
    union all select * from classifier
),

final as (
    select
        a.run_id as fuse_run_id,
        r.run_name,
        r.collection_id,
        a.row_order,
        a.row_kind,
        a.row_name,
        a.detail,
        a.metric,
        a.is_higher_better,
        a.value,
        d.value as default_value,
        a.value - d.value as delta
    from all_rows as a
    inner join fuse_runs_published as r on r.fuse_run_id = a.run_id
    left join default_judge as d on d.run_id = a.run_id and d.metric = a.metric
)

select * from final
