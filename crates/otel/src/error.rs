//! Why an OpenTelemetry export could not be set up or did not go out.

/// What went wrong with the OTLP export.
#[derive(Debug, thiserror::Error)]
pub enum OtelError {
    #[error("OTLP endpoint {endpoint:?}: {why}")]
    Endpoint { endpoint: String, why: String },
    #[error("the OTLP exporter could not be built: {0}")]
    Build(String),
    #[error("OTLP export of {what} failed: {why}")]
    Export { what: &'static str, why: String },
    #[error("the ledger could not be read for a call's arguments: {0}")]
    Ledger(String),
}
