-- Sakai's confidence reliability per group: overconfidence O, underconfidence U, RO, RU and their harmonic
-- mean HMR (formulas in reliability_from.sql).
select * from reliability_from()
