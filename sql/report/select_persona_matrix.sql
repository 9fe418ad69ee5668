-- The personality x domain matrix of every published personas check run (persona_domain_matrix), for the report's
-- heatmaps: runs by name, personalities in canonical order. Check runs have no collection: every one is shown.
select run_name, model, personality_set, personality, openness, conscientiousness, extraversion, agreeableness,
       neuroticism
from persona_domain_matrix
order by run_name, list_position(
    ['default', 'HA', 'LA', 'HC', 'LC', 'HE', 'LE', 'HN', 'LN', 'HO', 'LO'], personality) nulls last, personality
