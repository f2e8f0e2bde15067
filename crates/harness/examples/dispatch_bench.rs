//! Dispatch throughput of the harness pipeline, one JSON object per line on stdout.
//!
//! `cargo run --release -p portcullis-harness --example dispatch_bench -- 100000`
//!
//! Calls are built before the clock starts, so the figures are the pipeline's own cost: the loop awaits
//! `Dispatcher::dispatch` once per call on a tokio runtime.
#![allow(clippy::print_stdout, clippy::print_stderr)] // a bench binary reports on stdout and stderr

use async_trait::async_trait;
use portcullis_harness::{
    BatchOptions, CallOutcome, Dispatcher, EventBus, EventDelivery, GrantScope, Grants, MemoryLedger,
    Redactor, RunContext, Tool, ToolCall, ToolError, ToolInvocation, ToolOutput, ToolRegistry, ToolSpec,
};
use serde_json::{Value, json};
use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

struct Echo(ToolSpec);

#[async_trait]
impl Tool for Echo {
    fn spec(&self) -> &ToolSpec {
        &self.0
    }
    async fn execute(&self, invocation: ToolInvocation) -> Result<ToolOutput, ToolError> {
        let text = invocation.arguments.get("text").and_then(Value::as_str).unwrap_or_default();
        Ok(ToolOutput::text(text))
    }
}

struct Sleep(ToolSpec);

#[async_trait]
impl Tool for Sleep {
    fn spec(&self) -> &ToolSpec {
        &self.0
    }
    async fn execute(&self, _: ToolInvocation) -> Result<ToolOutput, ToolError> {
        tokio::time::sleep(Duration::from_millis(1)).await;
        Ok(ToolOutput::text("slept"))
    }
}

fn echo_schema() -> Value {
    json!({"type":"object","properties":{"text":{"type":"string","maxLength":1000}},"required":["text"]})
}

fn registry(with_schema: bool) -> ToolRegistry {
    let mut spec = ToolSpec::new("echo", "Echo the text back");
    if with_schema {
        spec = spec.with_parameters(echo_schema());
    }
    let mut r = ToolRegistry::new();
    let _ = r.register(Arc::new(Echo(spec)));
    let _ = r.register(Arc::new(Echo(ToolSpec::new("forbidden_echo", "Never granted"))));
    let _ = r.register(Arc::new(Sleep(ToolSpec::new("sleep", "Sleep 1 ms"))));
    r
}

fn run_context() -> RunContext {
    RunContext::new("bench-session", "bench-run")
        .with_grants(Grants::new(vec![GrantScope::new("bench").allow(["echo", "sleep", "search_tools"])]))
}

fn calls(n: usize, name: &str, arguments: &Value) -> Vec<ToolCall> {
    (0..n).map(|i| ToolCall::new(format!("call-{i}"), name, arguments.clone())).collect()
}

fn report(variant: &str, n: usize, elapsed: Duration, extra: Value) {
    let us = elapsed.as_secs_f64() * 1e6 / n as f64;
    // Field order as documented: variant, calls, us_per_call, calls_per_s, then extras.
    let mut line = format!(
        "{{\"variant\":{},\"calls\":{n},\"us_per_call\":{},\"calls_per_s\":{}",
        json!(variant),
        json!((us * 1000.0).round() / 1000.0),
        json!((n as f64 / elapsed.as_secs_f64()).round() as u64),
    );
    if let Value::Object(extra) = extra {
        for (k, v) in extra {
            line.push_str(&format!(",{}:{v}", json!(k)));
        }
    }
    line.push('}');
    // A closed stdout (`| head`) ends the bench quietly.
    if writeln!(std::io::stdout(), "{line}").is_err() {
        std::process::exit(0);
    }
}

/// Times `n` sequential dispatches (after a warm-up of n/10) and checks every outcome.
async fn time_sequential(
    dispatcher: &Dispatcher,
    n: usize,
    name: &str,
    arguments: &Value,
    expect: &str,
) -> Duration {
    let run = run_context();
    for call in calls(n / 10 + 1, name, arguments) {
        std::hint::black_box(dispatcher.dispatch(call, &run).await);
    }
    let batch = calls(n, name, arguments);
    let mut wrong = 0usize;
    let start = Instant::now();
    for call in batch {
        let result = dispatcher.dispatch(call, &run).await;
        let status = match &result.outcome {
            CallOutcome::Finished { .. } => "finished",
            CallOutcome::Error { .. } => "error",
            CallOutcome::Blocked { reason, .. } => reason.as_str(),
        };
        wrong += usize::from(status != expect);
        std::hint::black_box(result);
    }
    let elapsed = start.elapsed();
    if wrong > 0 {
        eprintln!("bench: {wrong} calls did not end as {expect}");
        std::process::exit(1);
    }
    elapsed
}

fn main() {
    let n: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(100_000);
    let runtime = match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("bench: cannot start tokio: {e}");
            std::process::exit(1);
        }
    };
    runtime.block_on(async move {
        let args = json!({"text": "hello from the bench, a short line of text"});
        let secret = "sk-bench-0123456789abcdefghijklmnop";

        let d = Dispatcher::builder(registry(false)).redactor(Redactor::disabled()).build();
        let t = time_sequential(&d, n, "echo", &args, "finished").await;
        report("allow_filter_only", n, t, json!({}));

        let d = Dispatcher::builder(registry(true)).redactor(Redactor::disabled()).build();
        let t = time_sequential(&d, n, "echo", &args, "finished").await;
        report("json_schema", n, t, json!({"schema_compiles": d.schema_validator().compile_count()}));

        let bus = EventBus::new(65_536);
        let d =
            Dispatcher::builder(registry(true)).redactor(Redactor::disabled()).events(bus.clone()).build();
        let received = Arc::new(AtomicU64::new(0));
        let mut subscription = bus.subscribe();
        let counter = received.clone();
        let drain = tokio::spawn(async move {
            while let Some(delivery) = subscription.recv().await {
                if let EventDelivery::Event(_) = delivery {
                    counter.fetch_add(1, Ordering::Relaxed);
                }
            }
        });
        let t = time_sequential(&d, n, "echo", &args, "finished").await;
        tokio::time::sleep(Duration::from_millis(50)).await;
        report(
            "json_schema+subscriber",
            n,
            t,
            json!({"events_received": received.load(Ordering::Relaxed), "events_missed": bus.missed_total()}),
        );
        drop(d);
        drop(bus);
        drain.abort();

        let redactor = Redactor::builder().secret(secret).build();
        let bus = EventBus::new(65_536);
        let mut subscription = bus.subscribe();
        let drain = tokio::spawn(async move { while subscription.recv().await.is_some() {} });
        let d = Dispatcher::builder(registry(true)).redactor(redactor.clone()).events(bus.clone()).build();
        let t = time_sequential(&d, n, "echo", &args, "finished").await;
        report("json_schema+subscriber+redactor", n, t, json!({"secrets": 1}));

        let ledger = Arc::new(MemoryLedger::new());
        let d = Dispatcher::builder(registry(true))
            .redactor(redactor.clone())
            .events(bus.clone())
            .ledger(ledger.clone())
            .build();
        let t = time_sequential(&d, n, "echo", &args, "finished").await;
        report("json_schema+subscriber+redactor+memory_ledger", n, t, json!({"records": ledger.len()}));
        drop(d);
        drop(bus);
        drain.abort();

        let d = Dispatcher::builder(registry(true)).redactor(redactor.clone()).build();
        let t = time_sequential(&d, n, "forbidden_echo", &args, "tool_denied").await;
        report("blocked_tool_denied", n, t, json!({}));
        let bad = json!({"text": 42});
        let t = time_sequential(&d, n, "echo", &bad, "validation_failed").await;
        report("blocked_validation_failed", n, t, json!({}));

        let batch_calls = 1000;
        for concurrency in [1usize, 8] {
            let d = Dispatcher::builder(registry(true)).build();
            let run = run_context();
            let batch = calls(batch_calls, "sleep", &json!({}));
            let start = Instant::now();
            let results = d.dispatch_batch(batch, &run, BatchOptions::concurrency(concurrency)).await;
            let elapsed = start.elapsed();
            let finished = results.iter().filter(|r| r.is_finished()).count();
            report(
                &format!("batch_sleep_1ms_concurrency_{concurrency}"),
                batch_calls,
                elapsed,
                json!({"finished": finished, "wall_ms": elapsed.as_millis()}),
            );
        }
    });
}
