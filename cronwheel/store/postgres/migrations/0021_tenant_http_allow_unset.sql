-- cronwheel schema, version 21 (the same in both stores): a tenant's httpAllow says three
-- things, as the daemon's http_allow does: NULL, not set (the daemon's list applies); an
-- empty array, no host at all; else the hosts. Until now an empty array was "not set", so
-- every stored one becomes NULL: no tenant changes meaning on the upgrade.
ALTER TABLE tenants ALTER COLUMN http_allow DROP NOT NULL, ALTER COLUMN http_allow DROP DEFAULT;
UPDATE tenants SET http_allow = NULL WHERE cardinality(http_allow) = 0;
