-- This warehouse's identity: its shards are written under it and every journaled line carries it.
select warehouse_id from warehouse_identity
