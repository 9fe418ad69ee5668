-- One recognize run's check-set figures (recognize_check_scores).
select n_texts, n_correct, accuracy, n_id_texts, id_precision, id_recall, id_f1
from recognize_check_scores
where run_name = $run_name
