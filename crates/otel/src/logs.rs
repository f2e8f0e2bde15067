//! Approvals and refusals as OTLP log records, made from the rows the ledger's tail delivers (each
//! row as it is now: an approval shows once when asked and again when answered).

use crate::conventions as c;
use crate::spans::system_time;
use opentelemetry::InstrumentationScope;
use opentelemetry::logs::{AnyValue, LogRecord as _, Logger as _, LoggerProvider as _, Severity};
use opentelemetry_sdk::logs::{SdkLogRecord, SdkLogger, SdkLoggerProvider};
use portcullis_harness::Timestamp;
use portcullis_ledger::{SideRow, SideTable};
use serde_json::{Map, Value};

/// The event names of the log records.
pub const APPROVAL_REQUESTED: &str = "portcullis.approval.requested";
pub const APPROVAL_RESOLVED: &str = "portcullis.approval.resolved";
pub const REFUSAL: &str = "portcullis.refusal";

/// How each approval outcome is logged: its severity.
const APPROVAL_SEVERITIES: [(&str, Severity); 6] = [
    ("approved_once", Severity::Info),
    ("approved_for_session", Severity::Info),
    ("approved_always", Severity::Info),
    ("denied", Severity::Warn),
    ("timed_out", Severity::Warn),
    ("withdrawn", Severity::Info),
];

/// Makes log records (the SDK makes them only through a logger; none of its processors is used:
/// the records are exported by the sink itself, so that a failed export is retried by the tail).
pub(crate) struct LogRecords {
    logger: SdkLogger,
    _provider: SdkLoggerProvider,
}

impl LogRecords {
    pub fn new(scope: InstrumentationScope) -> LogRecords {
        let provider = SdkLoggerProvider::builder().build();
        LogRecords { logger: provider.logger_with_scope(scope), _provider: provider }
    }

    /// The log record of a changed row of `table` (none for the tables not logged).
    pub fn of(&self, table: SideTable, row: &SideRow) -> Option<SdkLogRecord> {
        match table {
            SideTable::Approvals => Some(self.approval(&row.row)),
            SideTable::Refusals => Some(self.refusal(&row.row)),
            SideTable::Sessions
            | SideTable::ToolPinEvents
            | SideTable::ChainCheckpoints
            | SideTable::EffectMarks => None,
        }
    }

    fn approval(&self, row: &Map<String, Value>) -> SdkLogRecord {
        let mut record = self.logger.create_log_record();
        let outcome = text(row, "outcome");
        let tool = text(row, "tool").unwrap_or_default();
        let at = int(row, "resolved_at").or_else(|| int(row, "requested_at")).unwrap_or(0);
        record.set_timestamp(system_time(Timestamp(at)));
        record.set_observed_timestamp(std::time::SystemTime::now());
        let (event, severity) = match outcome {
            Some(outcome) => {
                let severity = APPROVAL_SEVERITIES.iter().find(|(o, _)| *o == outcome).map(|(_, s)| *s);
                (APPROVAL_RESOLVED, severity.unwrap_or(Severity::Info))
            }
            None => (APPROVAL_REQUESTED, Severity::Info),
        };
        record.set_event_name(event);
        record.set_severity_number(severity);
        record.set_severity_text(severity.name());
        let operator = text(row, "operator");
        let body = match (outcome, operator) {
            (Some(outcome), Some(who)) => format!("approval of {tool}: {outcome} by {who}"),
            (Some(outcome), None) => format!("approval of {tool}: {outcome}"),
            (None, _) => format!("approval of {tool} requested"),
        };
        record.set_body(AnyValue::from(body));
        record.add_attribute(c::GEN_AI_TOOL_NAME, tool.to_owned());
        add_text(&mut record, c::MCP_SESSION_ID, row, "session_id");
        add_text(&mut record, c::GEN_AI_TOOL_CALL_ID, row, "call_id");
        add_text(&mut record, "portcullis.approval.outcome", row, "outcome");
        add_text(&mut record, c::PORTCULLIS_OPERATOR, row, "operator");
        add_text(&mut record, "portcullis.approval.note", row, "note");
        add_text(&mut record, "portcullis.approval.rule_written", row, "rule_written");
        add_int(&mut record, "portcullis.approval.id", row, "id");
        add_int(&mut record, "portcullis.approval.requested_at_us", row, "requested_at");
        add_int(&mut record, "portcullis.approval.resolved_at_us", row, "resolved_at");
        record
    }

    fn refusal(&self, row: &Map<String, Value>) -> SdkLogRecord {
        let mut record = self.logger.create_log_record();
        let at = int(row, "last_at").or_else(|| int(row, "first_at")).unwrap_or(0);
        record.set_timestamp(system_time(Timestamp(at)));
        record.set_observed_timestamp(std::time::SystemTime::now());
        record.set_event_name(REFUSAL);
        record.set_severity_number(Severity::Warn);
        record.set_severity_text(Severity::Warn.name());
        let code = text(row, "code").unwrap_or_default();
        let count = int(row, "count").unwrap_or(1);
        record.set_body(AnyValue::from(format!("request refused ({code}), {count} time(s) in the minute")));
        add_int(&mut record, "http.response.status_code", row, "status");
        add_text(&mut record, "http.request.method", row, "method");
        add_text(&mut record, "url.path", row, "path");
        add_text(&mut record, "client.address", row, "peer");
        add_text(&mut record, "http.request.header.origin", row, "origin");
        add_text(&mut record, "server.address", row, "host");
        add_text(&mut record, "user_agent.original", row, "user_agent");
        add_text(&mut record, "portcullis.refusal.code", row, "code");
        add_int(&mut record, "portcullis.refusal.count", row, "count");
        add_int(&mut record, "portcullis.refusal.id", row, "id");
        record
    }
}

fn text<'a>(row: &'a Map<String, Value>, column: &str) -> Option<&'a str> {
    row.get(column).and_then(Value::as_str)
}

fn int(row: &Map<String, Value>, column: &str) -> Option<i64> {
    row.get(column).and_then(Value::as_i64)
}

fn add_text(record: &mut SdkLogRecord, key: &'static str, row: &Map<String, Value>, column: &str) {
    if let Some(value) = text(row, column) {
        record.add_attribute(key, value.to_owned());
    }
}

fn add_int(record: &mut SdkLogRecord, key: &'static str, row: &Map<String, Value>, column: &str) {
    if let Some(value) = int(row, column) {
        record.add_attribute(key, value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry::Key;
    use serde_json::json;

    fn row(value: Value) -> SideRow {
        SideRow { cursor: 1, row: value.as_object().cloned().unwrap() }
    }

    fn attribute<'a>(record: &'a SdkLogRecord, key: &str) -> Option<&'a AnyValue> {
        record.attributes_iter().find(|(k, _)| *k == Key::from(key.to_owned())).map(|(_, v)| v)
    }

    #[test]
    fn an_answered_approval_is_logged_with_its_operator_and_outcome() {
        let logs = LogRecords::new(InstrumentationScope::builder("t").build());
        let answered = row(json!({
            "id": 3, "session_id": "s1", "call_id": "c2", "tool": "shell", "requested_at": 1_000_000,
            "resolved_at": 2_000_000, "outcome": "denied", "operator": "ana", "note": null, "rule_written": null
        }));
        let record = logs.of(SideTable::Approvals, &answered).unwrap();
        assert_eq!(record.event_name(), Some(APPROVAL_RESOLVED));
        assert_eq!(record.severity_number(), Some(Severity::Warn));
        assert_eq!(record.timestamp(), Some(system_time(Timestamp(2_000_000))));
        assert_eq!(attribute(&record, c::PORTCULLIS_OPERATOR), Some(&AnyValue::from("ana".to_owned())));
        assert_eq!(attribute(&record, "portcullis.approval.note"), None);
        let asked = row(json!({ "id": 4, "tool": "shell", "requested_at": 5, "outcome": null }));
        assert_eq!(logs.of(SideTable::Approvals, &asked).unwrap().event_name(), Some(APPROVAL_REQUESTED));
    }

    /// One check per row of `APPROVAL_SEVERITIES`.
    #[test]
    fn each_approval_outcome_has_its_severity() {
        let logs = LogRecords::new(InstrumentationScope::builder("t").build());
        for (outcome, severity) in APPROVAL_SEVERITIES {
            let answered = row(json!({ "tool": "shell", "resolved_at": 5, "outcome": outcome }));
            let record = logs.of(SideTable::Approvals, &answered).unwrap();
            assert_eq!(record.severity_number(), Some(severity), "{outcome}");
        }
    }

    #[test]
    fn a_refusal_is_a_warning_and_sessions_are_not_logged() {
        let logs = LogRecords::new(InstrumentationScope::builder("t").build());
        let refused =
            row(json!({ "id": 1, "status": 401, "code": "unauthorized", "count": 3, "last_at": 9 }));
        let record = logs.of(SideTable::Refusals, &refused).unwrap();
        assert_eq!(record.event_name(), Some(REFUSAL));
        assert_eq!(attribute(&record, "http.response.status_code"), Some(&AnyValue::Int(401)));
        assert!(logs.of(SideTable::Sessions, &refused).is_none());
    }
}
