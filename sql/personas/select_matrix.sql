-- The personality x domain matrix of one check run (persona_domain_matrix), personalities in canonical order.
select personality, openness, conscientiousness, extraversion, agreeableness, neuroticism
from persona_domain_matrix
where run_name = $run_name
order by list_position(
    ['default', 'HA', 'LA', 'HC', 'LC', 'HE', 'LE', 'HN', 'LN', 'HO', 'LO'], personality) nulls last, personality
