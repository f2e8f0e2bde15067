//! Portcullis OpenTelemetry export: every tool call in the ledger leaves as OTLP spans following the
//! OTel GenAI/MCP semantic conventions (the call, and its policy decision as an `apply_guardrail` child),
//! approvals and refusals as OTLP log records. It is a sink of the ledger's tail
//! (`portcullis_ledger::RecordSink`), so exporting never sits on a call's path, and a collector that is
//! down delays nothing and loses nothing: the tail retries from its cursor.

pub mod conventions;
pub mod error;
mod logs;
pub mod settings;
mod sink;
mod spans;

pub use error::OtelError;
pub use settings::{ENDPOINT_ENV, OtlpSettings};
pub use sink::OtlpSink;
