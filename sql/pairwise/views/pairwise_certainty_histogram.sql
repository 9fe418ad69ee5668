-- Confidence histograms of the pairwise answers on pairs graded apart, split into correct and wrong choices:
-- per published run x personality x prompt with a confidence ('certainty', 'self', 'logp', 'mp') x certainty range
-- x bin of 10. Two ranges side by side: '40-90' as the personalized-judge study draws its Figure 2 (certainties
-- below 40 counted at 40, above 90 at 90: bins 40, 50, ..., 90) and 'all' (bins 0, 10, ..., 90; 100 falls in the
-- 90 bin, as in calibration_bins_from).
--   certainty_range  '40-90' (the paper's Figure 2, values outside moved to its ends) or 'all' (0-100)
--   bin_low  lower end of the confidence bin: 40, 50, ..., 90 ('40-90') or 0, 10, ..., 90 ('all'; 100 counts in 90)
--   n_correct  answers in the bin that chose the better passage
--   n_wrong  answers in the bin that chose the worse passage
with facts as (
    select * from pairwise_facts where status = 'ok' and truth != 'C' and confidence is not null
),

binned as (
    select
        pairwise_run_id, run_name, collection_id, personality, prompt, is_correct,
        '40-90' as certainty_range,
        (10 * floor(least(greatest(confidence, 40), 90) / 10))::integer as bin_low
    from facts
    union all
    select
        pairwise_run_id, run_name, collection_id, personality, prompt, is_correct,
        'all' as certainty_range,
        (10 * least(floor(confidence / 10), 9))::integer as bin_low
    from facts
),

final as (
    select
        pairwise_run_id, run_name, collection_id, personality, prompt, certainty_range, bin_low,
        count(*) filter (where is_correct) as n_correct,
        count(*) filter (where not is_correct) as n_wrong
    from binned
    group by all
)

select * from final
