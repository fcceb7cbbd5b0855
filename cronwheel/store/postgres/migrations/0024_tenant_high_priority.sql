-- cronwheel schema, version 24 (the same in both stores): the ready queue's tiers are strict
-- across tenants, so a tenant that could put its flood in the high tier would delay every
-- neighbour's default work. The high tier becomes an admin's grant, as allow_shell is: false
-- for a tenant, but granted here to the default tenant (the admin's own jobs) and to every
-- tenant that has a job at high priority not cancelled, so that nothing that ran at high
-- stops doing so on the upgrade.
ALTER TABLE tenants ADD COLUMN allow_high_priority BOOLEAN NOT NULL DEFAULT FALSE;
UPDATE tenants SET allow_high_priority = TRUE
WHERE name = 'default'
   OR name IN (SELECT tenant FROM jobs WHERE priority = 0 AND status <> 'CANCELLED');
