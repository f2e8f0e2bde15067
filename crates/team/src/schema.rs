//! The team ledger's schema in PostgreSQL (the `portcullis` schema): versioned migrations applied in
//! order, each in a transaction holding an advisory lock, so hubs that start together migrate once. A
//! database whose schema is newer than this build is refused, never altered.

use crate::error::{TeamError, driver_text};
use portcullis_ledger::SideTable;
use tokio_postgres::Client;

/// The advisory lock every migration holds ("PCULTEAM").
const MIGRATION_LOCK: i64 = 0x5043_554C_5445_414D;

/// Each step takes the schema from version `i` to `i + 1`.
const MIGRATIONS: &[&str] = &[
    // 1: hubs, the records of their calls, and the rows of their ledgers' other tables. Every row is
    // keyed by (ledger_id, id): the shipping hub's ledger and the row's id in it, so a row sent again
    // (at-least-once delivery) changes nothing. `hub_host` and `hub_user` say where it came from.
    r#"
    CREATE TABLE portcullis.hubs (
        ledger_id     text PRIMARY KEY,
        hub_host      text NOT NULL,
        hub_user      text NOT NULL,
        os            text NOT NULL,
        first_shipped timestamptz NOT NULL DEFAULT now(),
        last_shipped  timestamptz NOT NULL DEFAULT now()
    );
    CREATE TABLE portcullis.records (
        ledger_id        text NOT NULL,
        id               bigint NOT NULL,
        hub_host         text NOT NULL,
        hub_user         text NOT NULL,
        session_id       text NOT NULL,
        run_id           text NOT NULL,
        call_id          text NOT NULL,
        owner            text NOT NULL,
        tool             text NOT NULL,
        kind             text NOT NULL,
        -- The kind of a call's terminal record; NULL on started and progress records.
        status           text,
        at               bigint NOT NULL,
        started_at       bigint,
        duration_us      bigint,
        reason           text,
        error_code       text,
        decided_by       text NOT NULL,
        decided_rule     text,
        decided_source   text,
        decided_operator text,
        policy_decision  text,
        policy_rule      text,
        redacted         boolean NOT NULL,
        -- The whole record as the hub's ledger reads it back.
        record           jsonb NOT NULL,
        -- Terminal records: the tool, the call's arguments, its output and error, for full-text search.
        search           tsvector,
        PRIMARY KEY (ledger_id, id)
    );
    CREATE INDEX records_calls_at ON portcullis.records (at DESC, ledger_id, id) WHERE status IS NOT NULL;
    CREATE INDEX records_call ON portcullis.records (ledger_id, session_id, call_id);
    CREATE INDEX records_search ON portcullis.records USING gin (search) WHERE status IS NOT NULL;
    CREATE TABLE portcullis.sessions (
        ledger_id      text NOT NULL,
        id             text NOT NULL,
        hub_host       text NOT NULL,
        hub_user       text NOT NULL,
        client_name    text,
        client_version text,
        cwd            text,
        policy_hash    text,
        started_at     bigint NOT NULL,
        ended_at       bigint,
        end_reason     text,
        PRIMARY KEY (ledger_id, id)
    );
    CREATE INDEX sessions_started ON portcullis.sessions (started_at DESC);
    CREATE TABLE portcullis.approvals (
        ledger_id    text NOT NULL,
        id           bigint NOT NULL,
        hub_host     text NOT NULL,
        hub_user     text NOT NULL,
        session_id   text NOT NULL,
        call_id      text NOT NULL,
        tool         text NOT NULL,
        requested_at bigint NOT NULL,
        resolved_at  bigint,
        outcome      text,
        operator     text,
        note         text,
        rule_written text,
        PRIMARY KEY (ledger_id, id)
    );
    CREATE INDEX approvals_call ON portcullis.approvals (ledger_id, session_id, call_id);
    CREATE TABLE portcullis.refusals (
        ledger_id  text NOT NULL,
        id         bigint NOT NULL,
        hub_host   text NOT NULL,
        hub_user   text NOT NULL,
        minute     bigint NOT NULL,
        first_at   bigint NOT NULL,
        last_at    bigint NOT NULL,
        count      bigint NOT NULL,
        status     integer NOT NULL,
        code       text NOT NULL,
        method     text,
        path       text,
        peer       text,
        origin     text,
        host       text,
        user_agent text,
        PRIMARY KEY (ledger_id, id)
    );
    CREATE TABLE portcullis.tool_pin_events (
        ledger_id  text NOT NULL,
        id         bigint NOT NULL,
        hub_host   text NOT NULL,
        hub_user   text NOT NULL,
        at         bigint NOT NULL,
        server     text NOT NULL,
        tool       text NOT NULL,
        kind       text NOT NULL,
        digest     text NOT NULL,
        definition text NOT NULL,
        operator   text,
        PRIMARY KEY (ledger_id, id)
    );
    "#,
    // 2: calls per hour by every dimension stats count them under (and the hub), kept as records are
    // shipped (only the records a delivery inserted count: a batch sent again adds nothing), so stats
    // over millions of calls read thousands of rows. Backfilled from the records already shipped
    // (`ROLLUP_BACKFILL`).
    r#"
    CREATE TABLE portcullis.call_hours (
        hour            bigint NOT NULL,
        ledger_id       text NOT NULL,
        hub_host        text NOT NULL,
        hub_user        text NOT NULL,
        tool            text NOT NULL,
        status          text NOT NULL,
        reason          text,
        decided_by      text NOT NULL,
        decided_rule    text,
        policy_decision text,
        owner           text NOT NULL,
        calls           bigint NOT NULL,
        prompted        bigint NOT NULL,
        ran             bigint NOT NULL,
        max_us          bigint,
        UNIQUE NULLS NOT DISTINCT (hour, ledger_id, tool, status, reason, decided_by, decided_rule,
                                   policy_decision, owner)
    );
    CREATE INDEX call_hours_hour ON portcullis.call_hours (hour);
    "#,
    // 3: calls per hour and per day by each dimension apart (`dim`: tool, status, reason, decided_by,
    // rule, policy_decision, owner, hub, host, user; a call without a value of a dimension is not counted
    // under it), kept by the same statement as `call_hours`; the durations of the calls that ran as
    // log-scale histograms per tool (the buckets of the ledger's `durations.rs`, reproduced by
    // `duration_bucket` for durations up to 2^40 µs, 12 days, as a test holds; past that a duration at
    // a bucket's very edge may land in the next one); sessions per day of their start by state (open, or how they ended), kept as the
    // sessions are shipped. Stats over the whole team read a few thousand of these rows instead of a row
    // per combination per hub per hour. `call_hours` stays for stats that filter on a dimension.
    // Backfilled from `call_hours`, the records and the sessions.
    r#"
    CREATE TABLE portcullis.call_dim_hours (
        hour     bigint NOT NULL,
        dim      text NOT NULL,
        value    text NOT NULL,
        calls    bigint NOT NULL,
        prompted bigint NOT NULL,
        ran      bigint NOT NULL,
        max_us   bigint,
        PRIMARY KEY (hour, dim, value)
    );
    CREATE TABLE portcullis.call_dim_days (
        day      bigint NOT NULL,
        dim      text NOT NULL,
        value    text NOT NULL,
        calls    bigint NOT NULL,
        prompted bigint NOT NULL,
        ran      bigint NOT NULL,
        max_us   bigint,
        PRIMARY KEY (day, dim, value)
    );
    CREATE INDEX call_hours_hub ON portcullis.call_hours (ledger_id, hour);
    CREATE FUNCTION portcullis.duration_bucket(d bigint) RETURNS integer
        LANGUAGE sql IMMUTABLE PARALLEL SAFE
        AS $$ SELECT CASE WHEN d = 0 THEN 0
                          ELSE sign(d)::integer * (1 + least(greatest(
                                   floor(ln(abs(d::float8)) / ln(2::float8) * 8), 0), 504)::integer)
                     END $$;
    CREATE TABLE portcullis.call_duration_hours (
        hour   bigint NOT NULL,
        tool   text NOT NULL,
        bucket integer NOT NULL,
        calls  bigint NOT NULL,
        PRIMARY KEY (hour, tool, bucket)
    );
    CREATE TABLE portcullis.call_duration_days (
        day    bigint NOT NULL,
        tool   text NOT NULL,
        bucket integer NOT NULL,
        calls  bigint NOT NULL,
        PRIMARY KEY (day, tool, bucket)
    );
    CREATE TABLE portcullis.session_days (
        day      bigint NOT NULL,
        state    text NOT NULL,
        sessions bigint NOT NULL,
        PRIMARY KEY (day, state)
    );
    "#,
    // 4: the hubs' hash chains (issue 36). Each record's link (hex) and its canonical columns as its hub's
    // ledger hashed them: the JSON array's text, kept byte for byte (`text`: `jsonb` would rewrite it);
    // and each ledger's signed checkpoints (hex, as exports carry them). With them an export of the team
    // ledger is proven with each hub's public key alone. Records shipped before carry none (unchained).
    r#"
    ALTER TABLE portcullis.records ADD COLUMN chain text, ADD COLUMN chain_columns text;
    CREATE TABLE portcullis.chain_checkpoints (
        ledger_id  text NOT NULL,
        id         bigint NOT NULL,
        hub_host   text NOT NULL,
        hub_user   text NOT NULL,
        count      bigint NOT NULL,
        record_id  bigint NOT NULL,
        head       text NOT NULL,
        at         bigint NOT NULL,
        writer_id  bigint NOT NULL,
        why        text NOT NULL,
        public_key text,
        signature  text,
        PRIMARY KEY (ledger_id, id)
    );
    CREATE INDEX chain_checkpoints_record ON portcullis.chain_checkpoints (ledger_id, record_id);
    "#,
    // 5: the operators' decisions on effects whose outcome was unknown (issue 38): who said a retried
    // call's effect happened, failed, or may run again. The refused retries themselves ship as records.
    r#"
    CREATE TABLE portcullis.effect_marks (
        ledger_id  text NOT NULL,
        id         bigint NOT NULL,
        hub_host   text NOT NULL,
        hub_user   text NOT NULL,
        at         bigint NOT NULL,
        agent      text NOT NULL,
        key        text NOT NULL,
        call_id    text NOT NULL,
        outcome    text NOT NULL,
        operator   text NOT NULL,
        note       text,
        PRIMARY KEY (ledger_id, id)
    );
    "#,
    // 6: the marks of calls (see `portcullis_ledger::call_marks`): what a confined command's changes came
    // to (held > discarded > kept; NULL: nothing changed) and whether it ran contained, read from the
    // record as its hub's ledger reads them; the records shipped before are marked here the same way
    // (their change record's counts, else their result's `sandbox.changes` summary).
    r#"
    ALTER TABLE portcullis.records ADD COLUMN changes text,
        ADD COLUMN contained boolean NOT NULL DEFAULT false;
    UPDATE portcullis.records r SET changes = m.changes, contained = m.contained
    FROM (
        SELECT ledger_id, id, s.sandbox IS NOT NULL AND jsonb_typeof(s.sandbox -> 'contained') NOT IN ('null') AS contained,
               CASE WHEN c.held > 0 THEN 'held' WHEN c.discarded > 0 THEN 'discarded'
                    WHEN c.kept > 0 THEN 'kept' END AS changes
        FROM portcullis.records
        CROSS JOIN LATERAL (SELECT CASE WHEN jsonb_typeof(record #> '{output,structured,sandbox}') = 'object'
                                        THEN record #> '{output,structured,sandbox}'
                                        WHEN jsonb_typeof(record #> '{error,details,result,sandbox}') = 'object'
                                        THEN record #> '{error,details,result,sandbox}' END AS sandbox) s
        CROSS JOIN LATERAL (SELECT CASE WHEN jsonb_typeof(record #> '{output,changes}') = 'object'
                                        THEN record #> '{output,changes}'
                                        WHEN jsonb_typeof(record #> '{error,details,changes}') = 'object'
                                        THEN record #> '{error,details,changes}' END AS record_of) k
        CROSS JOIN LATERAL (SELECT
            CASE WHEN k.record_of IS NOT NULL THEN k.record_of -> 'kept' ELSE s.sandbox #> '{changes,kept_count}' END AS kept_v,
            CASE WHEN k.record_of IS NOT NULL THEN k.record_of -> 'held' ELSE s.sandbox #> '{changes,held_count}' END AS held_v,
            CASE WHEN k.record_of IS NOT NULL THEN k.record_of -> 'discarded' ELSE s.sandbox #> '{changes,discarded_count}' END AS discarded_v) v
        CROSS JOIN LATERAL (SELECT
            CASE WHEN jsonb_typeof(v.kept_v) = 'number' THEN (v.kept_v #>> '{}')::numeric ELSE 0 END AS kept,
            CASE WHEN jsonb_typeof(v.held_v) = 'number' THEN (v.held_v #>> '{}')::numeric ELSE 0 END AS held,
            CASE WHEN jsonb_typeof(v.discarded_v) = 'number' THEN (v.discarded_v #>> '{}')::numeric ELSE 0 END AS discarded) c
        WHERE status IS NOT NULL AND (s.sandbox IS NOT NULL OR k.record_of IS NOT NULL)
    ) m
    WHERE r.ledger_id = m.ledger_id AND r.id = m.id;
    CREATE INDEX records_changes ON portcullis.records (changes, at DESC) WHERE changes IS NOT NULL;
    CREATE INDEX records_contained ON portcullis.records (at DESC) WHERE contained;
    "#,
];

/// A session row's state as `session_days` counts it: open, or how it ended.
pub const SESSION_STATE: &str =
    "CASE WHEN ended_at IS NULL THEN 'open' ELSE coalesce(end_reason, 'ended') END";

/// Every dimension of a `call_hours` row as (dim, value) pairs of the per-dimension rollups, for a
/// `CROSS JOIN LATERAL (VALUES …) AS d(dim, value)` over rows with these columns (the hub's ledger id,
/// host and user as given). Its names are `StatsDim`'s.
pub fn dim_values(ledger_id: &str, host: &str, user: &str) -> String {
    format!(
        "(VALUES ('tool', tool), ('status', status), ('reason', reason), ('decided_by', decided_by),
                 ('rule', decided_rule), ('policy_decision', policy_decision), ('owner', owner),
                 ('hub', {ledger_id}), ('host', {host}), ('user', {user}))"
    )
}

/// The per-dimension rollups of the calls already counted in `call_hours`, the duration histograms of
/// the records and the sessions by day (the backfill of version 3): hours, then days from the hours.
fn dim_backfill() -> [String; 5] {
    [
        format!(
            "INSERT INTO portcullis.call_dim_hours
             SELECT h.hour, d.dim, d.value, sum(h.calls), sum(h.prompted), sum(h.ran), max(h.max_us)
             FROM portcullis.call_hours h CROSS JOIN LATERAL {} AS d(dim, value)
             WHERE d.value IS NOT NULL GROUP BY 1, 2, 3",
            dim_values("h.ledger_id", "h.hub_host", "h.hub_user")
        ),
        format!(
            "INSERT INTO portcullis.call_dim_days
             SELECT (hour / {DAY_US}) * {DAY_US}, dim, value, sum(calls), sum(prompted), sum(ran), max(max_us)
             FROM portcullis.call_dim_hours GROUP BY 1, 2, 3"
        ),
        format!(
            "INSERT INTO portcullis.call_duration_hours
             SELECT (at / {HOUR_US}) * {HOUR_US}, tool, portcullis.duration_bucket(duration_us), count(*)
             FROM portcullis.records
             WHERE status IN ('finished', 'error') AND duration_us IS NOT NULL GROUP BY 1, 2, 3"
        ),
        format!(
            "INSERT INTO portcullis.call_duration_days
             SELECT (hour / {DAY_US}) * {DAY_US}, tool, bucket, sum(calls) FROM portcullis.call_duration_hours
             GROUP BY 1, 2, 3"
        ),
        format!(
            "INSERT INTO portcullis.session_days
             SELECT (started_at / {DAY_US}) * {DAY_US}, {SESSION_STATE}, count(*) FROM portcullis.sessions
             GROUP BY 1, 2"
        ),
    ]
}

/// The schema version whose step made the rollups (and backfills them).
const ROLLUP_VERSION: i32 = 2;

/// The schema version whose step made the per-dimension rollups (and backfills them).
const DIM_ROLLUP_VERSION: i32 = 3;

/// Counts the records already shipped into the (empty) hourly rollups.
pub const ROLLUP_BACKFILL: &str = "INSERT INTO portcullis.call_hours
    SELECT (at / 3600000000) * 3600000000, ledger_id, min(hub_host), min(hub_user), tool, status, reason,
           decided_by, decided_rule, policy_decision, owner, count(*),
           count(*) FILTER (WHERE policy_decision = 'prompt'),
           count(duration_us) FILTER (WHERE status IN ('finished', 'error')), max(duration_us)
    FROM portcullis.records WHERE status IS NOT NULL
    GROUP BY 1, 2, 5, 6, 7, 8, 9, 10, 11";

/// Every rollup's backfill from the records already shipped, in order (for a bench that loads records
/// straight into the tables).
pub fn rollup_backfills() -> Vec<String> {
    let mut all = vec![ROLLUP_BACKFILL.to_owned()];
    all.extend(dim_backfill());
    all
}

/// The width of a `call_hours` row, microseconds.
pub const HOUR_US: i64 = 3_600_000_000;

/// The width of a `call_dim_days` row, microseconds (days begin at midnight UTC).
pub const DAY_US: i64 = 24 * HOUR_US;

/// The schema version this build writes and reads.
pub const SCHEMA_VERSION: i32 = MIGRATIONS.len() as i32;

/// The PostgreSQL type of each shipped column of a side table (the columns `SideTable::columns` lists,
/// in its order).
pub fn side_columns(table: SideTable) -> &'static [(&'static str, &'static str)] {
    match table {
        SideTable::Sessions => &[
            ("id", "text"),
            ("client_name", "text"),
            ("client_version", "text"),
            ("cwd", "text"),
            ("policy_hash", "text"),
            ("started_at", "bigint"),
            ("ended_at", "bigint"),
            ("end_reason", "text"),
        ],
        SideTable::Approvals => &[
            ("id", "bigint"),
            ("session_id", "text"),
            ("call_id", "text"),
            ("tool", "text"),
            ("requested_at", "bigint"),
            ("resolved_at", "bigint"),
            ("outcome", "text"),
            ("operator", "text"),
            ("note", "text"),
            ("rule_written", "text"),
        ],
        SideTable::Refusals => &[
            ("id", "bigint"),
            ("minute", "bigint"),
            ("first_at", "bigint"),
            ("last_at", "bigint"),
            ("count", "bigint"),
            ("status", "integer"),
            ("code", "text"),
            ("method", "text"),
            ("path", "text"),
            ("peer", "text"),
            ("origin", "text"),
            ("host", "text"),
            ("user_agent", "text"),
        ],
        SideTable::ToolPinEvents => &[
            ("id", "bigint"),
            ("at", "bigint"),
            ("server", "text"),
            ("tool", "text"),
            ("kind", "text"),
            ("digest", "text"),
            ("definition", "text"),
            ("operator", "text"),
        ],
        SideTable::EffectMarks => &[
            ("id", "bigint"),
            ("at", "bigint"),
            ("agent", "text"),
            ("key", "text"),
            ("call_id", "text"),
            ("outcome", "text"),
            ("operator", "text"),
            ("note", "text"),
        ],
        SideTable::ChainCheckpoints => &[
            ("id", "bigint"),
            ("count", "bigint"),
            ("record_id", "bigint"),
            ("head", "text"),
            ("at", "bigint"),
            ("writer_id", "bigint"),
            ("why", "text"),
            ("public_key", "text"),
            ("signature", "text"),
        ],
    }
}

/// Brings the database's team ledger to [`SCHEMA_VERSION`] (made on first use); refuses a newer one.
pub async fn migrate(client: &mut Client, url: &str) -> Result<i32, TeamError> {
    let failed = |e: tokio_postgres::Error| TeamError::Database { url: url.to_owned(), why: driver_text(&e) };
    let tx = client.transaction().await.map_err(failed)?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK]).await.map_err(failed)?;
    tx.batch_execute(
        "CREATE SCHEMA IF NOT EXISTS portcullis;
         CREATE TABLE IF NOT EXISTS portcullis.migrations (
             version    integer PRIMARY KEY,
             applied_at timestamptz NOT NULL DEFAULT now()
         );",
    )
    .await
    .map_err(failed)?;
    let found: i32 = tx
        .query_one("SELECT coalesce(max(version), 0) FROM portcullis.migrations", &[])
        .await
        .map_err(failed)?
        .get(0);
    if found > SCHEMA_VERSION {
        return Err(TeamError::NewerSchema { url: url.to_owned(), found, supported: SCHEMA_VERSION });
    }
    for (i, step) in MIGRATIONS.iter().enumerate().skip(usize::try_from(found).unwrap_or(0)) {
        let version = i32::try_from(i + 1).unwrap_or(i32::MAX);
        tx.batch_execute(step).await.map_err(failed)?;
        if version == ROLLUP_VERSION {
            tx.batch_execute(ROLLUP_BACKFILL).await.map_err(failed)?;
        }
        if version == DIM_ROLLUP_VERSION {
            for backfill in dim_backfill() {
                tx.batch_execute(&backfill).await.map_err(failed)?;
            }
        }
        tx.execute("INSERT INTO portcullis.migrations (version) VALUES ($1)", &[&version])
            .await
            .map_err(failed)?;
        tracing::info!(%url, version, "team ledger schema migrated");
    }
    tx.commit().await.map_err(failed)?;
    Ok(SCHEMA_VERSION)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    #[test]
    fn every_side_table_ships_the_columns_the_ledger_reads() {
        for table in SideTable::ALL {
            let ours: Vec<&str> = side_columns(table).iter().map(|(name, _)| *name).collect();
            assert_eq!(ours, table.columns(), "{table:?}");
            for (name, _) in side_columns(table) {
                assert!(
                    MIGRATIONS.iter().any(|m| m.contains(&format!("        {name} "))),
                    "{table:?}.{name}"
                );
            }
        }
    }
}
