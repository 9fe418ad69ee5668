-- What the beats of each flow run working on a part of the run look like: its first and last beat, and the longest
-- gap between two of its beats in seconds (null after one beat).
select flow_run_id, min(beat_at) as first_beat_at, max(beat_at) as last_beat_at, max(gap_s) as longest_gap_s
from (
    select
        flow_run_id,
        beat_at,
        epoch(beat_at - lag(beat_at) over (partition by flow_run_id order by beat_at)) as gap_s
    from judge_part_beats
    where run_id = $run_id
)
group by flow_run_id
