-- Calibration of the pairwise confidence (the 'certainty' prompt's [[X]], the 'self' prompt's confidence_score)
-- per published run x personality x prompt (confidence_method): ECE, MCE, ACE, Brier, NLL and TH-Score, exactly as
-- the pointwise metrics (calibration_from), over answers on pairs graded apart, correct = the better passage chosen.
select * from calibration_from(cells := 'pairwise_cells')
