-- cronwheel schema, version 17 (the same in both stores): the deliverer takes tenants in
-- turn. Oldest first across tenants let one tenant's backlog of notifications (a thousand
-- failing jobs told to a webhook that never answers, 15 s a delivery) stand between every
-- other tenant and its alerts. A claim now finds the tenants with PENDING notifications (one
-- probe each: the minimum tenant above the last) and reads each one's oldest due ones, all
-- from this index, which replaces notifications_ready (oldest due of all tenants).
DROP INDEX notifications_ready;
CREATE INDEX notifications_pending_of_tenant
    ON notifications (tenant, available_at, notification_id) WHERE status = 'PENDING';
