-- cronwheel schema, version 26 (the same in both stores): which process holds a node id. A
-- node takes its id with one compare-and-set on its row; telling two processes apart by their
-- start instant (started_at, in ms) let two nodes that started in the same millisecond (cloned
-- machines booted together) both take one id. Each process now draws a random incarnation.
ALTER TABLE cluster_nodes ADD COLUMN incarnation TEXT NOT NULL DEFAULT '';
