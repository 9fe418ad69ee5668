-- Each high/low persona's own dimension in one recognize run: its verdict, shift from default, and the BFI-2 check's.
select s.personality, s.dimension, s.intended_pole, s.verdict, s.is_recognised, s.shift, a.check_run, a.is_bfi2_pass,
    a.agrees
from recognize_shift as s
left join recognize_bfi2_agreement as a using (run_name, personality, dimension)
where s.run_name = $run_name and s.is_own_dimension
order by list_position(['HA', 'LA', 'HC', 'LC', 'HE', 'LE', 'HN', 'LN', 'HO', 'LO'], s.personality) nulls last,
    s.personality
