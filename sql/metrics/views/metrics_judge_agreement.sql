-- Cohen's kappa between every two runs of a collection on their common labelled pairs, each run in one setting
-- (default personality without CoT, else its first): the judge-to-judge heatmap of the report
-- (see judge_agreement_from.sql).
select * from judge_agreement_from()
