-- The run's check-set expectations, replaced by the ones it is asked with now (staged_check_texts).
delete from recognize_check_texts where recognize_run_id = $run_id;

insert into recognize_check_texts (recognize_run_id, text_id, dimension, level, evidence_ids)
select $run_id, text_id, dimension, level, evidence_ids from staged_check_texts
