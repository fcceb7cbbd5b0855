-- cronwheel schema, version 27 (the same in both stores): a remote worker of no tenant (a pool
-- shared by every tenant) no longer takes its queues' runs oldest first across tenants, which
-- sorted every ready row of those queues through this index: it reads each tenant's first rows
-- through executions_tenant_queue_ready and takes tenants in turns. Nothing reads this index
-- any more, and every queue target's execution paid for keeping it.
DROP INDEX executions_queue_ready;
