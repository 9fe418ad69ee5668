-- Whether a collection is there, and the probe set it is (null source when it is not a probe collection).
select
    c.collection_id,
    s.source_collection_id,
    c.fingerprint
from collections as c
left join probe_sets as s on s.collection_id = c.collection_id
where c.collection_id = $collection_id
