-- cronwheel schema, version 16 (the same in both stores): a tenant's remote worker claims
-- from its own tenant's rows only. Queue names are shared between tenants ('default' for
-- everyone), and executions_queue_ready has no tenant: a tenant's claim read every other
-- tenant's ready rows of the queue inside its write transaction and filtered them out (an
-- empty claim took ~50 ms behind another tenant's 100,000 rows). With the tenant leading the
-- key, a tenant's claim reads its own rows; a worker of no tenant keeps the index it had.
CREATE INDEX executions_tenant_queue_ready
    ON executions (tenant, queue, priority, available_at, execution_id)
    WHERE queue IS NOT NULL AND status IN ('PENDING', 'RETRY_WAIT');
