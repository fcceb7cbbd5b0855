-- cronwheel schema, version 28 (the same in both stores): a tenant can be deleted. Deleting
-- marks it (deleting_since, the instant it was asked); its tokens are revoked in the same
-- transaction, no job is created for it any more, and its name cannot be taken again while
-- rows that carried it remain: retention removes them in small batches, the tenant row last.
ALTER TABLE tenants ADD COLUMN deleting_since INTEGER;  -- NULL: a live tenant
