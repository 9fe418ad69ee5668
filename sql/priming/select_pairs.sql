-- Epilogue passages scored under both HT and LT, within the batches this call planned (priming_planned).
with scope as (
    select distinct query_id, trial, n_prologue, n_epilogue, personality from priming_planned
),

final as (
    select p.query_id, p.trial, p.n_prologue, p.n_epilogue, p.personality, p.epilogue_position, p.doc_id,
           p.score_ht, p.score_lt
    from priming_pairs as p
    inner join scope as s using (query_id, trial, n_prologue, n_epilogue, personality)
    where p.priming_run_id = $priming_run_id
)

select * from final
order by personality, query_id, n_prologue, n_epilogue, trial, epilogue_position
