-- Confidence methods side by side, one row per group: agreement, calibration (ECE, ACE, MCE, Brier, NLL, TH-Score),
-- reliability (RO, RU, HMR), certainty split at 80 and requests and tokens per judgment
-- (see method_comparison_from.sql).
select * from method_comparison_from()
