//! The OTLP sink of the ledger's tail: each delivery of records becomes one OTLP/HTTP request of
//! spans, each delivery of approvals or refusals one of log records. A delivery is `Ok` only once the
//! collector took it, so the tail's cursor never passes what did not go out: a collector that is down
//! is tried again from where it stopped, across restarts, and the calls never wait for it.

use crate::error::OtelError;
use crate::logs::LogRecords;
use crate::settings::OtlpSettings;
use crate::spans::{SpanInputs, call_spans};
use async_trait::async_trait;
use opentelemetry::{InstrumentationScope, KeyValue};
use opentelemetry_otlp::{Protocol, RetryPolicy, WithExportConfig as _, WithHttpConfig as _};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::logs::{LogBatch, LogExporter as _};
use opentelemetry_sdk::trace::SpanExporter as _;
use portcullis_ledger::{LedgerReader, RecordSink, SideRow, SideTable, StoredKind, StoredRecord};
use serde_json::Value;
use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

/// How long one export may take before it counts as failed (the tail then retries later).
pub const EXPORT_TIMEOUT: Duration = Duration::from_secs(5);
/// How many started calls' arguments are kept for their end (content export only).
pub const STARTED_KEPT: usize = 4096;

/// The tables whose rows leave as log records.
const LOGGED_TABLES: [SideTable; 2] = [SideTable::Approvals, SideTable::Refusals];

/// Sends the ledger's calls as spans and its approvals and refusals as log records to an OTLP/HTTP
/// collector.
pub struct OtlpSink {
    name: String,
    settings: OtlpSettings,
    /// The ledger it follows: where a call's arguments are looked up when its started record went out
    /// before this process (content export only).
    ledger: Option<PathBuf>,
    ledger_id: OnceLock<String>,
    scope: InstrumentationScope,
    /// Made on first use, on the tail's runtime (their connections live there).
    exporters: OnceLock<Exporters>,
    logs: LogRecords,
    started: Mutex<StartedArguments>,
    reader: Arc<Mutex<Option<LedgerReader>>>,
}

struct Exporters {
    spans: opentelemetry_otlp::SpanExporter,
    logs: opentelemetry_otlp::LogExporter,
}

impl OtlpSink {
    /// A sink sending to `settings`' endpoint, following the ledger at `ledger` (if given: the
    /// arguments of calls that started before a restart are read back from it).
    pub fn new(settings: OtlpSettings, ledger: Option<PathBuf>) -> OtlpSink {
        let scope = InstrumentationScope::builder("portcullis")
            .with_version(env!("CARGO_PKG_VERSION"))
            .with_schema_url("https://opentelemetry.io/schemas/1.37.0")
            .build();
        OtlpSink {
            name: format!("otlp:{}", settings.endpoint),
            settings,
            ledger,
            ledger_id: OnceLock::new(),
            logs: LogRecords::new(scope.clone()),
            scope,
            exporters: OnceLock::new(),
            started: Mutex::new(StartedArguments::default()),
            reader: Arc::new(Mutex::new(None)),
        }
    }

    pub fn settings(&self) -> &OtlpSettings {
        &self.settings
    }

    fn ledger_id(&self) -> &str {
        self.ledger_id.get().map_or("", String::as_str)
    }

    fn exporters(&self) -> Result<&Exporters, OtelError> {
        if let Some(exporters) = self.exporters.get() {
            return Ok(exporters);
        }
        let exporters = self.build_exporters()?;
        Ok(self.exporters.get_or_init(|| exporters))
    }

    fn build_exporters(&self) -> Result<Exporters, OtelError> {
        let build = |e: opentelemetry_otlp::ExporterBuildError| OtelError::Build(e.to_string());
        let resource = Resource::builder()
            .with_service_name("portcullis")
            .with_attributes([
                KeyValue::new("service.version", env!("CARGO_PKG_VERSION")),
                KeyValue::new("service.instance.id", self.ledger_id().to_owned()),
                KeyValue::new(crate::conventions::PORTCULLIS_LEDGER_ID, self.ledger_id().to_owned()),
            ])
            .build();
        let mut spans = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_endpoint(self.settings.traces_url())
            .with_protocol(Protocol::HttpBinary)
            .with_timeout(EXPORT_TIMEOUT)
            .with_retry_policy(RetryPolicy::disabled())
            .build()
            .map_err(build)?;
        spans.set_resource(&resource);
        let mut logs = opentelemetry_otlp::LogExporter::builder()
            .with_http()
            .with_endpoint(self.settings.logs_url())
            .with_protocol(Protocol::HttpBinary)
            .with_timeout(EXPORT_TIMEOUT)
            .with_retry_policy(RetryPolicy::disabled())
            .build()
            .map_err(build)?;
        logs.set_resource(&resource);
        Ok(Exporters { spans, logs })
    }

    /// The (redacted) arguments of the call `record` ends, when content is exported: its own (a blocked
    /// call's), those its started record left, else those the ledger holds.
    async fn arguments_of(&self, record: &StoredRecord) -> Result<Option<Arc<Value>>, OtelError> {
        if !self.settings.include_content || record.kind == StoredKind::Blocked {
            return Ok(None);
        }
        if let Some(arguments) = self.started.lock().unwrap_or_else(PoisonError::into_inner).get(record) {
            return Ok(Some(arguments));
        }
        let (Some(ledger), true) = (self.ledger.clone(), record.head.started_at.is_some()) else {
            return Ok(None);
        };
        let reader = self.reader.clone();
        let (call_id, session) = (record.head.call_id.clone(), record.head.session_id.clone());
        tokio::task::spawn_blocking(move || {
            let mut reader = reader.lock().unwrap_or_else(PoisonError::into_inner);
            if reader.is_none() {
                *reader = Some(LedgerReader::open(&ledger).map_err(|e| OtelError::Ledger(e.to_string()))?);
            }
            let Some(reader) = reader.as_ref() else { return Ok(None) };
            let timeline =
                reader.timeline(&call_id, Some(&session)).map_err(|e| OtelError::Ledger(e.to_string()))?;
            Ok(timeline
                .records
                .into_iter()
                .find(|r| r.kind == StoredKind::Started)
                .and_then(|r| r.body.arguments))
        })
        .await
        .map_err(|e| OtelError::Ledger(e.to_string()))?
    }
}

#[async_trait]
impl RecordSink for OtlpSink {
    fn name(&self) -> &str {
        &self.name
    }

    fn bind(&self, ledger_id: &str) {
        let _ = self.ledger_id.set(ledger_id.to_owned());
    }

    async fn deliver(&self, records: &[StoredRecord]) -> Result<(), String> {
        if self.settings.include_content {
            let mut started = self.started.lock().unwrap_or_else(PoisonError::into_inner);
            for record in records.iter().filter(|r| r.kind == StoredKind::Started) {
                started.keep(record);
            }
        }
        let mut batch = Vec::new();
        for record in records.iter().filter(|r| r.kind.is_terminal()) {
            let arguments = self.arguments_of(record).await.map_err(|e| e.to_string())?;
            let inputs = SpanInputs {
                ledger_id: self.ledger_id(),
                scope: &self.scope,
                arguments: arguments.as_deref(),
                include_content: self.settings.include_content,
            };
            batch.extend(call_spans(record, &inputs).into_iter().flatten());
        }
        if batch.is_empty() {
            return Ok(());
        }
        let exporters = self.exporters().map_err(|e| e.to_string())?;
        let spans = batch.len();
        exporters
            .spans
            .export(batch)
            .await
            .map_err(|e| OtelError::Export { what: "spans", why: e.to_string() }.to_string())?;
        tracing::debug!(spans, "calls exported over OTLP");
        // The calls that went out need their started arguments no more.
        let mut started = self.started.lock().unwrap_or_else(PoisonError::into_inner);
        for record in records.iter().filter(|r| r.kind.is_terminal()) {
            started.forget(record);
        }
        Ok(())
    }

    fn side_tables(&self) -> &[SideTable] {
        &LOGGED_TABLES
    }

    async fn deliver_side(&self, table: SideTable, rows: &[SideRow]) -> Result<(), String> {
        let records: Vec<_> = rows.iter().filter_map(|row| self.logs.of(table, row)).collect();
        if records.is_empty() {
            return Ok(());
        }
        let exporters = self.exporters().map_err(|e| e.to_string())?;
        let batch: Vec<_> = records.iter().map(|record| (record, &self.scope)).collect();
        exporters
            .logs
            .export(LogBatch::new(&batch))
            .await
            .map_err(|e| OtelError::Export { what: "log records", why: e.to_string() }.to_string())
    }
}

/// The arguments of started calls not yet ended, oldest dropped first past [`STARTED_KEPT`].
#[derive(Default)]
struct StartedArguments {
    by_call: HashMap<(String, String), Arc<Value>>,
    order: VecDeque<(String, String)>,
}

impl StartedArguments {
    fn key(record: &StoredRecord) -> (String, String) {
        (record.head.session_id.clone(), record.head.call_id.clone())
    }

    fn keep(&mut self, record: &StoredRecord) {
        let Some(arguments) = record.body.arguments.clone() else { return };
        let key = Self::key(record);
        if self.by_call.insert(key.clone(), arguments).is_none() {
            self.order.push_back(key);
        }
        // `order` may name calls already forgotten: it is trimmed with the map.
        while self.by_call.len() > STARTED_KEPT || self.order.len() > 2 * STARTED_KEPT {
            let Some(oldest) = self.order.pop_front() else { break };
            self.by_call.remove(&oldest);
        }
    }

    fn get(&self, record: &StoredRecord) -> Option<Arc<Value>> {
        self.by_call.get(&Self::key(record)).cloned()
    }

    fn forget(&mut self, record: &StoredRecord) {
        self.by_call.remove(&Self::key(record));
    }
}
