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
ALTER TABLE calendars ADD COLUMN revision BIGINT NOT NULL DEFAULT 0;

CREATE TABLE calendar_indexes (
    tenant   TEXT COLLATE "C" NOT NULL,
    name     TEXT COLLATE "C" NOT NULL,
    revision BIGINT NOT NULL,  -- the calendar's, when this was built
    packed   BYTEA NOT NULL,
    PRIMARY KEY (tenant, name) INCLUDE (revision),  -- a claim batch reads the revisions alone
    FOREIGN KEY (tenant, name) REFERENCES calendars (tenant, name) ON DELETE CASCADE
);

CREATE SEQUENCE calendar_revisions;
