-- cronwheel schema, version 6 (the same in both stores): remote workers' claims take the most
-- urgent tier first (priority, then the oldest available), so the index that serves them
-- leads with the priority after the queue.

DROP INDEX executions_queue_ready;

-- A remote worker's pull: dispatchable executions of its queues, most urgent tier first.
CREATE INDEX executions_queue_ready ON executions (queue, priority, available_at, execution_id)
    WHERE queue IS NOT NULL AND status IN ('PENDING', 'RETRY_WAIT');
