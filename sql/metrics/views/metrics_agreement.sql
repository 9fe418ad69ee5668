-- Agreement with the human qrels per group: accuracy, Cohen's kappa, QWK, macro-F1, binarised kappas and
-- Krippendorff's ordinal alpha (formulas and degenerate cases in agreement_from.sql).
select * from agreement_from()
