-- Calibration per group: ECE, ACE, MCE, Brier, NLL and the TH-Score at eps 0.1 (see calibration_from.sql).
select * from calibration_from()
