-- Confidence histograms of the pairwise answers on pairs graded apart, split into correct and wrong choices:
-- per published run x personality x prompt ('certainty', 'self') x bin of 10 (bin_low 0, 10, ..., 90; 100 falls
-- in the 90 bin, as in calibration_bins_from).
--   bin_low  lower end of the confidence bin: 0, 10, ..., 90 (100 counts in 90)
--   n_correct  answers in the bin that chose the better passage
--   n_wrong  answers in the bin that chose the worse passage
with facts as (
    select * from pairwise_facts where status = 'ok' and truth != 'C' and confidence is not null
),

final as (
    select
        pairwise_run_id, run_name, collection_id, personality, prompt,
        (10 * least(floor(confidence / 10), 9))::integer as bin_low,
        count(*) filter (where is_correct) as n_correct,
        count(*) filter (where not is_correct) as n_wrong
    from facts
    group by all
)

select * from final
