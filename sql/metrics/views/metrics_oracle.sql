-- The best personality per run, setting and metric (the "Oracle"), against default (see oracle_of.sql).
select * from oracle_of()
