//! The ledger file format: an `application_id` that marks the file as ours, and versioned migrations
//! (`user_version`). A file written by a newer schema is refused, never altered; an older one is
//! migrated forward in one transaction per step.

use crate::error::{AtPath, LedgerStoreError};
use rusqlite::{Connection, params};
use std::path::Path;

/// `PRAGMA application_id` of a Portcullis ledger ("PCUL").
pub const APPLICATION_ID: i64 = 0x5043_554C;

/// Each step takes the schema from version `i` to `i + 1`.
const MIGRATIONS: &[&str] = &[
    // 1: writers, sessions, the append-only lifecycle records and their query indexes.
    r#"
    CREATE TABLE writers (
        id         INTEGER PRIMARY KEY,
        pid          INTEGER NOT NULL,
        opened_at    INTEGER NOT NULL,
        -- Writers hold an exclusive lock, so each one's records are the id range from its first_record
        -- to the next writer's: recovery scans only that range.
        first_record INTEGER NOT NULL,
        closed_at  INTEGER
    );
    CREATE TABLE sessions (
        id             TEXT PRIMARY KEY,
        client_name    TEXT,
        client_version TEXT,
        cwd            TEXT,
        policy_hash    TEXT,
        started_at     INTEGER NOT NULL,
        ended_at       INTEGER
    );
    CREATE TABLE records (
        id               INTEGER PRIMARY KEY,
        writer_id        INTEGER NOT NULL REFERENCES writers(id),
        session_id       TEXT NOT NULL,
        run_id           TEXT NOT NULL,
        call_id          TEXT NOT NULL,
        call_key         INTEGER NOT NULL,
        owner            TEXT NOT NULL,
        tool             TEXT NOT NULL,
        kind             TEXT NOT NULL
                         CHECK (kind IN ('started','progress','finished','error','blocked','interrupted')),
        status           TEXT CHECK (status IS NULL OR status = kind),
        at               INTEGER NOT NULL,
        started_at       INTEGER,
        duration_us      INTEGER,
        reason           TEXT,
        error_code       TEXT,
        decided_by       TEXT NOT NULL,
        decided_rule     TEXT,
        decided_source   TEXT,
        decided_operator TEXT,
        redacted         INTEGER NOT NULL,
        body             TEXT NOT NULL
    );
    -- `call_key` is a stable 63-bit hash of the call id: an integer index finds a call's records.
    CREATE INDEX records_call ON records(call_key);
    -- Calls are terminal records: `status` is their kind, NULL on started/progress records, so every
    -- query that constrains `status` can use these partial indexes.
    CREATE INDEX calls_at ON records(at, id) WHERE status IS NOT NULL;
    CREATE INDEX calls_status ON records(status, at, id) WHERE status IS NOT NULL;
    -- Tool + time pages, and (covering) the stats pass: no row reads.
    CREATE INDEX calls_tool ON records(tool, at, id, status, reason, decided_by, duration_us)
        WHERE status IS NOT NULL;
    "#,
    // 2: approvals, and full-text search over tool names, arguments and results (backfilled).
    r#"
    CREATE TABLE approvals (
        id           INTEGER PRIMARY KEY,
        session_id   TEXT NOT NULL,
        call_id      TEXT NOT NULL,
        tool         TEXT NOT NULL,
        requested_at INTEGER NOT NULL,
        resolved_at  INTEGER,
        outcome      TEXT CHECK (outcome IN
                     ('approved_once','approved_for_session','approved_always','denied','timed_out')),
        operator     TEXT,
        note         TEXT,
        rule_written TEXT
    );
    CREATE INDEX approvals_call ON approvals(session_id, call_id);
    -- One document per call, keyed by its terminal record: tool name, arguments, output text, error.
    -- Contentless, no positions, no sizes: it answers "which calls hold all these words", nothing more.
    CREATE VIRTUAL TABLE records_fts USING fts5(content, content='', detail='none', columnsize=0,
                                               tokenize='unicode61');
    INSERT INTO records_fts(rowid, content)
        SELECT t.id, t.tool || ' ' ||
               coalesce(json_extract(t.body, '$.arguments'),
                        (SELECT json_extract(s.body, '$.arguments') FROM records s
                         WHERE s.call_key = t.call_key AND s.session_id = t.session_id
                           AND s.call_id = t.call_id AND s.kind = 'started'), '')
               || ' ' || coalesce(json_extract(t.body, '$.output'), '')
               || ' ' || coalesce(json_extract(t.body, '$.error.message'), '')
        FROM records t WHERE t.status IS NOT NULL;
    "#,
    // 3: an approval can end `withdrawn` (its caller went away before an answer).
    r#"
    CREATE TABLE approvals_v3 (
        id           INTEGER PRIMARY KEY,
        session_id   TEXT NOT NULL,
        call_id      TEXT NOT NULL,
        tool         TEXT NOT NULL,
        requested_at INTEGER NOT NULL,
        resolved_at  INTEGER,
        outcome      TEXT CHECK (outcome IN
                     ('approved_once','approved_for_session','approved_always','denied','timed_out',
                      'withdrawn')),
        operator     TEXT,
        note         TEXT,
        rule_written TEXT
    );
    INSERT INTO approvals_v3 SELECT * FROM approvals;
    DROP TABLE approvals;
    ALTER TABLE approvals_v3 RENAME TO approvals;
    CREATE INDEX approvals_call ON approvals(session_id, call_id);
    "#,
    // 4: what the execution policy said before any approval (allow / prompt / forbidden) and the rule
    // that said it, apart from the outcome; NULL on rows written before and on calls refused before
    // the policy stage.
    r#"
    ALTER TABLE records ADD COLUMN policy_decision TEXT
        CHECK (policy_decision IS NULL OR policy_decision IN ('allow','prompt','forbidden'));
    ALTER TABLE records ADD COLUMN policy_rule TEXT;
    "#,
    // 5: how a session ended: `closed` (its client or its hub ended it) or `cut` (still open when the
    // ledger was next opened for writing: the process that held it stopped without closing it).
    r#"
    ALTER TABLE sessions ADD COLUMN end_reason TEXT
        CHECK (end_reason IS NULL OR end_reason IN ('closed','cut'));
    UPDATE sessions SET end_reason = 'closed' WHERE ended_at IS NOT NULL;
    "#,
    // 6: requests the gateway refused (no or a wrong token, the wrong credential, a foreign Origin or
    // Host), identical ones counted per minute in one row. Never a credential.
    r#"
    CREATE TABLE refusals (
        id         INTEGER PRIMARY KEY,
        -- The minute (start, microseconds) and identity of the refusals this row counts.
        minute     INTEGER NOT NULL,
        key        INTEGER NOT NULL,
        first_at   INTEGER NOT NULL,
        last_at    INTEGER NOT NULL,
        count      INTEGER NOT NULL,
        status     INTEGER NOT NULL,
        code       TEXT NOT NULL,
        method     TEXT,
        path       TEXT,
        peer       TEXT,
        origin     TEXT,
        host       TEXT,
        user_agent TEXT,
        UNIQUE (minute, key)
    );
    CREATE INDEX refusals_first_at ON refusals(first_at);
    "#,
    // 7: rollups of calls (terminal records) per hour and per day, for stats without a scan (see
    // `rollup.rs`); the rows already in the file are added by `rollup::backfill` in the same transaction.
    r#"
    -- Each distinct combination of what the ledger browser filters calls on. `reason`, `decided_rule`
    -- and `policy_decision` are NULL where the records' columns are (the writer looks keys up with IS).
    CREATE TABLE call_keys (
        id              INTEGER PRIMARY KEY,
        tool            TEXT NOT NULL,
        status          TEXT NOT NULL,
        reason          TEXT,
        decided_by      TEXT NOT NULL,
        decided_rule    TEXT,
        policy_decision TEXT,
        owner           TEXT NOT NULL
    );
    CREATE INDEX call_keys_dims ON call_keys(tool, status, decided_by, owner);
    -- Per hour (`at` floored to 3,600,000,000 µs) and key: calls ended, the shortest and longest
    -- duration, and a log-scale histogram of durations (`durations.rs`; NULL when none of them ran).
    CREATE TABLE call_hours (
        hour      INTEGER NOT NULL,
        key       INTEGER NOT NULL,
        calls     INTEGER NOT NULL,
        min_us    INTEGER,
        max_us    INTEGER,
        durations BLOB,
        PRIMARY KEY (hour, key)
    ) WITHOUT ROWID;
    -- The same per UTC day (`at` floored to 86,400,000,000 µs): what long spans read.
    CREATE TABLE call_days (
        day       INTEGER NOT NULL,
        key       INTEGER NOT NULL,
        calls     INTEGER NOT NULL,
        min_us    INTEGER,
        max_us    INTEGER,
        durations BLOB,
        PRIMARY KEY (day, key)
    ) WITHOUT ROWID;
    "#,
    // 8: how far the indexer has moved the journal (`<ledger>.journal`, see `journal.rs`) into this
    // file, written in the same transaction as the rows: opening replays the journal from here.
    r#"
    CREATE TABLE journal_state (
        id     INTEGER PRIMARY KEY CHECK (id = 1),
        epoch  INTEGER NOT NULL,
        offset INTEGER NOT NULL
    );
    INSERT INTO journal_state (id, epoch, offset) VALUES (1, 0, 0);
    "#,
    // 9: pinned upstream tool definitions (the "rug pull" defence, see `tool_pins.rs`): the accepted
    // definition of each tool, and every event on them (first seen, changed, accepted by whom).
    r#"
    CREATE TABLE tool_pins (
        server     TEXT NOT NULL,
        tool       TEXT NOT NULL,
        digest     TEXT NOT NULL,
        definition TEXT NOT NULL,
        pinned_at  INTEGER NOT NULL,
        PRIMARY KEY (server, tool)
    ) WITHOUT ROWID;
    CREATE TABLE tool_pin_events (
        id         INTEGER PRIMARY KEY,
        at         INTEGER NOT NULL,
        server     TEXT NOT NULL,
        tool       TEXT NOT NULL,
        kind       TEXT NOT NULL CHECK (kind IN ('pinned', 'changed', 'accepted')),
        digest     TEXT NOT NULL,
        definition TEXT NOT NULL,
        operator   TEXT
    );
    "#,
    // 10: what the ledger's tail ships besides the records (see `tail.rs`, `side.rs`). The ledger's own
    // id (random, made here): a team ledger keys every shipped row by it and the row's id. And a change
    // clock: every insert or update of a session, an approval or a refusal stamps the row's `changed`
    // with the next tick, so a shipper finds what changed after its cursor (rows of the tables that are
    // only appended, records and tool pin events, are found by id). Rows already in the file get ticks
    // in id order.
    r#"
    CREATE TABLE ledger_identity (
        id        INTEGER PRIMARY KEY CHECK (id = 1),
        ledger_id TEXT NOT NULL
    );
    INSERT INTO ledger_identity (id, ledger_id) VALUES (1, lower(hex(randomblob(16))));
    CREATE TABLE change_clock (
        id   INTEGER PRIMARY KEY CHECK (id = 1),
        tick INTEGER NOT NULL
    );
    ALTER TABLE sessions ADD COLUMN changed INTEGER;
    ALTER TABLE approvals ADD COLUMN changed INTEGER;
    ALTER TABLE refusals ADD COLUMN changed INTEGER;
    UPDATE sessions SET changed = rowid;
    UPDATE approvals SET changed = id;
    UPDATE refusals SET changed = id;
    INSERT INTO change_clock (id, tick) VALUES (1, max(
        (SELECT coalesce(max(changed), 0) FROM sessions),
        (SELECT coalesce(max(changed), 0) FROM approvals),
        (SELECT coalesce(max(changed), 0) FROM refusals)));
    CREATE INDEX sessions_changed ON sessions(changed);
    CREATE INDEX approvals_changed ON approvals(changed);
    CREATE INDEX refusals_changed ON refusals(changed);
    CREATE TRIGGER sessions_inserted AFTER INSERT ON sessions BEGIN
        UPDATE change_clock SET tick = tick + 1;
        UPDATE sessions SET changed = (SELECT tick FROM change_clock) WHERE rowid = NEW.rowid;
    END;
    CREATE TRIGGER sessions_updated AFTER UPDATE OF client_name, client_version, cwd, policy_hash,
        started_at, ended_at, end_reason ON sessions BEGIN
        UPDATE change_clock SET tick = tick + 1;
        UPDATE sessions SET changed = (SELECT tick FROM change_clock) WHERE rowid = NEW.rowid;
    END;
    CREATE TRIGGER approvals_inserted AFTER INSERT ON approvals BEGIN
        UPDATE change_clock SET tick = tick + 1;
        UPDATE approvals SET changed = (SELECT tick FROM change_clock) WHERE id = NEW.id;
    END;
    CREATE TRIGGER approvals_updated AFTER UPDATE OF resolved_at, outcome, operator, note, rule_written
        ON approvals BEGIN
        UPDATE change_clock SET tick = tick + 1;
        UPDATE approvals SET changed = (SELECT tick FROM change_clock) WHERE id = NEW.id;
    END;
    CREATE TRIGGER refusals_inserted AFTER INSERT ON refusals BEGIN
        UPDATE change_clock SET tick = tick + 1;
        UPDATE refusals SET changed = (SELECT tick FROM change_clock) WHERE id = NEW.id;
    END;
    CREATE TRIGGER refusals_updated AFTER UPDATE OF last_at, count ON refusals BEGIN
        UPDATE change_clock SET tick = tick + 1;
        UPDATE refusals SET changed = (SELECT tick FROM change_clock) WHERE id = NEW.id;
    END;
    "#,
    // 11: the hash chain (see `chain.rs`, `seal.rs`): each record's link (NULL on the records written
    // before this step: unchained), where the chain stands (written with the rows), the signed
    // checkpoints; and the receipt of each answered approval (JSON, see `portcullis_harness::Receipt`).
    r#"
    ALTER TABLE records ADD COLUMN chain BLOB;
    CREATE TABLE chain_state (
        id           INTEGER PRIMARY KEY CHECK (id = 1),
        count        INTEGER NOT NULL,
        -- NULL until the first record is chained: the chain starts from the ledger's id.
        head         BLOB,
        -- Records below this id were written before the chain existed.
        first_record INTEGER NOT NULL
    );
    INSERT INTO chain_state (id, count, head, first_record)
        VALUES (1, 0, NULL, (SELECT coalesce(max(id), 0) + 1 FROM records));
    CREATE TABLE chain_checkpoints (
        id         INTEGER PRIMARY KEY,
        count      INTEGER NOT NULL,
        record_id  INTEGER NOT NULL,
        head       BLOB NOT NULL,
        at         INTEGER NOT NULL,
        writer_id  INTEGER NOT NULL,
        why        TEXT NOT NULL CHECK (why IN ('interval', 'close', 'open')),
        public_key BLOB,
        signature  BLOB
    );
    ALTER TABLE approvals ADD COLUMN receipt TEXT;
    "#,
    // 12: claimed effects (see `effects.rs`): each agent's idempotency keys, the claiming call and how
    // it ended; and the operators' decisions on effects whose outcome was unknown.
    r#"
    CREATE TABLE effects (
        agent      TEXT NOT NULL,
        key        TEXT NOT NULL,
        tool       TEXT NOT NULL,
        summary    TEXT,
        digest     TEXT NOT NULL,
        call_id    TEXT NOT NULL,
        session_id TEXT NOT NULL,
        state      TEXT NOT NULL
            CHECK (state IN ('running', 'done', 'unknown', 'marked_done', 'marked_failed')),
        claimed_at INTEGER NOT NULL,
        ended_at   INTEGER,
        expires_at INTEGER NOT NULL,
        result     TEXT,
        operator   TEXT,
        marked_at  INTEGER,
        note       TEXT,
        PRIMARY KEY (agent, key)
    ) WITHOUT ROWID;
    CREATE INDEX effects_state ON effects(state, claimed_at);
    CREATE TABLE effect_marks (
        id       INTEGER PRIMARY KEY,
        at       INTEGER NOT NULL,
        agent    TEXT NOT NULL,
        key      TEXT NOT NULL,
        call_id  TEXT NOT NULL,
        outcome  TEXT NOT NULL CHECK (outcome IN ('done', 'failed', 'retryable')),
        operator TEXT NOT NULL,
        note     TEXT
    );
    "#,
    // 13: the side chain (see `side_chain.rs`): a step per write of a session, approval, refusal,
    // tool-definition event, effect mark or chain mark (the row's key and the SHA-256 of its columns,
    // linked), where it stands, and its signed checkpoints. The chain's marks: what a writer opening the
    // ledger could not prove (`tail_unproven`: records a stopped writer left unsealed that the journal
    // does not confirm). Rows already in the file are taken into the chain as legacy steps.
    r#"
    CREATE TABLE side_chain (
        id      INTEGER PRIMARY KEY,
        tbl     TEXT NOT NULL,
        row_key TEXT NOT NULL,
        digest  BLOB NOT NULL,
        link    BLOB NOT NULL,
        legacy  INTEGER NOT NULL DEFAULT 0
    );
    CREATE INDEX side_chain_row ON side_chain(tbl, row_key, id);
    CREATE TABLE side_chain_state (
        id    INTEGER PRIMARY KEY CHECK (id = 1),
        count INTEGER NOT NULL,
        head  BLOB
    );
    INSERT INTO side_chain_state (id, count, head) VALUES (1, 0, NULL);
    CREATE TABLE side_checkpoints (
        id         INTEGER PRIMARY KEY,
        count      INTEGER NOT NULL,
        head       BLOB NOT NULL,
        at         INTEGER NOT NULL,
        writer_id  INTEGER NOT NULL,
        public_key BLOB,
        signature  BLOB
    );
    CREATE TABLE chain_marks (
        id             INTEGER PRIMARY KEY,
        at             INTEGER NOT NULL,
        writer_id      INTEGER NOT NULL,
        kind           TEXT NOT NULL CHECK (kind IN ('tail_unproven')),
        first_position INTEGER NOT NULL,
        last_position  INTEGER NOT NULL,
        first_record   INTEGER,
        message        TEXT NOT NULL
    );
    "#,
    // 14: what a call's terminal record is marked with for the browser's filters (see `call_marks.rs`),
    // derived from its body like `status` from `kind`: `changes`, the most serious outcome of what a
    // confined command changed (held > discarded > kept; NULL when nothing), and `contained` (1: it ran
    // contained). The rows already in the file are marked by `call_marks::backfill`.
    r#"
    ALTER TABLE records ADD COLUMN changes TEXT
        CHECK (changes IS NULL OR changes IN ('kept','held','discarded'));
    ALTER TABLE records ADD COLUMN contained INTEGER NOT NULL DEFAULT 0 CHECK (contained IN (0, 1));
    CREATE INDEX calls_changes ON records(changes, at, id) WHERE changes IS NOT NULL;
    CREATE INDEX calls_contained ON records(at, id) WHERE contained = 1;
    "#,
];

/// The schema version whose step added the call marks (and marks the rows already there).
const CALL_MARKS_VERSION: i64 = 14;

/// The schema version whose step made the side chain (and takes the rows already there into it).
const SIDE_CHAIN_VERSION: i64 = 13;

/// The schema version whose step made the rollups (and backfills them).
const ROLLUP_VERSION: i64 = 7;

/// The schema version this build writes.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// The stable 63-bit key of a call id (FNV-1a), stored in `records.call_key` and indexed.
pub fn call_key(call_id: &str) -> i64 {
    (portcullis_harness::fnv::Fnv1a::of(call_id.as_bytes()) >> 1) as i64
}

/// Reads `(application_id, user_version)`.
pub fn identity(conn: &Connection) -> rusqlite::Result<(i64, i64)> {
    let app: i64 = conn.query_row("PRAGMA application_id", [], |r| r.get(0))?;
    let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    Ok((app, version))
}

/// Whether the database holds any table (a fresh file holds none).
pub fn is_empty(conn: &Connection) -> rusqlite::Result<bool> {
    let n: i64 = conn.query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0))?;
    Ok(n == 0)
}

/// Checks the identity of an opened database and migrates it; refuses foreign and newer files.
pub(crate) fn check_identity(
    conn: &Connection,
    path: &Path,
    allow_empty: bool,
) -> Result<i64, LedgerStoreError> {
    let (app, version) = identity(conn).map_err(|e| match e {
        rusqlite::Error::SqliteFailure(f, _) if f.code == rusqlite::ErrorCode::NotADatabase => {
            LedgerStoreError::NotALedger { path: path.to_owned(), why: "not an SQLite database".into() }
        }
        other => LedgerStoreError::Sqlite { path: path.to_owned(), source: other },
    })?;
    if app == 0 && version == 0 {
        if allow_empty && is_empty(conn).at(path)? {
            return Ok(0);
        }
        return Err(LedgerStoreError::NotALedger {
            path: path.to_owned(),
            why: "an SQLite database of another application".into(),
        });
    }
    if app != APPLICATION_ID {
        return Err(LedgerStoreError::NotALedger {
            path: path.to_owned(),
            why: format!("application id {app:#x} is not Portcullis's"),
        });
    }
    if version > SCHEMA_VERSION {
        return Err(LedgerStoreError::NewerSchema {
            path: path.to_owned(),
            found: version,
            supported: SCHEMA_VERSION,
        });
    }
    Ok(version)
}

/// Migrates from `from` up to `to` (each step in its own transaction).
pub fn migrate(conn: &mut Connection, from: i64, to: i64) -> rusqlite::Result<()> {
    crate::rollup::register_functions(conn)?;
    for version in from..to {
        let Some(step) = usize::try_from(version).ok().and_then(|i| MIGRATIONS.get(i)) else { break };
        let tx = conn.transaction()?;
        tx.execute_batch(step)?;
        if version + 1 == ROLLUP_VERSION {
            crate::rollup::backfill(&tx)?;
        }
        if version + 1 == SIDE_CHAIN_VERSION {
            crate::side_chain::backfill(&tx)?;
        }
        if version + 1 == CALL_MARKS_VERSION {
            crate::call_marks::backfill(&tx)?;
        }
        tx.execute_batch(&format!("PRAGMA user_version = {}", version + 1))?;
        if version == 0 {
            tx.execute_batch(&format!("PRAGMA application_id = {APPLICATION_ID}"))?;
        }
        tx.commit()?;
        tracing::info!(version = version + 1, "ledger schema migrated");
    }
    Ok(())
}

/// Registers this process as the ledger's writer.
pub fn register_writer(conn: &Connection, at: i64) -> rusqlite::Result<i64> {
    conn.execute(
        "INSERT INTO writers(pid, opened_at, first_record)
         VALUES (?1, ?2, (SELECT coalesce(max(id), 0) + 1 FROM records))",
        params![std::process::id(), at],
    )?;
    Ok(conn.last_insert_rowid())
}
