//! The official MCP conformance suite (`tests/conformance`: `@modelcontextprotocol/conformance` 0.1.16 on
//! a node 22 from the npm registry) against `portcullis serve`:
//! - in front of the conformance upstream (single-upstream mode, the server's own names): every scenario
//!   that passes against the upstream directly passes through Portcullis, and the relayed reads,
//!   prompts, sampling and elicitation are in the ledger as calls with who decided;
//! - the plain gateway (no upstream): its protocol scenarios pass.
//!
//! The suite's CLI sends no headers, so `auth-proxy.mjs` adds the agents' bearer token and passes
//! everything else (Host and Origin too) unchanged; the proxy's origin is allowed with `--allow-origin`.
// Test helpers outside #[test] fns may unwrap and panic.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::{Killed, Served, ledger_calls_when, serve_with_args, wait_ready};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// Scenarios allowed to do worse through Portcullis than directly, with why (docs/architecture.md lists
/// them too). None today.
const EXCEPTIONS: [(&str, &str); 0] = [];

/// What the plain gateway must pass: the protocol, not the conformance server's own tools.
const PROTOCOL_SCENARIOS: [&str; 9] = [
    "server-initialize",
    "ping",
    "tools-list",
    "tools-call-error",
    "logging-set-level",
    "resources-list",
    "prompts-list",
    "server-sse-multiple-streams",
    "dns-rebinding-protection",
];

fn conformance_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/conformance");
    assert!(
        dir.join("node_modules/.bin/node").exists()
            && dir.join("node_modules/@modelcontextprotocol/conformance").is_dir(),
        "the conformance suite is not installed: run `npm ci --prefix tests/conformance` (.ci/run does)"
    );
    dir
}

/// Starts a node script that prints `listening <url>` when ready; returns it and the URL.
fn start_listening(script: &str, args: &[&str], env: &[(&str, &Path)]) -> (Killed, String) {
    let dir = conformance_dir();
    let mut child = Command::new(dir.join("node_modules/.bin/node"))
        .arg(dir.join(script))
        .args(args)
        .envs(env.iter().map(|(k, v)| (*k, v.as_os_str())))
        .current_dir(&dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    let line = rx.recv_timeout(Duration::from_secs(20)).unwrap_or_default();
    let url =
        line.trim().strip_prefix("listening ").unwrap_or_else(|| panic!("{script} did not start: {line:?}"));
    (Killed(child), url.to_owned())
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// The suite's summary (`scenario → pass|warn|fail|error`) of `scenarios` (none: all) against `url`.
fn run_suite(url: &str, out: &Path, scenarios: &[&str]) -> BTreeMap<String, String> {
    let status = Command::new("bash")
        .arg(conformance_dir().join("run.sh"))
        .arg(url)
        .arg(out)
        .args(scenarios)
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "the conformance suite could not run against {url}");
    let summary = std::fs::read_to_string(out.join("summary.json")).unwrap();
    serde_json::from_str(&summary).unwrap()
}

fn rank(status: &str) -> u8 {
    match status {
        "pass" => 0,
        "warn" => 1,
        "fail" => 2,
        _ => 3,
    }
}

/// The gateway behind the token-adding proxy: the hub (with `policy` and `args`) and the proxy's URL.
fn gateway_behind_proxy(policy: &str, args: &[&str]) -> (Served, Killed, String) {
    let port = free_port();
    let origin = format!("http://127.0.0.1:{port}");
    let mut all = vec!["--allow-origin", origin.as_str()];
    all.extend_from_slice(args);
    let served = serve_with_args(policy, &[], &all);
    let target = served.mcp_url.trim_end_matches("/mcp").to_owned();
    let token_file = served.path("config/token");
    let port = port.to_string();
    let (proxy, proxy_url) = start_listening(
        "auth-proxy.mjs",
        &["--port", &port, "--target", &target, "--token-file", token_file.to_str().unwrap()],
        &[],
    );
    (served, proxy, format!("{proxy_url}/mcp"))
}

#[test]
fn every_scenario_passing_against_the_upstream_passes_through_the_gateway() {
    let work = tempfile::tempdir().unwrap();
    let log = work.path().join("upstream.jsonl");
    let (_upstream, upstream_url) =
        start_listening("upstream-server.mjs", &["--port", "0"], &[("CONFORMANCE_UPSTREAM_LOG", &log)]);
    let direct = run_suite(&upstream_url, &work.path().join("direct"), &[]);
    let passing = direct.values().filter(|s| rank(s) <= 1).count();
    assert!(passing >= 30, "the upstream alone should pass the suite: {direct:?}");

    let policy = format!(r#"{{ "servers": [ {{ "id": "conf", "url": "{upstream_url}" }} ] }}"#);
    let (served, _proxy, url) = gateway_behind_proxy(&policy, &["--single-upstream", "conf"]);
    wait_ready(&served, &["conf"]);
    let through = run_suite(&url, &work.path().join("through"), &[]);
    let mut worse = Vec::new();
    for (scenario, status) in &direct {
        let now = through.get(scenario).map_or("missing", String::as_str);
        if rank(now) > rank(status) && !EXCEPTIONS.iter().any(|(s, _)| s == scenario) {
            worse.push(format!("{scenario}: {status} directly, {now} through Portcullis"));
        }
    }
    assert!(
        worse.is_empty(),
        "worse through the gateway:\n{}\n(summaries in {:?})",
        worse.join("\n"),
        work.keep()
    );

    // The relayed methods are calls in the ledger, each with who decided.
    let calls = ledger_calls_when(&served, 40);
    for tool in [
        "mcp:conf:resources/read",
        "mcp:conf:prompts/get",
        "mcp:conf:sampling/createMessage",
        "mcp:conf:elicitation/create",
        "mcp:conf:test_simple_text",
    ] {
        let call =
            calls.iter().find(|c| c["tool"] == tool).unwrap_or_else(|| panic!("no {tool} in the ledger"));
        assert!(!call["decided_by"].is_null(), "{call}");
    }
}

#[test]
fn the_plain_gateway_passes_the_protocol_scenarios() {
    let work = tempfile::tempdir().unwrap();
    let (_served, _proxy, url) = gateway_behind_proxy("{}", &[]);
    let summary = run_suite(&url, work.path(), &PROTOCOL_SCENARIOS);
    let failed: Vec<String> =
        summary.iter().filter(|(_, s)| s.as_str() != "pass").map(|(k, s)| format!("{k}: {s}")).collect();
    assert!(failed.is_empty(), "{failed:?}");
    assert_eq!(summary.len(), PROTOCOL_SCENARIOS.len(), "{summary:?}");
}
