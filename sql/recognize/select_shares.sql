-- The shares of one recognize run, personalities in canonical order, dimensions in the Big-Five order.
select personality, dimension, n_read, n_failures, share_high, share_low, share_uncertain, verdict
from recognize_shares
where run_name = $run_name
order by
    list_position(['default', 'HA', 'LA', 'HC', 'LC', 'HE', 'LE', 'HN', 'LN', 'HO', 'LO'], personality) nulls last,
    personality,
    list_position(['openness', 'conscientiousness', 'extraversion', 'agreeableness', 'neuroticism'], dimension)
