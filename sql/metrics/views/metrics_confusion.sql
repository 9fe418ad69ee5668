-- The 4x4 confusion matrix of every group, long (see confusion_from.sql).
select * from confusion_from()
