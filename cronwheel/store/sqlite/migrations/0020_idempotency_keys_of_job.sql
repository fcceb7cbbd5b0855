-- cronwheel schema, version 20 (the same in both stores): settled jobs leave the store with
-- their idempotency keys (store/settled.py), found by job here; deleting a job also checks
-- this table's foreign key by it.
CREATE INDEX idempotency_keys_job ON idempotency_keys (job_id);
