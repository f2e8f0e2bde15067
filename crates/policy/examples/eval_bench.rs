//! Policy evaluation latency, one JSON object per line on stdout.
//!
//! `cargo run --release -p portcullis-policy --example eval_bench -- [iterations]` (default 20,000).
//!
//! A policy of 1,000 generated command rules (program + subcommand prefixes, alternatives lists; allow,
//! prompt and forbidden) is loaded through `PolicyLayer::parse` + `Policy::from_layers`; then one compound
//! command is evaluated `iterations` times with `Policy::evaluate_command` (parse included), after a
//! warm-up of `iterations / 10`. Every evaluation is timed on its own and p50/p90/p99/max are reported.
//! The same is done for the parse alone (`shell::analyze`), for the same command against only the 8 rules
//! it needs (the cost of the other 992), and for a single `git status`. The result of every timed run is
//! checked: the bench exits non-zero if one differs from the expected one. Figures: docs/benchmarks.md.
#![allow(clippy::print_stdout, clippy::print_stderr)] // a bench binary reports on stdout and stderr

use portcullis_policy::shell::analyze;
use portcullis_policy::{Decision, EvalContext, Policy, PolicyLayer};
use serde_json::{Value, json};
use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

/// Pipeline, list, prefix assignment, redirections, `tee` target and a nested `bash -c`.
const COMPOUND: &str = "cd src && git status && RUST_BACKTRACE=1 cargo test -- --nocapture 2>/dev/null | tee out.log; \
                        bash -c 'npm run build' || echo failed";
const SIMPLE: &str = "git status";
const RULES: usize = 1000;

fn emit(line: Value) {
    // A closed stdout (`| head`) ends the bench quietly.
    if writeln!(std::io::stdout(), "{line}").is_err() {
        std::process::exit(0);
    }
}

fn fail(what: &str, e: impl std::fmt::Display) -> ! {
    eprintln!("eval_bench: {what}: {e}");
    std::process::exit(1);
}

const GIT: [&str; 12] = [
    "push", "pull", "fetch", "commit", "rebase", "merge", "reset", "tag", "stash", "branch", "remote",
    "clean",
];
const CARGO: [&str; 10] =
    ["build", "check", "clippy", "doc", "bench", "publish", "install", "update", "fmt", "tree"];
const TOOLS: [&str; 16] = [
    "docker",
    "kubectl",
    "make",
    "pip",
    "yarn",
    "pnpm",
    "go",
    "terraform",
    "helm",
    "gh",
    "aws",
    "gcloud",
    "rustup",
    "brew",
    "apt-get",
    "systemctl",
];

fn rule(id: String, pattern: Value, decision: &str) -> Value {
    json!({"id": id, "pattern": pattern, "decision": decision})
}

/// The rules the bench command matches (and two it must not), placed at the start, the middle and the end.
fn fixed_rules() -> [Vec<Value>; 3] {
    let start = vec![
        json!({"id": "cd", "pattern": ["cd"], "decision": "allow", "match": ["cd src"]}),
        json!({
            "id": "git-read",
            "pattern": ["git", ["status", "log", "diff", "show"]],
            "decision": "allow",
            "match": ["git status"],
            "not_match": ["git push"],
        }),
        json!({"id": "no-rm", "pattern": ["rm"], "decision": "forbidden", "justification": "no deletes"}),
        rule("no-force-push".into(), json!(["git", "push", ["--force", "-f"]]), "forbidden"),
    ];
    let middle = vec![
        json!({
            "id": "cargo-test",
            "pattern": ["cargo", ["test", "nextest"]],
            "decision": "allow",
            "match": ["cargo test --workspace"],
        }),
        rule("shells".into(), json!([["bash", "sh", "zsh", "dash"]]), "allow"),
    ];
    let end = vec![
        json!({
            "id": "npm-run-build",
            "pattern": ["npm", "run", ["build", "lint", "test"]],
            "decision": "allow",
            "match": ["npm run build"],
        }),
        rule("read-only".into(), json!([["ls", "cat", "echo", "grep", "tee", "wc", "head"]]), "allow"),
    ];
    [start, middle, end]
}

/// `count` rules: the fixed ones around a generated mix (what a policy for a large monorepo could hold:
/// `npm run <x>`, `cargo <x> --package=<y>`, `git <a|b> <remote>`, tool subcommands, alternatives lists of
/// programs, `npx <pkg>`, scripts, `kubectl <get|describe|logs> <pod>`; allow, prompt and forbidden).
fn rules(count: usize) -> Vec<Value> {
    let decision = |i: usize| match i % 7 {
        0 | 3 => "prompt",
        5 => "forbidden",
        _ => "allow",
    };
    let [start, middle, end] = fixed_rules();
    let generated = count.saturating_sub(start.len() + middle.len() + end.len());
    let mut rules = start;
    for i in 0..generated {
        let (id, pattern) = match i % 8 {
            0 => (format!("npm-run-{i}"), json!(["npm", "run", format!("script-{i}")])),
            1 => (
                format!("cargo-{i}"),
                json!(["cargo", CARGO[i % CARGO.len()], format!("--package=crate-{i}")]),
            ),
            2 => (
                format!("git-{i}"),
                json!(["git", [GIT[i % GIT.len()], GIT[(i + 5) % GIT.len()]], format!("origin-{i}")]),
            ),
            3 => (format!("tool-{i}"), json!([TOOLS[i % TOOLS.len()], format!("sub-{i}")])),
            4 => (
                format!("alt-{i}"),
                json!([[format!("bin-{i}"), format!("bin-{i}-dev"), format!("bin-{i}-ci")]]),
            ),
            5 => (format!("npx-{i}"), json!(["npx", format!("pkg-{i}")])),
            6 => (format!("task-{i}"), json!([format!("task-{i}.sh"), ["deploy", "rollback"]])),
            _ => {
                (format!("kubectl-{i}"), json!(["kubectl", ["get", "describe", "logs"], format!("pod-{i}")]))
            }
        };
        rules.push(rule(id, pattern, decision(i)));
        if i + 1 == generated / 2 {
            rules.extend(middle.iter().cloned());
        }
    }
    if generated < 2 {
        rules.extend(middle);
    }
    rules.extend(end);
    rules
}

fn load_policy(root: &Path, count: usize) -> Policy {
    let document = json!({
        "commands": {"default": "prompt", "rules": rules(count)},
        "paths": {"roots": [{"path": ".", "access": "write"}]},
    });
    let text = serde_json::to_string_pretty(&document).unwrap_or_else(|e| fail("serialize", e));
    let layer = PolicyLayer::parse("bench-policy.json", &text, root.to_path_buf())
        .unwrap_or_else(|e| fail("parse policy", e));
    let loaded = layer.document.commands.rules.len();
    if loaded != count {
        fail("policy", format!("{loaded} rules, expected {count}"));
    }
    Policy::from_layers(vec![layer]).unwrap_or_else(|e| fail("load policy", e))
}

/// Times `f` `n` times (after a warm-up of n/10); returns the sorted per-call durations.
fn time_each(n: usize, mut f: impl FnMut() -> bool) -> Vec<Duration> {
    for _ in 0..n / 10 + 1 {
        std::hint::black_box(f());
    }
    let mut samples = Vec::with_capacity(n);
    let mut wrong = 0usize;
    for _ in 0..n {
        let start = Instant::now();
        let ok = f();
        samples.push(start.elapsed());
        wrong += usize::from(!ok);
    }
    if wrong > 0 {
        fail("check", format!("{wrong} of {n} runs gave an unexpected result"));
    }
    samples.sort_unstable();
    samples
}

fn us(d: Duration) -> f64 {
    (d.as_secs_f64() * 1e6 * 100.0).round() / 100.0
}

fn percentiles(samples: &[Duration]) -> Value {
    let at = |q: f64| {
        let index = ((samples.len() as f64 * q).ceil() as usize).saturating_sub(1);
        samples.get(index.min(samples.len().saturating_sub(1))).copied().unwrap_or_default()
    };
    let total: Duration = samples.iter().sum();
    let mean = total.checked_div(samples.len().max(1) as u32).unwrap_or_default();
    json!({
        "p50_us": us(at(0.50)),
        "p90_us": us(at(0.90)),
        "p99_us": us(at(0.99)),
        "max_us": us(samples.last().copied().unwrap_or_default()),
        "mean_us": us(mean),
    })
}

fn report(bench: &str, n: usize, samples: &[Duration], extra: Value) {
    let mut line = json!({"bench": bench, "iterations": n});
    if let (Value::Object(line), Value::Object(p), Value::Object(extra)) =
        (&mut line, percentiles(samples), extra)
    {
        line.extend(p);
        line.extend(extra);
    }
    emit(line);
}

/// The rules the compound command matches, in order (one per sub-command).
const EXPECTED_RULES: [&str; 7] =
    ["cd", "git-read", "cargo-test", "read-only", "shells", "npm-run-build", "read-only"];

/// Evaluates the compound command once and exits non-zero unless it is what the bench expects.
fn check(policy: &Policy, ctx: &EvalContext) -> Value {
    let first = policy.evaluate_command(COMPOUND, ctx);
    let matched: Vec<&str> = first.matched_rules.iter().map(|r| r.id.as_str()).collect();
    if first.decision != Decision::Allow || matched != EXPECTED_RULES || first.commands.len() != 7 {
        fail(
            "unexpected evaluation",
            format!(
                "{:?} matched {matched:?} commands {:?}: {:?}",
                first.decision, first.commands, first.reasons
            ),
        );
    }
    json!({
        "decision": first.decision.as_str(),
        "commands": first.commands.len(),
        "matched_rules": matched,
        "paths": first.paths,
    })
}

fn time_compound(n: usize, policy: &Policy, ctx: &EvalContext) -> Vec<Duration> {
    time_each(n, || {
        let e = policy.evaluate_command(std::hint::black_box(COMPOUND), ctx);
        e.decision == Decision::Allow && e.matched_rules.len() == EXPECTED_RULES.len()
    })
}

fn main() {
    let n: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(20_000).max(1);
    let dir = tempfile::tempdir().unwrap_or_else(|e| fail("tempdir", e));
    let root = dir.path().canonicalize().unwrap_or_else(|e| fail("canonicalize", e));
    let cwd = root.join("src");
    std::fs::create_dir_all(&cwd).unwrap_or_else(|e| fail("mkdir", e));
    let ctx = EvalContext { cwd, home: Some(root.join("home")) };

    let start = Instant::now();
    let policy = load_policy(&root, RULES);
    let load_ms = (start.elapsed().as_secs_f64() * 1e6).round() / 1e3;
    let mut setup = json!({"bench": "setup", "rules": RULES, "load_ms": load_ms, "command": COMPOUND});
    if let (Value::Object(line), Value::Object(checked)) = (&mut setup, check(&policy, &ctx)) {
        line.extend(checked);
    }
    emit(setup);

    let samples = time_compound(n, &policy, &ctx);
    report(
        "evaluate_compound",
        n,
        &samples,
        json!({"rules": RULES, "decision": "allow", "target_p50_us": 50}),
    );

    let samples = time_each(n, || analyze(std::hint::black_box(COMPOUND)).commands.len() == 7);
    report("analyze_compound", n, &samples, json!({}));

    let small = load_policy(&root, 8);
    check(&small, &ctx);
    let samples = time_compound(n, &small, &ctx);
    report("evaluate_compound_8_rules", n, &samples, json!({"rules": 8, "decision": "allow"}));

    let samples = time_each(n, || {
        policy.evaluate_command(std::hint::black_box(SIMPLE), &ctx).decision == Decision::Allow
    });
    report("evaluate_simple", n, &samples, json!({"rules": RULES, "command": SIMPLE, "decision": "allow"}));

    // What a live shell call pays on top of its evaluation since issue 14: the sandbox profile (roots,
    // tables, hidden places: about thirty `stat`s).
    let evaluation = policy.evaluate_command(COMPOUND, &ctx);
    let support =
        portcullis_harness::SandboxSupport { landlock_abi: Some(7), namespaces: true, unavailable: None };
    let samples = time_each(n, || {
        policy.sandbox_profile(std::hint::black_box(&evaluation), &ctx, &support).is_confined()
    });
    report("sandbox_profile", n, &samples, json!({"command": COMPOUND}));
}
