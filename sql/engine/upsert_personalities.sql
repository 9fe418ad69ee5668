-- Record the personality conditions with their exact instruction text (staged_personalities).
insert or replace into personalities (personality, name, trait, pole, instruction, source)
select personality, name, trait, pole, instruction, source from staged_personalities
