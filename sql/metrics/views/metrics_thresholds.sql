-- Certainty thresholding at confidence 80, the study's cut: accuracy and coverage of the judgments at or above
-- it and accuracy of the rest. Other cuts: `select * from certainty_split(90)`; the whole accuracy/coverage
-- curve: metrics_threshold_curve.
select * from certainty_split(80)
