-- The last beat of each flow run working on a part of the run.
select flow_run_id, max(beat_at) as last_beat_at
from judge_part_beats
where run_id = $run_id
group by flow_run_id
