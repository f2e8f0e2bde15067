//! The spans of one call, made from its terminal record: the call (`{mcp.method.name} {gen_ai.tool.name}`,
//! a server span) and its policy decision (`apply_guardrail`, its child), with the real times the
//! records hold. Ids are derived from the ledger, session and call ids, so a retried export sends the
//! same spans again rather than new ones; a call whose agent sent a `traceparent` joins that trace.
//! `mcp.session.id` is the ledger's session (one per MCP connection), `gen_ai.tool.call.id` the
//! ledger's call id.

use crate::conventions::{self as c, Passage};
use opentelemetry::trace::{SpanContext, SpanId, SpanKind, Status, TraceFlags, TraceId, TraceState};
use opentelemetry::{InstrumentationScope, KeyValue};
use opentelemetry_sdk::trace::{SpanData, SpanEvents, SpanLinks};
use portcullis_harness::fnv::Fnv1a;
use portcullis_harness::{DecidedBy, Timestamp, TraceParent};
use portcullis_ledger::StoredRecord;
use portcullis_ledger::row::decided_columns;
use serde_json::Value;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The ids of a call's spans.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CallIds {
    pub trace_id: TraceId,
    pub call_span: SpanId,
    pub guardrail_span: SpanId,
    /// The agent's span the call continues (invalid: none).
    pub parent: SpanId,
}

impl CallIds {
    /// The ids of the call `record` ends, in the ledger `ledger_id`.
    pub fn of(ledger_id: &str, record: &StoredRecord) -> CallIds {
        let key = [ledger_id, &record.head.session_id, &record.head.call_id];
        let agent =
            record.body.mcp.as_ref().and_then(|m| m.traceparent.as_deref()).and_then(TraceParent::parse);
        let (trace_id, parent) = match agent {
            Some(t) => (TraceId::from_bytes(t.trace_id), SpanId::from_bytes(t.parent_id)),
            None => {
                let (high, low) = (derived(b"trace-high", &key), derived(b"trace-low", &key));
                (TraceId::from(u128::from(high) << 64 | u128::from(low)), SpanId::INVALID)
            }
        };
        CallIds {
            trace_id,
            call_span: SpanId::from(derived(b"call", &key)),
            guardrail_span: SpanId::from(derived(b"guardrail", &key)),
            parent,
        }
    }

    pub fn context(&self, span: SpanId) -> SpanContext {
        SpanContext::new(self.trace_id, span, TraceFlags::SAMPLED, false, TraceState::NONE)
    }
}

/// A 64-bit id of `what` for the call `key`, never 0 (the invalid id).
fn derived(what: &[u8], key: &[&str]) -> u64 {
    let mut hash = Fnv1a::default();
    hash.write(b"portcullis-otel\0");
    hash.write(what);
    for part in key {
        hash.write(b"\0");
        hash.write(part.as_bytes());
    }
    hash.finish().max(1)
}

pub(crate) fn system_time(at: Timestamp) -> SystemTime {
    UNIX_EPOCH + Duration::from_micros(u64::try_from(at.0).unwrap_or(0))
}

/// What a span of a call is made with besides its record.
pub(crate) struct SpanInputs<'a> {
    pub ledger_id: &'a str,
    pub scope: &'a InstrumentationScope,
    /// The call's (redacted) arguments, when content is exported and they are known.
    pub arguments: Option<&'a Value>,
    pub include_content: bool,
}

/// The call's span and its `apply_guardrail` child, for the terminal `record` (none for another).
pub(crate) fn call_spans(record: &StoredRecord, inputs: &SpanInputs<'_>) -> Option<[SpanData; 2]> {
    let passage = Passage::of(record)?;
    let ids = CallIds::of(inputs.ledger_id, record);
    let mcp = record.body.mcp.as_deref();
    let end = record.head.at;
    let start = mcp.map(|m| m.received_at).or(record.head.started_at).unwrap_or(end).min(end);
    // The gate is passed when the call starts (or is refused, or stops unanswered).
    let judged = record.head.started_at.unwrap_or(end).clamp(start, end);

    let method = mcp.map(|m| m.method.as_str());
    let name = format!("{} {}", method.unwrap_or(c::EXECUTE_TOOL), record.head.tool);
    let mut attributes = vec![
        KeyValue::new(c::GEN_AI_OPERATION_NAME, c::EXECUTE_TOOL),
        KeyValue::new(c::GEN_AI_TOOL_NAME, record.head.tool.clone()),
        KeyValue::new(c::GEN_AI_TOOL_CALL_ID, record.head.call_id.clone()),
        KeyValue::new(c::MCP_SESSION_ID, record.head.session_id.clone()),
        KeyValue::new(c::PORTCULLIS_OUTCOME, record.kind.as_str()),
        KeyValue::new(c::PORTCULLIS_OWNER, record.head.owner.clone()),
        KeyValue::new(c::PORTCULLIS_RECORD_ID, record.id),
    ];
    if let Some(mcp) = mcp {
        attributes.push(KeyValue::new(c::MCP_METHOD_NAME, mcp.method.clone()));
        attributes.push(KeyValue::new(c::JSONRPC_REQUEST_ID, mcp.request_id.clone()));
        if let Some(version) = &mcp.protocol_version {
            attributes.push(KeyValue::new(c::MCP_PROTOCOL_VERSION, version.clone()));
        }
    }
    let error_type = c::error_type(record);
    if let Some(error_type) = &error_type {
        attributes.push(KeyValue::new(c::ERROR_TYPE, error_type.clone()));
    }
    if inputs.include_content {
        let arguments = inputs.arguments.or(record.body.arguments.as_deref());
        if let Some(arguments) = arguments {
            attributes.push(KeyValue::new(c::GEN_AI_TOOL_CALL_ARGUMENTS, arguments.to_string()));
        }
        if let Some(result) = result_of(record) {
            attributes.push(KeyValue::new(c::GEN_AI_TOOL_CALL_RESULT, result));
        }
    }
    let call = SpanData {
        span_context: ids.context(ids.call_span),
        parent_span_id: ids.parent,
        parent_span_is_remote: ids.parent != SpanId::INVALID,
        span_kind: SpanKind::Server,
        name: name.into(),
        start_time: system_time(start),
        end_time: system_time(end),
        attributes,
        dropped_attributes_count: 0,
        events: SpanEvents::default(),
        links: SpanLinks::default(),
        status: match error_type {
            Some(error_type) => Status::error(error_type),
            None => Status::Unset,
        },
        instrumentation_scope: inputs.scope.clone(),
    };
    let guardrail = SpanData {
        span_context: ids.context(ids.guardrail_span),
        parent_span_id: ids.call_span,
        parent_span_is_remote: false,
        span_kind: SpanKind::Internal,
        name: c::APPLY_GUARDRAIL.into(),
        start_time: system_time(start),
        end_time: system_time(judged),
        attributes: guardrail_attributes(record, passage),
        dropped_attributes_count: 0,
        events: SpanEvents::default(),
        links: SpanLinks::default(),
        // A denial is the guardrail working, not failing.
        status: Status::Unset,
        instrumentation_scope: inputs.scope.clone(),
    };
    Some([call, guardrail])
}

/// The attributes of the `apply_guardrail` span: the decision (see the table in `conventions`), the
/// policy that gave it, and what decided the call in the end.
fn guardrail_attributes(record: &StoredRecord, passage: Passage) -> Vec<KeyValue> {
    let (decision, reason) = c::guardrail_decision(record.head.policy_decision, passage);
    let reason = record.head.reason.map_or(reason, |r| r.as_str());
    let decided_by = &record.body.decided_by;
    let policy_decider = record.policy_decided_by().unwrap_or(decided_by);
    let (kind, rule, source, _) = decided_columns(decided_by);
    let mut attributes = vec![
        KeyValue::new(c::GEN_AI_OPERATION_NAME, c::APPLY_GUARDRAIL),
        KeyValue::new(c::GEN_AI_GUARDIAN_NAME, c::GUARDIAN),
        KeyValue::new(c::GEN_AI_SECURITY_TARGET_TYPE, c::TARGET_TOOL_CALL),
        KeyValue::new(c::GEN_AI_SECURITY_DECISION_TYPE, decision),
        KeyValue::new(c::GEN_AI_SECURITY_DECISION_REASON, reason),
        KeyValue::new(c::GEN_AI_SECURITY_POLICY_ID, policy_id(policy_decider)),
        KeyValue::new(c::PORTCULLIS_DECIDED_BY, kind),
    ];
    if let Some(version) = &record.body.policy_version {
        attributes.push(KeyValue::new(c::GEN_AI_SECURITY_POLICY_VERSION, version.to_string()));
    }
    if let Some(policy) = record.head.policy_decision {
        attributes.push(KeyValue::new(c::PORTCULLIS_POLICY_DECISION, policy.as_str()));
    }
    let rule = record.head.policy_rule.clone().or_else(|| rule.map(str::to_owned));
    if let Some(rule) = rule {
        attributes.push(KeyValue::new(c::PORTCULLIS_RULE, rule));
    }
    if let Some(source) = source.filter(|_| matches!(decided_by, DecidedBy::Rule { .. })) {
        attributes.push(KeyValue::new(c::PORTCULLIS_RULE_SOURCE, source.to_owned()));
    }
    if let DecidedBy::Operator { outcome, operator, .. } = decided_by {
        let outcome = serde_json::to_value(outcome).ok().and_then(|v| v.as_str().map(str::to_owned));
        if let Some(who) = operator {
            attributes.push(KeyValue::new(c::PORTCULLIS_OPERATOR, who.clone()));
        }
        if let Some(outcome) = outcome {
            attributes.push(KeyValue::new(c::PORTCULLIS_OPERATOR_OUTCOME, outcome));
        }
    }
    attributes
}

/// The policy a decision came from: the policy file of the deciding rule, the guardrail pack, else
/// what decided (`default`, `protected_place`, `grants` ...).
fn policy_id(decider: &DecidedBy) -> String {
    match decider {
        DecidedBy::Rule { source, .. } => source.clone(),
        DecidedBy::Guardrail { pack, .. } => pack.clone(),
        other => decided_columns(other).0.to_owned(),
    }
}

/// The call's (redacted) result as JSON: the output of a finished call, the error of a failed one.
fn result_of(record: &StoredRecord) -> Option<String> {
    let result = match (&record.body.output, &record.body.error) {
        (Some(output), _) => serde_json::to_string(output.as_ref()),
        (None, Some(error)) => serde_json::to_string(error),
        (None, None) => return None,
    };
    result.ok()
}

#[cfg(test)]
#[path = "spans_tests.rs"]
mod tests;
