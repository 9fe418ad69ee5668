-- Each high/low persona's own dimension per published recognize run: shares, verdict, shift from default, and the
-- BFI-2 check's verdict for the same persona and model (views recognize_shift, recognize_bfi2_agreement).
select
    s.run_name, s.personality, s.dimension, s.intended_pole, s.share_high, s.share_low, s.share_uncertain,
    s.verdict, s.shift, g.is_bfi2_pass, g.agrees
from recognize_shift as s
left join recognize_bfi2_agreement as g using (run_name, personality, dimension)
where s.is_own_dimension
    and s.run_name in (select run_name from recognize_runs where status = 'published')
order by s.run_name,
    list_position(['HA', 'LA', 'HC', 'LC', 'HE', 'LE', 'HN', 'LN', 'HO', 'LO'], s.personality) nulls last, s.personality
