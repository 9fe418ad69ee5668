-- th_interval_score(acc, share_pct): the TH-Score of one confidence tail, (e^(acc - 0.5) - 1) * share / 2, with
-- share in percent of the scored judgments; an empty tail (acc null) scores 0. A group's TH-Score is the sum over
-- its two tails (near 100 and near 0): the mean of the tails' (e^(acc - 0.5) - 1) * share. See th_score_at.sql.
-- Why halved: this reproduces the study's Table 4 from its (acc, share) rows, e.g. acc 1.00, share 37.4% ->
-- 12.14 (LLM judges almost never state a confidence near 0, so there the low tail is empty); the plain
-- (e^(acc - 0.5) - 1) * share gives twice the table's numbers (24.26 for 12.14). Checked in
-- tests/test_metrics_calibration.py on all five rows; the reasoning is in docs/metrics.md.
create or replace macro th_interval_score(acc, share_pct) as
    coalesce((exp(acc - 0.5) - 1) * share_pct / 2, 0)
