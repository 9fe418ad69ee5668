-- What migrate() reads first (peras/warehouse.py): the migration versions applied and the fingerprint of the views
-- last stored. When this code's every version is there and the fingerprint is its own, there is nothing to do.
select
    (select list(version) from schema_migrations) as versions,
    (select fingerprint from schema_views order by applied_at desc limit 1) as fingerprint
