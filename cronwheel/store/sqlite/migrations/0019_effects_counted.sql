-- cronwheel schema, version 19 (the same in both stores): the effects an execution recorded
-- are counted on its row, so that recording one more can be refused past
-- MAX_EFFECTS_PER_EXECUTION without counting the effects table (a job recording effects in a
-- loop grew it by a row per call for as long as it ran). Executions from before this version
-- count from 0.
ALTER TABLE executions ADD COLUMN effects INTEGER NOT NULL DEFAULT 0;
