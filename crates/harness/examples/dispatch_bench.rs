//! Dispatch throughput of the harness pipeline, one JSON object per line on stdout.
//!
//! `cargo run --release -p portcullis-harness --example dispatch_bench -- 100000 [--runs 5] [variant ...]`
//!
//! Calls are built before the clock starts, so the figures are the pipeline's own cost: the loop awaits
//! `Dispatcher::dispatch` once per call on a tokio runtime. Each variant is warmed up (n/10 calls), then
//! timed `runs` times over `n` calls; a line gives the min, median and max µs per call of those runs.
//! Naming variants runs only those (a profiler then sees one code path).
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

/// The allocator the shipped binaries use (`portcullis`, the app), so the figures are theirs.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

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

fn micros3(d: Duration, n: usize) -> Value {
    json!((d.as_secs_f64() * 1e9 / n as f64).round() / 1000.0)
}

/// One line per variant: the runs' min, median and max µs per call (`us_per_call` is the median).
fn report(variant: &str, n: usize, runs: &[Duration], extra: Value) {
    let mut sorted = runs.to_vec();
    sorted.sort();
    let (min, median, max) = (sorted[0], sorted[sorted.len() / 2], sorted[sorted.len() - 1]);
    // Field order as documented: variant, calls, runs, us_per_call (median), min, max, calls_per_s, extras.
    let mut line = format!(
        "{{\"variant\":{},\"calls\":{n},\"runs\":{},\"us_per_call\":{},\"us_min\":{},\"us_max\":{},\"calls_per_s\":{}",
        json!(variant),
        runs.len(),
        micros3(median, n),
        micros3(min, n),
        micros3(max, n),
        json!((n as f64 / median.as_secs_f64()).round() as u64),
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

/// Times `runs` rounds of `n` sequential dispatches (after one warm-up of n/10) and checks every outcome.
async fn time_sequential(
    dispatcher: &Dispatcher,
    n: usize,
    runs: usize,
    name: &str,
    arguments: &Value,
    expect: &str,
) -> Vec<Duration> {
    let run = run_context();
    for call in calls(n / 10 + 1, name, arguments) {
        std::hint::black_box(dispatcher.dispatch(call, &run).await);
    }
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs {
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
        times.push(start.elapsed());
        if wrong > 0 {
            eprintln!("bench: {wrong} calls did not end as {expect}");
            std::process::exit(1);
        }
    }
    times
}

/// One sequential variant: what the dispatcher has and which call it gets.
struct Variant {
    name: &'static str,
    schema: bool,
    redactor: bool,
    subscriber: bool,
    memory_ledger: bool,
    tool: &'static str,
    arguments: fn() -> Value,
    expect: &'static str,
}

fn text_arguments() -> Value {
    json!({"text": "hello from the bench, a short line of text"})
}

fn wrong_arguments() -> Value {
    json!({"text": 42})
}

const fn variant(name: &'static str, tool: &'static str, expect: &'static str) -> Variant {
    Variant {
        name,
        schema: true,
        redactor: false,
        subscriber: false,
        memory_ledger: false,
        tool,
        arguments: text_arguments,
        expect,
    }
}

/// The sequential variants, in report order. A blocked variant has the configuration of the allowed
/// variant it is listed after, so the two compare like for like.
const VARIANTS: &[Variant] = &[
    Variant { schema: false, ..variant("allow_filter_only", "echo", "finished") },
    variant("json_schema", "echo", "finished"),
    variant("blocked_tool_denied", "forbidden_echo", "tool_denied"),
    variant("blocked_unknown_tool", "no_such_tool", "unknown_tool"),
    Variant {
        arguments: wrong_arguments,
        ..variant("blocked_validation_failed", "echo", "validation_failed")
    },
    Variant { redactor: true, ..variant("json_schema+redactor", "echo", "finished") },
    Variant { redactor: true, ..variant("blocked_tool_denied+redactor", "forbidden_echo", "tool_denied") },
    Variant { subscriber: true, ..variant("json_schema+subscriber", "echo", "finished") },
    Variant {
        subscriber: true,
        redactor: true,
        ..variant("json_schema+subscriber+redactor", "echo", "finished")
    },
    Variant {
        subscriber: true,
        redactor: true,
        memory_ledger: true,
        ..variant("json_schema+subscriber+redactor+memory_ledger", "echo", "finished")
    },
];

const SECRET: &str = "sk-bench-0123456789abcdefghijklmnop";

async fn run_variant(v: &Variant, n: usize, runs: usize) {
    let redactor = if v.redactor { Redactor::builder().secret(SECRET).build() } else { Redactor::disabled() };
    let mut builder = Dispatcher::builder(registry(v.schema)).redactor(redactor);
    let bus = EventBus::new(65_536);
    let received = Arc::new(AtomicU64::new(0));
    let mut drain = None;
    if v.subscriber {
        builder = builder.events(bus.clone());
        let mut subscription = bus.subscribe();
        let counter = received.clone();
        drain = Some(tokio::spawn(async move {
            while let Some(delivery) = subscription.recv().await {
                if let EventDelivery::Event(_) = delivery {
                    counter.fetch_add(1, Ordering::Relaxed);
                }
            }
        }));
    }
    let ledger = Arc::new(MemoryLedger::new());
    if v.memory_ledger {
        builder = builder.ledger(ledger.clone());
    }
    let d = builder.build();
    let times = time_sequential(&d, n, runs, v.tool, &(v.arguments)(), v.expect).await;
    let mut extra = serde_json::Map::new();
    if v.schema {
        extra.insert("schema_compiles".into(), json!(d.schema_validator().compile_count()));
    }
    if v.subscriber {
        tokio::time::sleep(Duration::from_millis(50)).await;
        extra.insert("events_received".into(), json!(received.load(Ordering::Relaxed)));
        extra.insert("events_missed".into(), json!(bus.missed_total()));
    }
    if v.memory_ledger {
        extra.insert("records".into(), json!(ledger.len()));
    }
    report(v.name, n, &times, Value::Object(extra));
    drop(d);
    if let Some(drain) = drain {
        drain.abort();
    }
}

async fn run_batches(n_runs: usize) {
    let batch_calls = 1000;
    for concurrency in [1usize, 8] {
        let d = Dispatcher::builder(registry(true)).build();
        let run = run_context();
        let mut times = Vec::with_capacity(n_runs);
        let mut finished = 0;
        for _ in 0..n_runs {
            let batch = calls(batch_calls, "sleep", &json!({}));
            let start = Instant::now();
            let results = d.dispatch_batch(batch, &run, BatchOptions::concurrency(concurrency)).await;
            times.push(start.elapsed());
            finished = results.iter().filter(|r| r.is_finished()).count();
        }
        report(
            &format!("batch_sleep_1ms_concurrency_{concurrency}"),
            batch_calls,
            &times,
            json!({"finished": finished}),
        );
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let mut n = 100_000usize;
    let mut runs = 1usize;
    let mut only: Vec<String> = Vec::new();
    while let Some(arg) = args.next() {
        if arg == "--runs" {
            runs = args.next().and_then(|r| r.parse().ok()).filter(|r| *r > 0).unwrap_or(1);
        } else if let Ok(count) = arg.parse() {
            n = count;
        } else {
            only.push(arg);
        }
    }
    let known = |name: &str| VARIANTS.iter().any(|v| v.name == name) || name == "batch";
    if let Some(unknown) = only.iter().find(|name| !known(name)) {
        let names: Vec<&str> = VARIANTS.iter().map(|v| v.name).collect();
        eprintln!("bench: no variant {unknown:?}; variants: {}, batch", names.join(", "));
        std::process::exit(2);
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("bench: cannot start tokio: {e}");
            std::process::exit(1);
        }
    };
    runtime.block_on(async move {
        for v in VARIANTS.iter().filter(|v| only.is_empty() || only.iter().any(|o| o == v.name)) {
            run_variant(v, n, runs).await;
        }
        if only.is_empty() || only.iter().any(|o| o == "batch") {
            run_batches(runs).await;
        }
    });
}
