-- The stored personality conditions (what `peras judge` compares with the ones it would store, before Prefect).
select personality, name, trait, pole, instruction, source from personalities
