-- needs: trust_studies, trust_agreement, trust_flips, trust_scores, trust_intervals
-- Per trust study: what it ranked, how alike the human and the LLM rankings are (each statistic with its bootstrap
-- interval), how many pairs flip, and per interval method the share of systems whose interval covers the full human
-- score and the mean width.
--   kendall_tau_lower  the lower end of Kendall's tau's bootstrap interval
--   kendall_tau_upper  the upper end of Kendall's tau's bootstrap interval
--   tau_ap_lower  the lower end of tau-AP's bootstrap interval
--   tau_ap_upper  the upper end of tau-AP's bootstrap interval
--   n_flips  pairs of systems the two qrels order oppositely
--   ppi_coverage  share of systems whose PPI++ interval covers the full human score
--   ppi_mean_width  mean width of the PPI++ intervals
--   human_only_coverage  share of systems whose human-only interval covers the full human score
--   human_only_mean_width  mean width of the human-only intervals
with agreement as (
    select
        study_id,
        max(estimate) filter (where statistic = 'kendall_tau') as kendall_tau,
        max(lower) filter (where statistic = 'kendall_tau') as kendall_tau_lower,
        max(upper) filter (where statistic = 'kendall_tau') as kendall_tau_upper,
        max(estimate) filter (where statistic = 'spearman_rho') as spearman_rho,
        max(estimate) filter (where statistic = 'tau_ap') as tau_ap,
        max(lower) filter (where statistic = 'tau_ap') as tau_ap_lower,
        max(upper) filter (where statistic = 'tau_ap') as tau_ap_upper
    from trust_agreement
    group by study_id
),

flips as (
    select study_id, count(*) as n_flips from trust_flips group by study_id
),

coverage as (
    select
        study_id,
        avg(covers_human::int) filter (where method = 'ppi') as ppi_coverage,
        avg(width) filter (where method = 'ppi') as ppi_mean_width,
        avg(covers_human::int) filter (where method = 'human_only') as human_only_coverage,
        avg(width) filter (where method = 'human_only') as human_only_mean_width,
        count(distinct system) as n_systems
    from trust_systems
    group by study_id
),

final as (
    select
        s.study_id, s.collection_id, r.run_name, s.labels, s.measure, s.human_sample, s.n_sample, s.n_pool,
        c.n_systems, s.n_topics, s.replicates, s.level, s.seed, a.kendall_tau, a.kendall_tau_lower,
        a.kendall_tau_upper, a.spearman_rho, a.tau_ap, a.tau_ap_lower, a.tau_ap_upper, coalesce(f.n_flips, 0) as n_flips,
        c.ppi_coverage, c.ppi_mean_width, c.human_only_coverage, c.human_only_mean_width, s.created_at
    from trust_studies as s
    left join judge_runs as r on r.run_id = s.judge_run_id
    left join agreement as a using (study_id)
    left join flips as f using (study_id)
    left join coverage as c using (study_id)
)

select * from final
