-- cronwheel schema, version 25 (the same in both stores): a calendar's index, stored.
-- A claim batch reads the calendars its due jobs observe on the thread every tenant's claims
-- share; parsing each one's spec there (~12 ms for 5,000 windows) made a tenant observing
-- hundreds of them delay its neighbours by seconds. Each calendar's index is now kept packed
-- (core/calendarindex.py, CalendarIndex.pack: a version byte, then sorted 8-byte integers),
-- written with the calendar in its transaction, which a claim copies back in microseconds.
-- It has a table of its own, beside the calendar's row rather than in it: SQLite keeps a row's
-- columns in order, and reaching a column after the spec (~300 KB for 5,000 windows) walks
-- all of the spec's overflow pages (57 of a 96-calendar batch's 66 ms, measured).
--
-- A calendar's revision is new at every write and never reused, not even by a calendar
-- deleted and made again: the readers' cache of parsed calendars holds one by it.
--
-- Calendars written before keep revision 0 and no index: the first claim that reads one
-- builds its index from the spec and stores it (store/calendars.py). Building them here would
-- parse every calendar of every tenant inside this one transaction (up to 1,000 tenants x
-- 1,000 calendars); adding a column with a constant default rewrites no row.
ALTER TABLE calendars ADD COLUMN revision INTEGER NOT NULL DEFAULT 0;

-- A rowid table, not WITHOUT ROWID: a seek there reads whole each row it compares (the
-- packed index's overflow pages too); here it compares keys in the indexes alone.
CREATE TABLE calendar_indexes (
    tenant   TEXT NOT NULL,
    name     TEXT NOT NULL,
    revision INTEGER NOT NULL,  -- the calendar's, when this was built
    packed   BLOB NOT NULL,
    UNIQUE (tenant, name),
    FOREIGN KEY (tenant, name) REFERENCES calendars (tenant, name) ON DELETE CASCADE
);
-- a claim batch reads its calendars' revisions here alone, and the packed indexes of those it
-- does not hold at that revision
CREATE INDEX calendar_indexes_revision ON calendar_indexes (tenant, name, revision);

-- the last revision handed out (one row): SQLite has no sequences
CREATE TABLE calendar_revisions (
    id   INTEGER PRIMARY KEY CHECK (id = 1),
    last INTEGER NOT NULL
);
INSERT INTO calendar_revisions (id, last) VALUES (1, 0);
