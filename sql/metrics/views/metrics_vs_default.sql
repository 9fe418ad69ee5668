-- Each personality's metrics against `default` of the same run and setting, with deltas
-- (see vs_default_of.sql).
select * from vs_default_of()
