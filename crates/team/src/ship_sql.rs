//! The statements a delivery to the team ledger runs, prepared once per connection: records inserted
//! with every rollup kept in the same statement (from what it inserted, so a batch sent again adds
//! nothing), and the rows of the ledger's other tables upserted (sessions with their counts by day).
//! The shared rollup rows are locked in key order (`ORDER BY`), the same in every delivery, so two hubs
//! shipping at once wait for each other instead of deadlocking.

use crate::schema::{DAY_US, HOUR_US, SESSION_STATE, dim_values, side_columns};
use portcullis_ledger::SideTable;

/// The records' columns as the batch's JSON carries them (name, PostgreSQL type).
pub(crate) const RECORD_COLUMNS: &[(&str, &str)] = &[
    ("id", "bigint"),
    ("session_id", "text"),
    ("run_id", "text"),
    ("call_id", "text"),
    ("owner", "text"),
    ("tool", "text"),
    ("kind", "text"),
    ("status", "text"),
    ("at", "bigint"),
    ("started_at", "bigint"),
    ("duration_us", "bigint"),
    ("reason", "text"),
    ("error_code", "text"),
    ("decided_by", "text"),
    ("decided_rule", "text"),
    ("decided_source", "text"),
    ("decided_operator", "text"),
    ("policy_decision", "text"),
    ("policy_rule", "text"),
    ("redacted", "boolean"),
    ("record", "jsonb"),
    ("chain", "text"),
    ("chain_columns", "text"),
    ("changes", "text"),
    ("contained", "boolean"),
];

pub(crate) fn insert_records_sql() -> String {
    let names: Vec<&str> = RECORD_COLUMNS.iter().map(|(n, _)| *n).collect();
    let dim_rollup = |table: &str, key: &str, width: i64| {
        format!(
            "INSERT INTO portcullis.{table} AS h ({key}, dim, value, calls, prompted, ran, max_us)
             SELECT (at / {width}) * {width}, dim, value, count(*),
                 count(*) FILTER (WHERE policy_decision = 'prompt'),
                 count(duration_us) FILTER (WHERE status IN ('finished', 'error')), max(duration_us)
             FROM dims GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
             ON CONFLICT ({key}, dim, value)
             DO UPDATE SET calls = h.calls + excluded.calls, prompted = h.prompted + excluded.prompted,
                 ran = h.ran + excluded.ran, max_us = greatest(h.max_us, excluded.max_us)"
        )
    };
    let duration_rollup = |table: &str, key: &str, width: i64| {
        format!(
            "INSERT INTO portcullis.{table} AS h ({key}, tool, bucket, calls)
             SELECT (at / {width}) * {width}, tool, portcullis.duration_bucket(duration_us), count(*)
             FROM inserted WHERE status IN ('finished', 'error') AND duration_us IS NOT NULL
             GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
             ON CONFLICT ({key}, tool, bucket) DO UPDATE SET calls = h.calls + excluded.calls"
        )
    };
    format!(
        "WITH inserted AS (
             INSERT INTO portcullis.records (ledger_id, hub_host, hub_user, {cols}, search)
             SELECT $1, $2, $3, {cols}, to_tsvector('simple', search_text)
             FROM jsonb_to_recordset($4::text::jsonb) AS r({typed}, search_text text)
             ON CONFLICT (ledger_id, id) DO NOTHING
             RETURNING at, tool, status, reason, decided_by, decided_rule, policy_decision, owner, duration_us),
         hours AS (
             INSERT INTO portcullis.call_hours AS h (hour, ledger_id, hub_host, hub_user, tool, status, reason,
                 decided_by, decided_rule, policy_decision, owner, calls, prompted, ran, max_us)
             SELECT (at / {HOUR_US}) * {HOUR_US}, $1, $2, $3, tool, status, reason, decided_by, decided_rule,
                 policy_decision, owner, count(*), count(*) FILTER (WHERE policy_decision = 'prompt'),
                 count(duration_us) FILTER (WHERE status IN ('finished', 'error')), max(duration_us)
             FROM inserted WHERE status IS NOT NULL
             GROUP BY 1, 5, 6, 7, 8, 9, 10, 11
             ON CONFLICT (hour, ledger_id, tool, status, reason, decided_by, decided_rule, policy_decision, owner)
             DO UPDATE SET calls = h.calls + excluded.calls, prompted = h.prompted + excluded.prompted,
                 ran = h.ran + excluded.ran, max_us = greatest(h.max_us, excluded.max_us),
                 hub_host = excluded.hub_host, hub_user = excluded.hub_user),
         dims AS (
             SELECT at, status, policy_decision, duration_us, d.dim, d.value
             FROM inserted CROSS JOIN LATERAL {values} AS d(dim, value)
             WHERE status IS NOT NULL AND d.value IS NOT NULL),
         dim_hours AS ({dim_hours}),
         dim_days AS ({dim_days}),
         duration_hours AS ({duration_hours})
         {duration_days}",
        cols = names.join(", "),
        typed = typed(RECORD_COLUMNS),
        values = dim_values("$1", "$2", "$3"),
        dim_hours = dim_rollup("call_dim_hours", "hour", HOUR_US),
        dim_days = dim_rollup("call_dim_days", "day", DAY_US),
        duration_hours = duration_rollup("call_duration_hours", "hour", HOUR_US),
        duration_days = duration_rollup("call_duration_days", "day", DAY_US),
    )
}

/// The search document of each call that ended in a batch whose document the sink could not make (its
/// started record was shipped by an earlier process): its tool, its arguments (on its started record),
/// its output and its error.
pub(crate) const SEARCH_SQL: &str = "UPDATE portcullis.records t SET search = to_tsvector('simple',
         t.tool || ' ' ||
         coalesce(coalesce(t.record->'arguments',
             (SELECT s.record->'arguments' FROM portcullis.records s
              WHERE s.ledger_id = t.ledger_id AND s.session_id = t.session_id
                AND s.call_id = t.call_id AND s.kind = 'started' LIMIT 1))::text, '') || ' ' ||
         coalesce((t.record->'output')::text, '') || ' ' ||
         coalesce(t.record->'error'->>'message', ''))
     WHERE t.ledger_id = $1 AND t.id = ANY($2) AND t.status IS NOT NULL AND t.search IS NULL";

pub(crate) const HUB_SQL: &str =
    "INSERT INTO portcullis.hubs (ledger_id, hub_host, hub_user, os) VALUES ($1, $2, $3, $4)
     ON CONFLICT (ledger_id) DO UPDATE SET hub_host = excluded.hub_host, hub_user = excluded.hub_user,
         os = excluded.os, last_shipped = now()";

pub(crate) fn upsert_side_sql(table: SideTable) -> String {
    let columns = side_columns(table);
    let names: Vec<&str> = columns.iter().map(|(n, _)| *n).collect();
    let updates: Vec<String> = (names.iter().skip(1))
        .chain(["hub_host", "hub_user"].iter())
        .map(|n| format!("{n} = excluded.{n}"))
        .collect();
    let upsert = format!(
        "INSERT INTO portcullis.{table} (ledger_id, hub_host, hub_user, {cols})
         SELECT $1, $2, $3, {cols} FROM {rows}
         ON CONFLICT (ledger_id, id) DO UPDATE SET {updates}",
        table = table.name(),
        cols = names.join(", "),
        rows = if table == SideTable::Sessions {
            "incoming".to_owned()
        } else {
            format!("jsonb_to_recordset($4::text::jsonb) AS r({})", typed(columns))
        },
        updates = updates.join(", "),
    );
    if table != SideTable::Sessions {
        return upsert;
    }
    // Sessions also move their counts by day: each row's state before (if shipped before) leaves its
    // day's count, its state now joins it. One sink ships a hub's sessions, one delivery at a time, so
    // nothing changes a row between the read of its state before and the upsert.
    format!(
        "WITH incoming AS MATERIALIZED (SELECT * FROM jsonb_to_recordset($4::text::jsonb) AS r({typed})),
         before AS (
             SELECT s.started_at, {SESSION_STATE} AS state FROM portcullis.sessions s
             WHERE s.ledger_id = $1 AND s.id IN (SELECT id FROM incoming)),
         shipped AS ({upsert} RETURNING started_at, {SESSION_STATE} AS state),
         moved AS (
             SELECT (started_at / {DAY_US}) * {DAY_US} AS day, state, sum(n)::bigint AS n FROM (
                 SELECT started_at, state, -1 AS n FROM before
                 UNION ALL SELECT started_at, state, 1 FROM shipped) AS both_ends
             GROUP BY 1, 2 HAVING sum(n) <> 0)
         INSERT INTO portcullis.session_days AS d (day, state, sessions)
         SELECT day, state, n FROM moved ORDER BY 1, 2
         ON CONFLICT (day, state) DO UPDATE SET sessions = d.sessions + excluded.sessions",
        typed = typed(columns),
    )
}

fn typed(columns: &[(&str, &str)]) -> String {
    columns.iter().map(|(n, t)| format!("{n} {t}")).collect::<Vec<_>>().join(", ")
}
