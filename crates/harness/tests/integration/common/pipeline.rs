//! The dispatch pipeline's test fixture: a probe tool (counts runs, keeps the actions it was given, reports
//! progress, fails, panics or hangs on request) registered as three tools, a memory ledger, a redactor
//! that knows one secret, and a run whose grants deny one of the tools.

use async_trait::async_trait;
use portcullis_harness::CallErrorCode;
use portcullis_harness::*;
use serde_json::{Value, json};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub const SECRET: &str = "sk-test-SECRET-0123456789abcdefghij";

/// A tool that counts executions, reports progress when asked, and fails/panics on request.
struct Probe {
    spec: ToolSpec,
    runs: Arc<AtomicUsize>,
    seen_actions: Arc<Mutex<Vec<ExecutionAction>>>,
}

#[async_trait]
impl Tool for Probe {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn describe_action(&self, arguments: &Value, _: &CallContext) -> Result<ExecutionAction, ToolError> {
        match arguments.get("path").and_then(Value::as_str) {
            Some("") => Err(ToolError::new(CallErrorCode::Unknown("bad_path".into()), "empty path")),
            Some(p) => Ok(ExecutionAction::new(ActionKind::Write, "write").with_paths(vec![p.into()])),
            None => Ok(ExecutionAction::none()),
        }
    }

    async fn execute(&self, invocation: ToolInvocation) -> Result<ToolOutput, ToolError> {
        self.runs.fetch_add(1, Ordering::SeqCst);
        self.seen_actions.lock().unwrap().push(invocation.action.clone());
        let text = invocation.arguments.get("text").and_then(Value::as_str).unwrap_or_default().to_owned();
        match text.as_str() {
            "fail" => return Err(ToolError::failed(format!("boom with {SECRET}"))),
            "panic" => panic!("tool exploded"),
            // Settles only after waiting once (the pipeline's path for a tool pending at its first poll).
            "later" => tokio::task::yield_now().await,
            "panic_later" => {
                tokio::task::yield_now().await;
                panic!("tool exploded later")
            }
            "progress" => {
                invocation.progress.report(json!({"step": 1, "note": SECRET})).await;
                invocation.progress.report(json!({"step": 2})).await;
            }
            "hang" => {
                invocation.cancel.cancelled().await;
                return Err(ToolError::new(CallErrorCode::Cancelled, "stopped on cancel"));
            }
            "ignore_cancel" => tokio::time::sleep(Duration::from_secs(30)).await,
            _ => {}
        }
        Ok(ToolOutput::text(format!("echo: {text}")))
    }
}

pub struct Fixture {
    pub runs: Arc<AtomicUsize>,
    pub seen_actions: Arc<Mutex<Vec<ExecutionAction>>>,
    pub ledger: Arc<MemoryLedger>,
}

fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {"text": {"type": "string", "maxLength": 1000}, "path": {"type": "string"}},
        "required": ["text"],
        "additionalProperties": false
    })
}

impl Fixture {
    pub fn new() -> Self {
        Fixture {
            runs: Arc::new(AtomicUsize::new(0)),
            seen_actions: Arc::new(Mutex::new(Vec::new())),
            ledger: Arc::new(MemoryLedger::new()),
        }
    }

    pub fn registry(&self) -> ToolRegistry {
        let mut r = ToolRegistry::new();
        for (name, exclusive) in [("echo", false), ("write_file", false), ("secret_tool", true)] {
            let spec = ToolSpec::new(name, format!("The {name} tool"))
                .with_parameters(schema())
                .exclusive(exclusive);
            r.register(Arc::new(Probe {
                spec,
                runs: self.runs.clone(),
                seen_actions: self.seen_actions.clone(),
            }))
            .unwrap();
        }
        r
    }

    pub fn builder(&self) -> DispatcherBuilder {
        Dispatcher::builder(self.registry())
            .ledger(self.ledger.clone())
            .redactor(Redactor::builder().secret(SECRET).build())
    }

    pub fn runs(&self) -> usize {
        self.runs.load(Ordering::SeqCst)
    }
}

pub fn run() -> RunContext {
    RunContext::new("session-1", "run-1").with_grants(Grants::new(vec![
        GrantScope::new("user").allow(["echo", "write_file", "secret_tool"]).deny(["secret_tool"]),
    ]))
}

pub fn call(id: &str, name: &str, args: Value) -> ToolCall {
    ToolCall::new(id, name, args)
}

pub fn event_kinds(sub: &mut EventSubscription) -> Vec<(String, ToolEventKind)> {
    sub.drain()
        .into_iter()
        .map(|d| match d {
            EventDelivery::Event(e) => (e.call.call_id.to_string(), e.kind()),
            EventDelivery::Lagged { missed } => panic!("lagged {missed}"),
        })
        .collect()
}
