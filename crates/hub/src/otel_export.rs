//! Where a hub sends OpenTelemetry: `--otlp URL` (else `$OTEL_EXPORTER_OTLP_ENDPOINT`, which the
//! command line reads), else nowhere. The exporter is a sink of the ledger's tail
//! (`crate::record_sinks`): every call leaves as spans, approvals and refusals as log records, and a
//! collector that is down delays no call and loses nothing.

pub use portcullis_otel::{OtlpSettings, OtlpSink};
use std::path::Path;
use std::sync::Arc;

/// The sink exporting the ledger at `db` to the collector `settings` names, if any.
pub fn sink_of(settings: Option<&OtlpSettings>, db: &Path) -> Option<Arc<OtlpSink>> {
    let settings = settings?;
    tracing::info!(
        endpoint = %settings.endpoint,
        content = settings.include_content,
        "calls are exported to OpenTelemetry"
    );
    Some(Arc::new(OtlpSink::new(settings.clone(), Some(db.to_owned()))))
}
