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
];

/// The schema version whose step made the rollups (and backfills them).
const ROLLUP_VERSION: i32 = 2;

/// Counts the records already shipped into the (empty) hourly rollups.
pub const ROLLUP_BACKFILL: &str = "INSERT INTO portcullis.call_hours
    SELECT (at / 3600000000) * 3600000000, ledger_id, min(hub_host), min(hub_user), tool, status, reason,
           decided_by, decided_rule, policy_decision, owner, count(*),
           count(*) FILTER (WHERE policy_decision = 'prompt'),
           count(duration_us) FILTER (WHERE status IN ('finished', 'error')), max(duration_us)
    FROM portcullis.records WHERE status IS NOT NULL
    GROUP BY 1, 2, 5, 6, 7, 8, 9, 10, 11";

/// The width of a `call_hours` row, microseconds.
pub const HOUR_US: i64 = 3_600_000_000;

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
