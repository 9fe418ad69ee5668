-- cohen_kappa(n, n_agree, chance_agree): Cohen's kappa from counts, the one definition every kappa view uses (the
-- four-grade kappa of metrics_agreement and its three binarised ones, kappa_bin_*; pairwise_kappa between judges;
-- assess_agreement between assessors). Counts, not shares, so that the result is exact as far as a double is:
--   n             pairs both sides labelled
--   n_agree       pairs whose two labels are equal
--   chance_agree  sum over the classes k of row_k * col_k (the agreement expected by chance, times n^2)
--   kappa = 1 - n (n - n_agree) / (n^2 - chance_agree), null when chance agreement is total (both sides used one and
--   the same class: agreement that cannot be told from chance; scikit-learn returns nan there)
create or replace macro cohen_kappa(n, n_agree, chance_agree) as
    case when n * n <> chance_agree
        then 1 - (n * (n - n_agree))::double / (n * n - chance_agree)::double end
