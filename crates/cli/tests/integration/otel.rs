//! Issue 34, OpenTelemetry: `portcullis serve --otlp URL` exports every call as OTLP spans and every
//! approval as an OTLP log record, with the official SDK client as the agent and a collector of the
//! test's own on loopback that decodes the bodies with the official OTLP protobuf definitions
//! (`opentelemetry-proto`). The spans carry the GenAI/MCP convention attributes and an `apply_guardrail`
//! child; a call whose agent sent `_meta.traceparent` is in that trace; arguments leave only with
//! `--otlp-include-content`, and then redacted; a collector that was down when the calls ran still gets
//! them all.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::{Served, http, ledger_calls_when, node_modules, serve_with_args};
use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{KeyValue, any_value};
use opentelemetry_proto::tonic::logs::v1::LogRecord;
use opentelemetry_proto::tonic::trace::v1::Span;
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use prost::Message as _;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const POLICY: &str = r#"{
  "grants": [ { "name": "agents", "allow": ["shell"] } ],
  "commands": { "default": "forbidden",
    "rules": [
      { "id": "echoing", "pattern": [["echo"]], "decision": "allow", "match": ["echo hi"] },
      { "id": "touching", "pattern": [["touch"]], "decision": "prompt", "match": ["touch x"] }
    ] }
}
"#;

const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT_ID: &str = "00f067aa0ba902b7";

/// What the collector received: every body, decoded, and all bodies' bytes.
#[derive(Default)]
struct Received {
    traces: Vec<ExportTraceServiceRequest>,
    logs: Vec<ExportLogsServiceRequest>,
    bytes: Vec<u8>,
}

/// An OTLP/HTTP collector on loopback (axum on a runtime of its own), stopped when dropped.
struct Collector {
    received: Arc<Mutex<Received>>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Collector {
    fn start(port: u16) -> Collector {
        use axum::routing::post;
        let received = Arc::new(Mutex::new(Received::default()));
        let (traces, logs) = (received.clone(), received.clone());
        let app = axum::Router::new()
            .route(
                "/v1/traces",
                post(move |body: axum::body::Bytes| async move {
                    let mut r = traces.lock().unwrap();
                    r.traces.push(ExportTraceServiceRequest::decode(body.as_ref()).unwrap());
                    r.bytes.extend_from_slice(&body);
                }),
            )
            .route(
                "/v1/logs",
                post(move |body: axum::body::Bytes| async move {
                    let mut r = logs.lock().unwrap();
                    r.logs.push(ExportLogsServiceRequest::decode(body.as_ref()).unwrap());
                    r.bytes.extend_from_slice(&body);
                }),
            );
        let listener = std::net::TcpListener::bind(("127.0.0.1", port)).unwrap();
        listener.set_nonblocking(true).unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                let _ = axum::serve(listener, app)
                    .with_graceful_shutdown(async move {
                        let _ = stopped.await;
                    })
                    .await;
            });
        });
        Collector { received, stop: Some(stop), thread: Some(thread) }
    }

    /// Every span received (each with its resource's attributes).
    fn spans(&self) -> Vec<(Vec<KeyValue>, Span)> {
        let received = self.received.lock().unwrap();
        let mut out = Vec::new();
        for request in &received.traces {
            for resource in &request.resource_spans {
                let attrs = resource.resource.as_ref().map(|r| r.attributes.clone()).unwrap_or_default();
                for scope in &resource.scope_spans {
                    out.extend(scope.spans.iter().map(|s| (attrs.clone(), s.clone())));
                }
            }
        }
        out
    }

    fn log_records(&self) -> Vec<LogRecord> {
        let received = self.received.lock().unwrap();
        (received.logs.iter())
            .flat_map(|r| &r.resource_logs)
            .flat_map(|r| &r.scope_logs)
            .flat_map(|s| s.log_records.clone())
            .collect()
    }

    fn bytes_contain(&self, needle: &str) -> bool {
        let received = self.received.lock().unwrap();
        received.bytes.windows(needle.len()).any(|w| w == needle.as_bytes())
    }

    /// Waits (30 s at most) until `done` holds of what was received.
    fn wait_for(&self, what: &str, done: impl Fn(&Collector) -> bool) {
        let started = Instant::now();
        while !done(self) {
            assert!(started.elapsed() < Duration::from_secs(30), "the collector never got {what}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Collector {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// A loopback port nothing listens on (for now).
fn free_port() -> u16 {
    std::net::TcpListener::bind(("127.0.0.1", 0)).unwrap().local_addr().unwrap().port()
}

fn attr(attributes: &[KeyValue], key: &str) -> Option<String> {
    let value = attributes.iter().find(|kv| kv.key == key)?.value.as_ref()?.value.as_ref()?;
    Some(match value {
        any_value::Value::StringValue(s) => s.clone(),
        any_value::Value::IntValue(i) => i.to_string(),
        any_value::Value::BoolValue(b) => b.to_string(),
        other => format!("{other:?}"),
    })
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn call_spans(collector: &Collector) -> Vec<Span> {
    (collector.spans().into_iter().map(|(_, s)| s)).filter(|s| s.name.starts_with("tools/call ")).collect()
}

/// Answers the hub's first pending approval with `answer`, as its operator.
fn answer_first_prompt(served: &Served, answer: &str) {
    let started = Instant::now();
    loop {
        let (_, body) =
            http(&format!("{}/approvals", served.api), "GET", Some(&served.operator_token), &[], None);
        let pending: Value = serde_json::from_str(&body).unwrap();
        if let Some(p) = pending["approvals"].as_array().and_then(|a| a.first()) {
            let body = json!({ "answer": answer, "arguments_sha256": p["arguments_sha256"] }).to_string();
            let url = format!("{}/approvals/{}", served.api, p["id"]);
            let (status, text) = http(&url, "POST", Some(&served.operator_token), &[], Some(&body));
            assert_eq!(status, 200, "{text}");
            return;
        }
        assert!(started.elapsed() < Duration::from_secs(30), "no prompt came");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn every_call_is_an_otlp_span_with_its_guardrail_and_the_agents_trace_is_continued() {
    node_modules();
    // The collector is down while the calls run: nothing may be lost.
    let port = free_port();
    let endpoint = format!("http://127.0.0.1:{port}");
    let served = serve_with_args(POLICY, &[], &["--otlp", &endpoint]);
    let prompted = crate::common::agent_in_background(
        &json!({"mcp_url": served.mcp_url}),
        &served.token,
        json!([{"op": "call", "name": "shell", "arguments": {"command": "touch approved-file"}}]),
    );
    answer_first_prompt(&served, "once");
    assert!(prompted.join().unwrap().status.success());
    served.agent(json!([
        {"op": "call", "name": "shell", "arguments": {"command": "echo traced-call"},
         "meta": {"traceparent": format!("00-{TRACE_ID}-{PARENT_ID}-01")}},
        {"op": "call", "name": "shell", "arguments": {"command": "rm -rf forbidden-dir"}},
        {"op": "call", "name": "shell", "arguments": {"command": "echo odd-trace"},
         "meta": {"traceparent": "00-ZZZ-not-a-trace-01"}},
    ]));
    assert_eq!(ledger_calls_when(&served, 4).len(), 4);

    let collector = Collector::start(port);
    collector.wait_for("four calls", |c| call_spans(c).len() >= 4);
    collector.wait_for("the approval", |c| {
        c.log_records().iter().any(|l| l.event_name == "portcullis.approval.resolved")
    });
    let spans = collector.spans();
    let calls = call_spans(&collector);
    assert_eq!(calls.len(), 4, "each call exported once: {calls:#?}");

    // The conventions' attributes on every call span; the resource names the service.
    for call in &calls {
        assert_eq!(call.name, "tools/call shell");
        assert_eq!(call.kind, SpanKind::Server as i32);
        let a = &call.attributes;
        assert_eq!(attr(a, "mcp.method.name").as_deref(), Some("tools/call"), "{call:#?}");
        assert_eq!(attr(a, "gen_ai.tool.name").as_deref(), Some("shell"));
        assert_eq!(attr(a, "gen_ai.operation.name").as_deref(), Some("execute_tool"));
        assert!(attr(a, "mcp.session.id").is_some_and(|s| !s.is_empty()), "{call:#?}");
        assert!(attr(a, "mcp.protocol.version").is_some_and(|v| v.starts_with("20")), "{call:#?}");
        assert!(attr(a, "jsonrpc.request.id").is_some(), "{call:#?}");
        assert!(attr(a, "gen_ai.tool.call.arguments").is_none(), "arguments without the opt-in");
        assert!(call.start_time_unix_nano > 0 && call.start_time_unix_nano <= call.end_time_unix_nano);
    }
    let (resource, _) = &spans[0];
    assert_eq!(attr(resource, "service.name").as_deref(), Some("portcullis"));
    for command in ["touch approved-file", "traced-call", "forbidden-dir", "odd-trace"] {
        assert!(!collector.bytes_contain(command), "{command:?} left without the opt-in");
    }

    // Each call's policy decision is its apply_guardrail child.
    let guardrail_of = |call: &Span| {
        let children: Vec<&Span> = (spans.iter().map(|(_, s)| s))
            .filter(|s| s.name == "apply_guardrail" && s.parent_span_id == call.span_id)
            .collect();
        assert_eq!(children.len(), 1, "one apply_guardrail under {call:#?}");
        assert_eq!(children[0].trace_id, call.trace_id);
        children[0].clone()
    };
    for call in &calls {
        let guardrail = guardrail_of(call);
        let g = &guardrail.attributes;
        assert_eq!(attr(g, "gen_ai.operation.name").as_deref(), Some("apply_guardrail"));
        assert!(attr(g, "gen_ai.security.policy.id").is_some(), "{guardrail:#?}");
        assert!(attr(g, "gen_ai.security.decision.reason").is_some(), "{guardrail:#?}");
        assert!(attr(g, "portcullis.decided_by").is_some(), "{guardrail:#?}");
    }

    // The agent's trace is continued: that trace, that parent.
    let traced: Vec<&Span> = calls.iter().filter(|s| hex(&s.trace_id) == TRACE_ID).collect();
    assert_eq!(traced.len(), 1, "{calls:#?}");
    assert_eq!(hex(&traced[0].parent_span_id), PARENT_ID);
    let g = guardrail_of(traced[0]);
    assert_eq!(attr(&g.attributes, "gen_ai.security.decision.type").as_deref(), Some("allow"));
    assert_eq!(attr(&g.attributes, "portcullis.rule").as_deref(), Some("echoing"));
    assert_eq!(
        attr(&g.attributes, "gen_ai.security.policy.id"),
        Some(served.policy_file().display().to_string())
    );
    // The policy's version (a content hash of its layers), the same on every call it judged.
    let version = attr(&g.attributes, "gen_ai.security.policy.version").expect("the policy's version");
    assert!(version.len() == 32 && version.chars().all(|c| c.is_ascii_hexdigit()), "{version}");
    for call in &calls {
        let other = attr(&guardrail_of(call).attributes, "gen_ai.security.policy.version");
        assert!(other.is_none() || other.as_deref() == Some(version.as_str()), "{call:#?}");
    }
    // The others (a malformed traceparent among them) are roots of traces of their own.
    for call in calls.iter().filter(|s| hex(&s.trace_id) != TRACE_ID) {
        assert!(call.parent_span_id.is_empty(), "{call:#?}");
    }

    // The forbidden call: error.type and a deny.
    let blocked: Vec<&Span> = calls
        .iter()
        .filter(|s| attr(&s.attributes, "error.type").as_deref() == Some("execution_denied"))
        .collect();
    assert_eq!(blocked.len(), 1, "{calls:#?}");
    let g = guardrail_of(blocked[0]);
    assert_eq!(attr(&g.attributes, "gen_ai.security.decision.type").as_deref(), Some("deny"));
    assert_eq!(attr(&g.attributes, "portcullis.policy.decision").as_deref(), Some("forbidden"));

    // The approved call: the operator, and its approval as a log record.
    let approved: Vec<Span> = (calls.iter().map(guardrail_of))
        .filter(|g| attr(&g.attributes, "portcullis.operator.outcome").as_deref() == Some("approved_once"))
        .collect();
    assert_eq!(approved.len(), 1, "{calls:#?}");
    assert_eq!(attr(&approved[0].attributes, "portcullis.policy.decision").as_deref(), Some("prompt"));
    assert_eq!(attr(&approved[0].attributes, "gen_ai.security.decision.type").as_deref(), Some("allow"));
    let logs = collector.log_records();
    let resolved = logs.iter().find(|l| l.event_name == "portcullis.approval.resolved").unwrap();
    assert_eq!(attr(&resolved.attributes, "portcullis.approval.outcome").as_deref(), Some("approved_once"));
    assert_eq!(attr(&resolved.attributes, "gen_ai.tool.name").as_deref(), Some("shell"));
    assert!(resolved.time_unix_nano > 0);
}

#[test]
fn arguments_and_results_leave_only_with_the_opt_in_and_redacted() {
    node_modules();
    let port = free_port();
    let collector = Collector::start(port);
    let endpoint = format!("http://127.0.0.1:{port}/");
    let served = serve_with_args(POLICY, &[], &["--otlp", &endpoint, "--otlp-include-content"]);
    // The agents' token is one of the hub's secrets: the ledger keeps it redacted, and so does the export.
    let command = format!("echo content-visible {}", served.token.trim());
    served.agent(json!([{"op": "call", "name": "shell", "arguments": {"command": command}}]));
    collector.wait_for("the call", |c| !call_spans(c).is_empty());
    let call = call_spans(&collector).remove(0);
    let arguments = attr(&call.attributes, "gen_ai.tool.call.arguments").unwrap();
    assert!(arguments.contains("echo content-visible"), "{arguments}");
    assert!(arguments.contains("[REDACTED]"), "{arguments}");
    assert!(!collector.bytes_contain(served.token.trim()), "the token left the hub");
    let result = attr(&call.attributes, "gen_ai.tool.call.result").unwrap();
    assert!(result.contains("content-visible"), "{result}");
}
