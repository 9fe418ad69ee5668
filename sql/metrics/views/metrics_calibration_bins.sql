-- Reliability-diagram bins per group: 10 equal-width confidence bins with n, mean p and accuracy
-- (see calibration_bins_from.sql).
select * from calibration_bins_from()
