//! Shipping a hub's ledger to the team ledger: a sink of the ledger's tail. Each delivery is one
//! transaction of batched writes keyed by (ledger id, row id): records are inserted once
//! (`ON CONFLICT DO NOTHING`), the rows of the other tables are upserted as they are now, so a batch
//! sent again after a crash or a lost answer changes nothing. The tail keeps the cursor and retries;
//! the local ledger is the spool.

use crate::connect::connect;
use crate::error::{TeamError, driver_text};
use crate::identity::HubIdentity;
use crate::schema::{migrate, side_columns};
use crate::target::TeamDb;
use portcullis_ledger::row::decided_columns;
use portcullis_ledger::{RecordSink, SideRow, SideTable, StoredRecord};
use serde_json::{Value, json};
use std::sync::OnceLock;
use tokio::sync::Mutex;
use tokio_postgres::Client;

/// The records' columns as the batch's JSON carries them (name, PostgreSQL type).
const RECORD_COLUMNS: &[(&str, &str)] = &[
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
];

/// A sink shipping every record and row of a hub's ledger to a team ledger in PostgreSQL.
pub struct PostgresSink {
    db: TeamDb,
    name: String,
    identity: OnceLock<HubIdentity>,
    client: Mutex<Option<Client>>,
}

impl PostgresSink {
    pub fn new(db: TeamDb) -> PostgresSink {
        PostgresSink { name: format!("team:{db}"), db, identity: OnceLock::new(), client: Mutex::new(None) }
    }

    pub fn db(&self) -> &TeamDb {
        &self.db
    }

    /// The connected client, connecting (and migrating) first when there is none or it closed.
    async fn client<'a>(&self, slot: &'a mut Option<Client>) -> Result<&'a mut Client, TeamError> {
        if slot.as_ref().is_none_or(Client::is_closed) {
            let mut client = connect(&self.db).await?;
            migrate(&mut client, &self.db.to_string()).await?;
            tracing::info!(team_ledger = %self.db, "shipping to the team ledger");
            *slot = Some(client);
        }
        slot.as_mut()
            .ok_or_else(|| TeamError::Connect { url: self.db.to_string(), why: "no connection".into() })
    }

    fn identity(&self) -> Result<&HubIdentity, String> {
        self.identity.get().ok_or_else(|| "the sink was not bound to a ledger".to_owned())
    }

    /// Runs `write` in a transaction; a failed connection is dropped, to be made again next time.
    async fn in_transaction(&self, delivery: Delivery) -> Result<(), String> {
        let mut slot = self.client.lock().await;
        let client = self.client(&mut slot).await.map_err(|e| e.to_string())?;
        let result = match delivery {
            Delivery::Records { batch, ids } => write_records(client, self.identity()?, batch, ids).await,
            Delivery::Side { table, batch } => write_side(client, self.identity()?, table, batch).await,
        };
        if let Err(e) = &result {
            if client.is_closed() {
                *slot = None;
            }
            return Err(format!("team ledger {}: {}", self.db, driver_text(e)));
        }
        Ok(())
    }
}

/// One delivery: a batch of records (and the ids of those that end a call), or rows of another table.
enum Delivery {
    Records { batch: Value, ids: Vec<i64> },
    Side { table: SideTable, batch: Value },
}

async fn write_records(
    client: &mut Client,
    hub: &HubIdentity,
    batch: Value,
    ids: Vec<i64>,
) -> Result<(), tokio_postgres::Error> {
    let tx = client.transaction().await?;
    upsert_hub(&tx, hub).await?;
    let names: Vec<&str> = RECORD_COLUMNS.iter().map(|(n, _)| *n).collect();
    let sql = format!(
        "INSERT INTO portcullis.records (ledger_id, hub_host, hub_user, {cols})
             SELECT $1, $2, $3, {cols} FROM jsonb_to_recordset($4::jsonb) AS r({typed})
             ON CONFLICT (ledger_id, id) DO NOTHING",
        cols = names.join(", "),
        typed = typed(RECORD_COLUMNS),
    );
    tx.execute(&sql, &[&hub.ledger_id, &hub.host, &hub.os_user, &batch]).await?;
    // The search document of each call that ended here: its tool, its arguments (on its started
    // record, shipped before or in this batch), its output and its error.
    tx.execute(
        "UPDATE portcullis.records t SET search = to_tsvector('simple',
                 t.tool || ' ' ||
                 coalesce(coalesce(t.record->'arguments',
                     (SELECT s.record->'arguments' FROM portcullis.records s
                      WHERE s.ledger_id = t.ledger_id AND s.session_id = t.session_id
                        AND s.call_id = t.call_id AND s.kind = 'started' LIMIT 1))::text, '') || ' ' ||
                 coalesce((t.record->'output')::text, '') || ' ' ||
                 coalesce(t.record->'error'->>'message', ''))
             WHERE t.ledger_id = $1 AND t.id = ANY($2) AND t.status IS NOT NULL AND t.search IS NULL",
        &[&hub.ledger_id, &ids],
    )
    .await?;
    tx.commit().await
}

async fn write_side(
    client: &mut Client,
    hub: &HubIdentity,
    table: SideTable,
    batch: Value,
) -> Result<(), tokio_postgres::Error> {
    let columns = side_columns(table);
    let names: Vec<&str> = columns.iter().map(|(n, _)| *n).collect();
    let updates: Vec<String> = (names.iter().skip(1))
        .chain(["hub_host", "hub_user"].iter())
        .map(|n| format!("{n} = excluded.{n}"))
        .collect();
    let sql = format!(
        "INSERT INTO portcullis.{table} (ledger_id, hub_host, hub_user, {cols})
             SELECT $1, $2, $3, {cols} FROM jsonb_to_recordset($4::jsonb) AS r({typed})
             ON CONFLICT (ledger_id, id) DO UPDATE SET {updates}",
        table = table.name(),
        cols = names.join(", "),
        typed = typed(columns),
        updates = updates.join(", "),
    );
    let tx = client.transaction().await?;
    upsert_hub(&tx, hub).await?;
    tx.execute(&sql, &[&hub.ledger_id, &hub.host, &hub.os_user, &batch]).await?;
    tx.commit().await
}

async fn upsert_hub(
    tx: &tokio_postgres::Transaction<'_>,
    hub: &HubIdentity,
) -> Result<(), tokio_postgres::Error> {
    tx.execute(
        "INSERT INTO portcullis.hubs (ledger_id, hub_host, hub_user, os) VALUES ($1, $2, $3, $4)
         ON CONFLICT (ledger_id) DO UPDATE SET hub_host = excluded.hub_host, hub_user = excluded.hub_user,
             os = excluded.os, last_shipped = now()",
        &[&hub.ledger_id, &hub.host, &hub.os_user, &hub.os],
    )
    .await
    .map(|_| ())
}

fn typed(columns: &[(&str, &str)]) -> String {
    columns.iter().map(|(n, t)| format!("{n} {t}")).collect::<Vec<_>>().join(", ")
}

/// A record as the batch carries it: its filter columns, and itself whole.
pub fn record_json(record: &StoredRecord) -> Value {
    let (decided_by, decided_rule, decided_source, decided_operator) =
        decided_columns(&record.body.decided_by);
    let reason = record.reason.as_ref().and_then(|r| serde_json::to_value(r).ok());
    json!({
        "id": record.id,
        "session_id": record.session_id,
        "run_id": record.run_id,
        "call_id": record.call_id,
        "owner": record.owner,
        "tool": record.tool,
        "kind": record.kind.as_str(),
        "status": record.kind.is_terminal().then(|| record.kind.as_str()),
        "at": record.at.0,
        "started_at": record.started_at.map(|t| t.0),
        "duration_us": record.duration_us,
        "reason": reason,
        "error_code": record.error_code,
        "decided_by": decided_by,
        "decided_rule": decided_rule,
        "decided_source": decided_source,
        "decided_operator": decided_operator,
        "policy_decision": record.policy_decision.map(|d| d.as_str()),
        "policy_rule": record.policy_rule,
        "redacted": record.redacted,
        "record": record,
    })
}

#[async_trait::async_trait]
impl RecordSink for PostgresSink {
    fn name(&self) -> &str {
        &self.name
    }

    fn side_tables(&self) -> &[SideTable] {
        &SideTable::ALL
    }

    fn bind(&self, ledger_id: &str) {
        let _ = self.identity.set(HubIdentity::of_this_process(ledger_id));
    }

    async fn deliver(&self, records: &[StoredRecord]) -> Result<(), String> {
        let batch = Value::Array(records.iter().map(record_json).collect());
        let ids = records.iter().filter(|r| r.kind.is_terminal()).map(|r| r.id).collect();
        self.in_transaction(Delivery::Records { batch, ids }).await
    }

    async fn deliver_side(&self, table: SideTable, rows: &[SideRow]) -> Result<(), String> {
        let batch = Value::Array(rows.iter().map(|r| Value::Object(r.row.clone())).collect());
        self.in_transaction(Delivery::Side { table, batch }).await
    }
}
