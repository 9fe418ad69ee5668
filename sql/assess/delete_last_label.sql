-- Undo: the assessor's latest label given on the page is removed (its pair comes back to them next).
delete from assess_labels
where plan_id = $plan_id and assessor = $assessor and origin = 'page'
    and labelled_at = (
        select max(labelled_at) from assess_labels
        where plan_id = $plan_id and assessor = $assessor and origin = 'page'
    )
