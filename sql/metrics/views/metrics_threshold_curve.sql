-- Accuracy and coverage of the judgments with confidence >= t, t = 0, 5, ..., 100, per group
-- (see threshold_curve_from.sql).
select * from threshold_curve_from()
