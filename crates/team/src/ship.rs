//! Shipping a hub's ledger to the team ledger: a sink of the ledger's tail. Each delivery is one
//! transaction of batched writes keyed by (ledger id, row id): records are inserted once
//! (`ON CONFLICT DO NOTHING`), each with its link in the hub's hash chain and its canonical columns, the
//! rows of the other tables (the chain's checkpoints among them) are upserted as they are now, so a batch
//! sent again after a crash or a lost answer changes nothing. The tail keeps the cursor and retries;
//! the local ledger is the spool.

use crate::connect::connect;
use crate::error::{TeamError, driver_text};
use crate::identity::HubIdentity;
use crate::schema::migrate;
use crate::ship_sql::{HUB_SQL, SEARCH_SQL, insert_records_sql, upsert_side_sql};
use crate::target::TeamDb;
use portcullis_ledger::row::decided_columns;
use portcullis_ledger::{CallHead, RecordLink, RecordSink, SideRow, SideTable, StoredKind, StoredRecord};
use serde::Serialize;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::OnceLock;
use std::time::{Duration, Instant};
use tokio::sync::Mutex;
use tokio_postgres::{Client, Statement};

/// A sink shipping every record and row of a hub's ledger to a team ledger in PostgreSQL.
pub struct PostgresSink {
    db: TeamDb,
    name: String,
    identity: OnceLock<HubIdentity>,
    connection: Mutex<Option<Connected>>,
    open_calls: std::sync::Mutex<OpenCalls>,
}

/// A connection with its statements prepared (once per connection, not per batch).
struct Connected {
    client: Client,
    records: Statement,
    search: Statement,
    side: HashMap<SideTable, Statement>,
    hub: Statement,
    /// When the hub's row was last touched (`last_shipped`): at most once a minute.
    hub_touched: Option<Instant>,
}

/// How often a shipping hub refreshes its row in `portcullis.hubs`.
const HUB_REFRESH: Duration = Duration::from_secs(60);

impl PostgresSink {
    pub fn new(db: TeamDb) -> PostgresSink {
        PostgresSink {
            name: format!("team:{db}"),
            db,
            identity: OnceLock::new(),
            connection: Mutex::new(None),
            open_calls: std::sync::Mutex::new(OpenCalls::default()),
        }
    }

    pub fn db(&self) -> &TeamDb {
        &self.db
    }

    /// The connection, made (migrating the schema and preparing the statements) when there is none or
    /// it closed.
    async fn connected<'a>(&self, slot: &'a mut Option<Connected>) -> Result<&'a mut Connected, TeamError> {
        if slot.as_ref().is_none_or(|c| c.client.is_closed()) {
            *slot = None;
            let mut client = connect(&self.db).await?;
            let url = self.db.to_string();
            migrate(&mut client, &url).await?;
            let failed =
                |e: tokio_postgres::Error| TeamError::Database { url: url.clone(), why: driver_text(&e) };
            let records = client.prepare(&insert_records_sql()).await.map_err(failed)?;
            let search = client.prepare(SEARCH_SQL).await.map_err(failed)?;
            let hub = client.prepare(HUB_SQL).await.map_err(failed)?;
            let mut side = HashMap::new();
            for table in SideTable::ALL {
                side.insert(table, client.prepare(&upsert_side_sql(table)).await.map_err(failed)?);
            }
            tracing::info!(team_ledger = %self.db, "shipping to the team ledger");
            *slot = Some(Connected { client, records, search, side, hub, hub_touched: None });
        }
        slot.as_mut()
            .ok_or_else(|| TeamError::Connect { url: self.db.to_string(), why: "no connection".into() })
    }

    fn identity(&self) -> Result<&HubIdentity, String> {
        self.identity.get().ok_or_else(|| "the sink was not bound to a ledger".to_owned())
    }

    /// Writes `delivery` in one transaction; a failed connection is dropped, to be made again next time.
    async fn in_transaction(&self, delivery: Delivery) -> Result<(), String> {
        let hub = self.identity()?;
        let mut slot = self.connection.lock().await;
        let connected = self.connected(&mut slot).await.map_err(|e| e.to_string())?;
        let result = write(connected, hub, delivery).await;
        if let Err(e) = &result {
            if connected.client.is_closed() {
                *slot = None;
            }
            return Err(format!("team ledger {}: {}", self.db, driver_text(e)));
        }
        Ok(())
    }
}

/// One delivery: a batch of records as JSON text (and the ids of those that end a call), or rows of
/// another table.
enum Delivery {
    Records { batch: String, ids: Vec<i64> },
    Side { table: SideTable, batch: String },
}

async fn write(
    c: &mut Connected,
    hub: &HubIdentity,
    delivery: Delivery,
) -> Result<(), tokio_postgres::Error> {
    let touch = c.hub_touched.is_none_or(|at| at.elapsed() >= HUB_REFRESH);
    let tx = c.client.transaction().await?;
    if touch {
        tx.execute(&c.hub, &[&hub.ledger_id, &hub.host, &hub.os_user, &hub.os]).await?;
    }
    match delivery {
        Delivery::Records { batch, ids } => {
            tx.execute(&c.records, &[&hub.ledger_id, &hub.host, &hub.os_user, &batch]).await?;
            if !ids.is_empty() {
                tx.execute(&c.search, &[&hub.ledger_id, &ids]).await?;
            }
        }
        Delivery::Side { table, batch } => {
            if let Some(statement) = c.side.get(&table) {
                tx.execute(statement, &[&hub.ledger_id, &hub.host, &hub.os_user, &batch]).await?;
            }
        }
    }
    tx.commit().await?;
    if touch {
        c.hub_touched = Some(Instant::now());
    }
    Ok(())
}

/// A record as the batch carries it: its filter columns (its head's under their own names, which are
/// the columns'), and itself whole.
#[derive(Serialize)]
struct RecordRow<'a> {
    id: i64,
    #[serde(flatten)]
    head: &'a CallHead,
    kind: &'static str,
    status: Option<&'static str>,
    decided_by: &'static str,
    decided_rule: Option<&'a str>,
    decided_source: Option<&'a str>,
    decided_operator: Option<String>,
    record: &'a StoredRecord,
    /// Its link in the hub's chain (hex) and its canonical columns (a JSON array's text), when it has one.
    chain: Option<String>,
    chain_columns: Option<&'a str>,
    /// A terminal record's search document (tool, arguments, output, error), when the sink has it.
    search_text: Option<String>,
    /// The call's marks, read from the record as the hub's ledger reads them (`call_marks.rs`).
    changes: Option<&'static str>,
    contained: bool,
}

impl<'a> RecordRow<'a> {
    fn of(record: &'a StoredRecord, link: Option<&'a RecordLink>) -> RecordRow<'a> {
        let (decided_by, decided_rule, decided_source, decided_operator) =
            decided_columns(&record.body.decided_by);
        let marks = if record.kind.is_terminal() {
            portcullis_ledger::call_marks::marks_of(record.body.output.as_deref(), record.body.error.as_ref())
        } else {
            portcullis_ledger::CallMarks::default()
        };
        RecordRow {
            id: record.id,
            head: &record.head,
            kind: record.kind.as_str(),
            status: record.kind.is_terminal().then(|| record.kind.as_str()),
            decided_by,
            decided_rule,
            decided_source,
            decided_operator,
            record,
            chain: link.map(|l| portcullis_harness::receipt::hex(&l.link)),
            chain_columns: link.map(|l| l.columns.as_str()),
            search_text: None,
            changes: marks.changes_column(),
            contained: marks.contained,
        }
    }
}

/// Most started records whose arguments the sink keeps for their calls' search documents.
const OPEN_CALLS: usize = 100_000;

/// The arguments of calls that started and have not ended yet (in the batches seen so far).
#[derive(Default)]
pub struct OpenCalls(HashMap<(String, String), String>);

impl OpenCalls {
    /// `records` (with their `links`, when given: `links[i]` is `records[i]`'s) as the JSON text the
    /// insert reads, and the ids of the calls that ended without a search document (left to the
    /// database).
    pub fn batch(
        &mut self,
        records: &[StoredRecord],
        links: &[Option<RecordLink>],
    ) -> Result<(String, Vec<i64>), serde_json::Error> {
        let mut left = Vec::new();
        let mut rows = Vec::with_capacity(records.len());
        for (i, record) in records.iter().enumerate() {
            let mut row = RecordRow::of(record, links.get(i).and_then(Option::as_ref));
            let key = || (record.head.session_id.clone(), record.head.call_id.clone());
            match record.kind {
                StoredKind::Started => {
                    if self.0.len() >= OPEN_CALLS {
                        self.0.clear();
                    }
                    let arguments =
                        record.body.arguments.as_deref().map(Value::to_string).unwrap_or_default();
                    self.0.insert(key(), arguments);
                }
                kind if kind.is_terminal() => {
                    let started = self.0.remove(&key());
                    let arguments = match (&record.body.arguments, started) {
                        (Some(own), _) => Some(own.to_string()),
                        (None, started) => started,
                    };
                    match arguments {
                        Some(arguments) => row.search_text = Some(search_text(record, &arguments)),
                        None => left.push(record.id),
                    }
                }
                _ => {}
            }
            rows.push(row);
        }
        Ok((serde_json::to_string(&rows)?, left))
    }
}

/// What full-text search finds a call by: its tool, arguments, output text and error.
fn search_text(record: &StoredRecord, arguments: &str) -> String {
    let mut text = format!("{} {arguments}", record.head.tool);
    if let Some(output) = &record.body.output {
        for block in &output.content {
            if let portcullis_harness::Content::Text { text: t } = block {
                text.push(' ');
                text.push_str(t);
            }
        }
        if let Some(structured) = &output.structured {
            text.push(' ');
            text.push_str(&structured.to_string());
        }
    }
    if let Some(error) = &record.body.error {
        text.push(' ');
        text.push_str(&error.message);
    }
    text
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

    /// Records without their links (shipped unchained): the tail gives this sink the links
    /// ([`RecordSink::deliver_linked`]).
    async fn deliver(&self, records: &[StoredRecord]) -> Result<(), String> {
        self.deliver_linked(records, &[]).await
    }

    fn takes_links(&self) -> bool {
        true
    }

    async fn deliver_linked(
        &self,
        records: &[StoredRecord],
        links: &[Option<RecordLink>],
    ) -> Result<(), String> {
        let (batch, ids) = (self.open_calls.lock().unwrap_or_else(std::sync::PoisonError::into_inner))
            .batch(records, links)
            .map_err(|e| format!("records not written as JSON: {e}"))?;
        self.in_transaction(Delivery::Records { batch, ids }).await
    }

    async fn deliver_side(&self, table: SideTable, rows: &[SideRow]) -> Result<(), String> {
        let batch = serde_json::to_string(&rows.iter().map(|r| &r.row).collect::<Vec<_>>())
            .map_err(|e| format!("rows not written as JSON: {e}"))?;
        self.in_transaction(Delivery::Side { table, batch }).await
    }
}
