//! The conformance kit (feature `testing`): checks any host can run against its own registry, grants
//! and policies. It proves the blocked-reason matrix (each reason returned, never executed, one
//! `tool_execution_blocked` event, no `started` event or record) plus the success path, and the tool
//! disclosure contract (only granted tools, bounded, deterministic, inert).

use crate::call::{BlockedReason, CallArguments, RunContext, ToolCall};
use crate::disclosure::{SEARCH_TOOLS_NAME, SUMMARY_BYTES};
use crate::dispatch::Dispatcher;
use crate::error_code::CallErrorCode;
use crate::events::{EventDelivery, EventSubscription, ToolEventKind};
use crate::ledger::{MemoryLedger, RecordKind};
use crate::outcome::{CallOutcome, ToolCallResult};
use serde_json::{Value, json};
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// One check's result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    pub name: String,
    pub passed: bool,
    pub detail: String,
}

/// All checks of a run of the kit.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConformanceReport {
    pub checks: Vec<Check>,
}

impl ConformanceReport {
    fn check(&mut self, name: impl Into<String>, passed: bool, detail: impl Into<String>) {
        self.checks.push(Check { name: name.into(), passed, detail: detail.into() });
    }

    pub fn failures(&self) -> Vec<&Check> {
        self.checks.iter().filter(|c| !c.passed).collect()
    }

    pub fn passed(&self) -> bool {
        !self.checks.is_empty() && self.checks.iter().all(|c| c.passed)
    }

    /// Merges another report's checks into this one.
    pub fn extend(&mut self, other: ConformanceReport) {
        self.checks.extend(other.checks);
    }
}

impl fmt::Display for ConformanceReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for c in &self.checks {
            writeln!(f, "[{}] {}: {}", if c.passed { "pass" } else { "FAIL" }, c.name, c.detail)?;
        }
        Ok(())
    }
}

/// Calls the host supplies for the blocked-reason matrix. Ids are replaced by the kit's own.
#[derive(Debug, Clone)]
pub struct ConformanceCalls {
    /// A call that finishes.
    pub success: ToolCall,
    /// A call whose tool is not registered.
    pub unknown_tool: ToolCall,
    /// A call whose tool is registered but refused by the run's grants.
    pub tool_denied: ToolCall,
    /// A call refused by the permission check, if the host has one.
    pub permission_denied: Option<ToolCall>,
    /// A call whose arguments break the tool's JSON Schema.
    pub validation_failed: ToolCall,
    /// A call the execution policy forbids, if the host has a policy.
    pub execution_denied: Option<ToolCall>,
}

/// What the kit runs against.
pub struct ConformanceTarget {
    pub dispatcher: Dispatcher,
    pub run: RunContext,
    /// The host's in-memory ledger, if it dispatches into one (records are then checked too).
    pub ledger: Option<Arc<MemoryLedger>>,
    pub calls: ConformanceCalls,
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

fn fresh(call: &ToolCall, case: &str) -> ToolCall {
    let n = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    ToolCall { id: Arc::from(format!("conformance-{case}-{n}")), ..call.clone() }
}

fn kinds_for(subscription: &mut EventSubscription, call_id: &str) -> Result<Vec<ToolEventKind>, String> {
    let mut kinds = Vec::new();
    for delivery in subscription.drain() {
        match delivery {
            EventDelivery::Event(e) if &*e.call.call_id == call_id => kinds.push(e.kind()),
            EventDelivery::Event(_) => {}
            EventDelivery::Lagged { missed } => {
                return Err(format!("subscriber lagged, missed {missed} events"));
            }
        }
    }
    Ok(kinds)
}

impl ConformanceTarget {
    async fn dispatch_observed(
        &self,
        call: ToolCall,
    ) -> (ToolCallResult, Result<Vec<ToolEventKind>, String>) {
        let mut subscription = self.dispatcher.events().subscribe();
        let id = call.id.clone();
        let result = self.dispatcher.dispatch(call, &self.run).await;
        let kinds = kinds_for(&mut subscription, &id);
        (result, kinds)
    }

    async fn expect_blocked(
        &self,
        report: &mut ConformanceReport,
        case: &str,
        call: ToolCall,
        reason: BlockedReason,
        code: CallErrorCode,
    ) {
        let call = fresh(&call, case);
        let id = call.id.clone();
        let (result, kinds) = self.dispatch_observed(call).await;
        let got = result.blocked_reason();
        report.check(
            format!("{case}: blocked as {reason}"),
            got == Some(reason),
            format!("got {:?}", got.map(BlockedReason::as_str).unwrap_or("not blocked")),
        );
        let got_code = result.error().map(|e| e.code.as_str()).unwrap_or("");
        report.check(
            format!("{case}: error code {code}"),
            got_code == code.as_str(),
            format!("got {got_code:?}"),
        );
        match kinds {
            Ok(kinds) => {
                let blocked = kinds.iter().filter(|k| **k == ToolEventKind::ToolExecutionBlocked).count();
                let ran = kinds.iter().any(|k| {
                    matches!(
                        k,
                        ToolEventKind::ToolExecutionStarted
                            | ToolEventKind::ToolExecutionProgress
                            | ToolEventKind::ToolExecutionFinished
                            | ToolEventKind::ToolExecutionError
                    )
                });
                report.check(
                    format!("{case}: one blocked event, never started"),
                    blocked == 1 && !ran,
                    format!("events {kinds:?}"),
                );
            }
            Err(e) => report.check(format!("{case}: events observed"), false, e),
        }
        if let Some(ledger) = &self.ledger {
            let records = ledger.for_call(&id);
            let kinds: Vec<RecordKind> = records.iter().map(|r| r.kind).collect();
            let ok = kinds == [RecordKind::Blocked] && records[0].blocked_reason == Some(reason);
            report.check(
                format!("{case}: one blocked record, no started record"),
                ok,
                format!("records {kinds:?}"),
            );
        }
    }

    /// The blocked-reason matrix and the success path.
    pub async fn run_blocked_matrix(&self) -> ConformanceReport {
        let mut report = ConformanceReport::default();
        let calls = &self.calls;

        let call = fresh(&calls.success, "success");
        let id = call.id.clone();
        let (result, kinds) = self.dispatch_observed(call).await;
        report.check(
            "success: finishes",
            matches!(result.outcome, CallOutcome::Finished { .. }),
            format!("outcome {:?}", result.error()),
        );
        match kinds {
            Ok(kinds) => {
                let lifecycle: Vec<_> =
                    kinds.into_iter().filter(|k| *k != ToolEventKind::GuardrailDecision).collect();
                let ok = lifecycle.first() == Some(&ToolEventKind::ToolExecutionStarted)
                    && lifecycle.last() == Some(&ToolEventKind::ToolExecutionFinished)
                    && lifecycle.iter().filter(|k| **k == ToolEventKind::ToolExecutionStarted).count() == 1
                    && lifecycle[1..lifecycle.len() - 1]
                        .iter()
                        .all(|k| *k == ToolEventKind::ToolExecutionProgress);
                report.check("success: started, progress*, finished", ok, format!("events {lifecycle:?}"));
            }
            Err(e) => report.check("success: events observed", false, e),
        }
        if let Some(ledger) = &self.ledger {
            let kinds: Vec<RecordKind> = ledger.for_call(&id).iter().map(|r| r.kind).collect();
            let ok =
                kinds.first() == Some(&RecordKind::Started) && kinds.last() == Some(&RecordKind::Finished);
            report.check("success: started then finished records", ok, format!("records {kinds:?}"));
        }

        self.expect_blocked(
            &mut report,
            "unknown_tool",
            calls.unknown_tool.clone(),
            BlockedReason::UnknownTool,
            CallErrorCode::UnknownTool,
        )
        .await;
        self.expect_blocked(
            &mut report,
            "tool_denied",
            calls.tool_denied.clone(),
            BlockedReason::ToolDenied,
            CallErrorCode::ToolDenied,
        )
        .await;
        for (case, arguments) in [
            ("arguments_array", json!([1, 2])),
            ("arguments_string", json!("text")),
            ("arguments_number", json!(7)),
            ("arguments_null", Value::Null),
        ] {
            let call = ToolCall { arguments: CallArguments::Json(arguments), ..calls.success.clone() };
            self.expect_blocked(
                &mut report,
                case,
                call,
                BlockedReason::InvalidArguments,
                CallErrorCode::InvalidArguments,
            )
            .await;
        }
        let unparsed =
            ToolCall { arguments: CallArguments::from_text("{\"text\": \"cut off"), ..calls.success.clone() };
        self.expect_blocked(
            &mut report,
            "arguments_unparsed",
            unparsed,
            BlockedReason::InvalidArguments,
            CallErrorCode::InvalidJsonArguments,
        )
        .await;
        if let Some(call) = &calls.permission_denied {
            self.expect_blocked(
                &mut report,
                "permission_denied",
                call.clone(),
                BlockedReason::PermissionDenied,
                CallErrorCode::PermissionDenied,
            )
            .await;
        }
        self.expect_blocked(
            &mut report,
            "validation_failed",
            calls.validation_failed.clone(),
            BlockedReason::ValidationFailed,
            CallErrorCode::ValidationFailed,
        )
        .await;
        if let Some(call) = &calls.execution_denied {
            self.expect_blocked(
                &mut report,
                "execution_denied",
                call.clone(),
                BlockedReason::ExecutionDenied,
                CallErrorCode::ExecutionDenied,
            )
            .await;
        }
        report
    }

    async fn search(&self, query: &str, k: Option<u64>) -> ToolCallResult {
        let mut arguments = json!({ "query": query });
        if let (Some(k), Value::Object(map)) = (k, &mut arguments) {
            map.insert("k".into(), json!(k));
        }
        let call = fresh(&ToolCall::new("x", SEARCH_TOOLS_NAME, arguments), "search");
        self.dispatcher.dispatch(call, &self.run).await
    }

    /// The disclosure contract, through `search_tools` as an agent calls it. `queries` should name
    /// words of granted and of denied tools.
    pub async fn run_disclosure_contract(&self, queries: &[&str]) -> ConformanceReport {
        let mut report = ConformanceReport::default();
        let registry = self.dispatcher.registry();
        let grants = self.run.grants.clone();
        let denied: Vec<String> =
            registry.names().filter(|n| !grants.permits(n)).map(str::to_owned).collect();
        let present = registry.contains(SEARCH_TOOLS_NAME) && grants.permits(SEARCH_TOOLS_NAME);
        report.check("search_tools is registered and granted", present, "");
        if !present {
            return report;
        }
        let mut all_queries: Vec<String> = queries.iter().map(|q| (*q).to_owned()).collect();
        all_queries.extend(denied.iter().cloned()); // asking for a denied tool by its exact name
        for query in &all_queries {
            for k in [None, Some(1), Some(64)] {
                let first = self.search(query, k).await;
                let Some(output) = first.output() else {
                    report.check(
                        format!("query {query:?} k={k:?}: finishes"),
                        false,
                        format!("{:?}", first.error()),
                    );
                    continue;
                };
                let text = output.joined_text();
                let lines: Vec<&str> =
                    if text == "No tools match the query." { Vec::new() } else { text.lines().collect() };
                let limit = usize::try_from(k.unwrap_or(16)).unwrap_or(usize::MAX);
                report.check(
                    format!("query {query:?} k={k:?}: at most k lines"),
                    lines.len() <= limit,
                    format!("{} lines", lines.len()),
                );
                let mut shown_ok = true;
                let mut detail = String::new();
                for line in &lines {
                    let Some((name, summary)) = line.split_once(": ") else {
                        shown_ok = false;
                        detail = format!("line without `name: description`: {line:?}");
                        break;
                    };
                    if !registry.contains(name) || !grants.permits(name) || name == SEARCH_TOOLS_NAME {
                        shown_ok = false;
                        detail = format!("disclosed a tool that is not granted: {name}");
                        break;
                    }
                    if summary.len() > SUMMARY_BYTES {
                        shown_ok = false;
                        detail = format!("description of {name} is {} bytes", summary.len());
                        break;
                    }
                }
                report.check(
                    format!("query {query:?} k={k:?}: only granted tools, inert lines"),
                    shown_ok,
                    detail,
                );
                let leaked: Vec<&String> = denied.iter().filter(|d| text.contains(d.as_str())).collect();
                report.check(
                    format!("query {query:?} k={k:?}: never describes a denied tool"),
                    leaked.is_empty(),
                    format!("{leaked:?}"),
                );
                report.check(
                    format!("query {query:?} k={k:?}: nothing left to redact"),
                    self.dispatcher.redactor().redact_str(&text).is_none(),
                    "",
                );
                let again = self.search(query, k).await;
                report.check(
                    format!("query {query:?} k={k:?}: deterministic"),
                    again.output().map(|o| o.joined_text()) == Some(text.clone()),
                    "",
                );
            }
        }
        let too_long = "q".repeat(65_537);
        let refused = self.search(&too_long, None).await;
        report.check(
            "an over-long query is refused",
            !refused.is_finished(),
            format!("{:?}", refused.error().map(|e| e.code.clone())),
        );
        let too_many = self.search("file", Some(65)).await;
        report.check(
            "k over the hard cap of 64 is refused",
            too_many.blocked_reason() == Some(BlockedReason::ValidationFailed),
            format!("{:?}", too_many.blocked_reason()),
        );
        report
    }
}
