-- Per group: n_scored, kappa, QWK, macro-F1, HMR and ECE, the columns `peras metrics` prints first
-- (see summary_from.sql).
select * from summary_from()
