//! Tests of the journal's entry encoding (`wire.rs`) and of the appender's record encoding
//! (`prepared.rs`): each record decodes to the columns and body the ledger stored before the journal.

use super::*;
use crate::prepared::{Chaining, RunningCalls, encode_record};
use crate::refusals::RefusalRow;
use crate::row::{RecordBody, body_of, decided_columns, policy_columns, search_text_of};
use crate::row_bytes::{KINDS, kind_byte};
use crate::sessions::{ApprovalOutcome, ApprovalRecord, SessionInfo};
use portcullis_harness::CallErrorCode;
use portcullis_harness::{
    ActionKind, BlockedReason, CallContext, CallError, DecidedBy, ExecutionAction, FileAccess, FileVerdict,
    McpRequest, OperatorOutcome, PolicyDecision, PolicyRuling, RecordKind, RuleRef, ToolCallRecord,
    ToolOutput,
};
use serde_json::json;
use std::sync::Arc;

fn ctx(call: &str, cwd: bool) -> Arc<CallContext> {
    Arc::new(CallContext {
        session_id: "s-1".into(),
        run_id: "r".into(),
        call_id: Arc::from(call),
        owner: "agent".into(),
        cwd: cwd.then(|| Arc::from(std::path::Path::new("/work/ü"))),
        // The full records also carry the agent's MCP request.
        mcp: cwd.then(|| {
            Arc::new(McpRequest {
                method: "tools/call".into(),
                request_id: "7".into(),
                protocol_version: Some("2025-11-25".into()),
                traceparent: Some("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01".into()),
                received_at: Timestamp(1_699_999_998_000_000),
                agent: None,
                idempotency_key: None,
            })
        }),
    })
}

/// A chain's end for encoding records in tests.
pub(crate) fn chaining() -> Chaining {
    Chaining::new(crate::chain::ChainHead { count: 0, link: [7; 32] }, 1)
}

/// Records of every kind, plain and with every optional part set.
pub(crate) fn records() -> Vec<ToolCallRecord> {
    let mut out = Vec::new();
    for (i, kind) in KINDS.into_iter().enumerate() {
        let plain =
            ToolCallRecord::new(kind, ctx(&format!("plain-{i}"), false), "read".into(), DecidedBy::DEFAULT);
        out.push(plain);
        let mut full = ToolCallRecord::new(
            kind,
            ctx(&format!("full-{i}"), true),
            "shell".into(),
            DecidedBy::Operator {
                receipt: None,
                outcome: OperatorOutcome::ApprovedOnce,
                operator: Some("ana".into()),
                rule_written: Some(Box::new(RuleRef {
                    id: "w".into(),
                    source: "user.json".into(),
                    decision: None,
                })),
            },
        );
        full.at = Timestamp(1_700_000_000_000_000 + i as i64);
        full.started_at = Some(Timestamp(1_699_999_999_000_000));
        full.arguments = Some(Arc::new(json!({"command": "ls \"a b\"\n", "n": i})));
        full.action = Some(Arc::new(ExecutionAction::new(ActionKind::Execute, "ls")));
        full.progress = Some(json!({"done": 3}));
        full.output = Some(Arc::new(ToolOutput::text("out\u{1F600}")));
        full.error = Some(CallError::new(CallErrorCode::Unknown("boom".into()), "it broke"));
        full.blocked_reason = Some(BlockedReason::ToolDenied);
        full.matched_rules =
            vec![RuleRef { id: "r1".into(), source: "p.json".into(), decision: Some("ask".into()) }];
        full.policy = Some(PolicyRuling {
            decision: PolicyDecision::Ask,
            decided_by: DecidedBy::Rule { rule_id: "p1".into(), source: "p.json".into() },
            files: vec![FileVerdict {
                path: "/etc/passwd".into(),
                access: FileAccess::Read,
                recursive: false,
                via: "cat operand".into(),
                decision: PolicyDecision::Deny,
                reason: Some("secret".into()),
            }],
            version: Some(Arc::from("0123456789abcdef0123456789abcdef")),
        });
        full.redacted = true;
        out.push(full);
    }
    out
}

/// Each record decodes to the columns and the JSON body the ledger stored before (`body_of`,
/// `decided_columns`, `policy_columns`): the borrowed body serializes exactly like `RecordBody`.
#[test]
fn records_decode_to_the_columns_and_body_of_the_record() {
    for record in records() {
        let mut running = RunningCalls::new();
        let mut bytes = Vec::new();
        encode_record(&record, &mut running, &mut chaining(), &mut bytes).unwrap();
        let mut reader = Reader::new(&bytes);
        let Decoded::Record(row) = reader.entry().unwrap() else { panic!("not a record") };
        assert!(reader.is_empty());
        let what = format!("{:?} {}", record.kind, record.call.call_id);
        assert_eq!(row.body, serde_json::to_string(&body_of(&record)).unwrap(), "{what}");
        assert_eq!(serde_json::from_str::<RecordBody>(row.body).unwrap(), body_of(&record), "{what}");
        let (decided, rule, source, operator) = decided_columns(&record.decided_by);
        assert_eq!((row.decided, row.decided_rule, row.decided_source), (decided, rule, source), "{what}");
        assert_eq!(row.decided_operator, operator.as_deref(), "{what}");
        let (policy_decision, policy_rule) = policy_columns(record.policy.as_ref());
        assert_eq!(
            (row.policy_decision, row.policy_rule),
            (policy_decision, policy_rule.as_deref()),
            "{what}"
        );
        assert_eq!(
            (row.session_id, row.run_id, row.call_id, row.owner, row.tool),
            (
                &*record.call.session_id,
                &*record.call.run_id,
                &*record.call.call_id,
                &*record.call.owner,
                &*record.tool_name
            ),
        );
        assert_eq!(row.call_key, crate::schema::call_key(&record.call.call_id));
        assert_eq!(
            (row.kind, row.at, row.started_at),
            (record.kind, record.at.0, record.started_at.map(|t| t.0))
        );
        assert_eq!(row.reason, record.blocked_reason.map(|r| r.as_str()));
        assert_eq!(row.error_code, record.error.as_ref().map(|e| e.code.as_str()));
        assert_eq!(row.redacted, record.redacted);
        assert_eq!(row.status().is_some(), crate::row_bytes::is_terminal(record.kind), "{what}");
        assert_eq!(row.search.is_some(), crate::row_bytes::is_terminal(record.kind), "{what}");
        // Each record is its own call here: the started arguments are empty.
        let own =
            search_text_of(record.arguments.as_deref(), record.output.as_deref(), record.error.as_ref());
        if let Some(search) = row.search {
            assert_eq!(search, format!("{}  {own}", record.tool_name), "{what}");
        }
    }
}

/// A terminal record's search document holds the tool, its call's started arguments and its own text.
#[test]
fn the_search_document_carries_the_started_arguments() {
    let mut running = RunningCalls::new();
    let mut started =
        ToolCallRecord::new(RecordKind::Started, ctx("c", false), "shell".into(), DecidedBy::DEFAULT);
    started.arguments = Some(Arc::new(json!({"command": "kubectl apply"})));
    let mut finished =
        ToolCallRecord::new(RecordKind::Finished, ctx("c", false), "shell".into(), DecidedBy::DEFAULT);
    finished.output = Some(Arc::new(ToolOutput::text("deployment configured")));
    let mut bytes = Vec::new();
    encode_record(&started, &mut running, &mut chaining(), &mut bytes).unwrap();
    assert_eq!(running.len(), 1);
    encode_record(&finished, &mut running, &mut chaining(), &mut bytes).unwrap();
    assert!(running.is_empty(), "the call's arguments are dropped at its end");
    let mut reader = Reader::new(&bytes);
    let _ = reader.entry().unwrap();
    let Decoded::Record(row) = reader.entry().unwrap() else { panic!() };
    assert_eq!(row.search, Some(r#"shell {"command":"kubectl apply"}  deployment configured"#));
}

/// A body written before the ledger kept the agent's MCP request reads as one without it.
#[test]
fn a_body_without_the_mcp_request_still_reads() {
    let old = r#"{"arguments":{"command":"ls"},"decided_by":{"by":"default"}}"#;
    let body: RecordBody = serde_json::from_str(old).unwrap();
    assert_eq!(body.mcp, None);
    let full = records().pop().unwrap();
    let written = serde_json::to_value(body_of(&full)).unwrap();
    assert_eq!(written["mcp"]["request_id"], "7");
}

#[test]
fn other_entries_round_trip() {
    let entries = vec![
        Entry::Session(SessionInfo {
            id: "s".into(),
            client_name: Some("claude-code".into()),
            client_version: None,
            cwd: Some("/w".into()),
            policy_hash: None,
            started_at: Timestamp(3),
            ended_at: Some(Timestamp(4)),
        }),
        Entry::SessionEnd { id: "s".into(), at: Timestamp(9) },
        Entry::Approval(Box::new(ApprovalRecord {
            receipt: None,
            session_id: "s".into(),
            call_id: "c".into(),
            tool: "shell".into(),
            requested_at: Timestamp(1),
            resolved_at: Some(Timestamp(2)),
            outcome: Some(ApprovalOutcome::Withdrawn),
            operator: None,
            note: Some("n".into()),
            rule_written: None,
        })),
        Entry::Refusal(RefusalRow {
            first_at: Timestamp(1),
            last_at: Timestamp(2),
            count: 3,
            status: 401,
            code: "unauthorized".into(),
            method: Some("POST".into()),
            path: None,
            peer: None,
            origin: None,
            host: None,
            user_agent: None,
        }),
    ];
    let mut bytes = Vec::new();
    for e in &entries {
        encode_entry(e, &mut bytes).unwrap();
    }
    let mut reader = Reader::new(&bytes);
    let mut back = Vec::new();
    while !reader.is_empty() {
        back.push(reader.entry().unwrap());
    }
    assert_eq!(back, entries.into_iter().map(Decoded::Other).collect::<Vec<_>>());
}

/// Every cut of an encoded record is refused as short, never read as another record.
#[test]
fn a_truncated_entry_is_an_error() {
    let record = records().pop().unwrap();
    let mut bytes = Vec::new();
    encode_record(&record, &mut RunningCalls::new(), &mut chaining(), &mut bytes).unwrap();
    for cut in 0..bytes.len() {
        assert!(Reader::new(&bytes[..cut]).entry().is_err(), "cut at {cut}");
    }
}

#[test]
fn unknown_tags_and_kinds_are_refused() {
    assert!(matches!(Reader::new(&[9]).entry(), Err(WireError::Tag(9))));
    let record =
        ToolCallRecord::new(RecordKind::Started, ctx("c", false), "shell".into(), DecidedBy::DEFAULT);
    let mut bytes = Vec::new();
    encode_record(&record, &mut RunningCalls::new(), &mut chaining(), &mut bytes).unwrap();
    // The kind byte follows the tag, three strings, the key and two more strings.
    let at = 1 + (4 + 3) + (4 + 1) + (4 + 1) + 8 + (4 + 5) + (4 + 5);
    assert_eq!(bytes[at], kind_byte(RecordKind::Started));
    bytes[at] = 77;
    assert!(matches!(Reader::new(&bytes).entry(), Err(WireError::Kind(77))));
}
