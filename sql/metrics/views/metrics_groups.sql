-- Every metric group with its judgment counts (see groups_from.sql).
select * from groups_from()
