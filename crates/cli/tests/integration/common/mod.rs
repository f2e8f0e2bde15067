//! Shared fixtures of the tests that run `portcullis serve` with real MCP peers: starting the hub for a
//! fresh project, the SDK client, plain HTTP to the operator API, and the ledger rows.
// Test helpers outside #[test] fns may unwrap and panic; each test file uses part of them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, dead_code)]

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};
use tempfile::TempDir;

pub fn interop_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/interop")
}

/// Runs the interop client `script` (in `tests/interop`) with a scenario: its JSON report and exit code.
fn run_interop_client(script: &str, scenario: &Value) -> (Value, i32) {
    let out = Command::new("node")
        .arg(interop_dir().join(script))
        .arg(scenario.to_string())
        .current_dir(interop_dir())
        .stderr(Stdio::inherit())
        .output()
        .expect("node runs");
    let text = String::from_utf8(out.stdout).unwrap();
    let report = serde_json::from_str(text.trim()).unwrap_or_else(|e| panic!("{e}: {text}"));
    (report, out.status.code().unwrap_or(-1))
}

pub fn node_modules() -> PathBuf {
    let dir = interop_dir().join("node_modules");
    assert!(
        dir.join("@modelcontextprotocol/sdk").is_dir(),
        "the interop peers are not installed: run `npm install --prefix tests/interop` (.ci/run does)"
    );
    dir
}

pub struct Served {
    pub dir: TempDir,
    child: Option<Child>,
    /// The hub's extra environment and `serve` arguments (a restart uses them again).
    env: Vec<(String, String)>,
    args: Vec<String>,
    pub mcp_url: String,
    pub api: String,
    /// The agents' bearer token (`config/token`).
    pub token: String,
    /// The operator's bearer token (`config/operator-token`), for the approval and session-grant API.
    pub operator_token: String,
}

impl Served {
    pub fn path(&self, sub: &str) -> PathBuf {
        std::fs::canonicalize(self.dir.path()).unwrap().join(sub)
    }

    pub fn project(&self) -> PathBuf {
        self.path("proj")
    }

    pub fn policy_file(&self) -> PathBuf {
        self.project().join(".portcullis/policy.json")
    }

    pub fn db(&self) -> PathBuf {
        self.path("ledger.db")
    }

    /// Runs the SDK client with a scenario; returns its JSON report and exit code.
    pub fn client(&self, scenario: Value) -> (Value, i32) {
        run_interop_client("client.mjs", &scenario)
    }

    /// Runs the v2 SDK client (`tests/interop/v2-client.mjs`) with a scenario: its report and exit code.
    pub fn client_v2(&self, scenario: Value) -> (Value, i32) {
        run_interop_client("v2-client.mjs", &scenario)
    }

    pub fn agent(&self, steps: Value) -> Value {
        let (report, code) = self.client(json!({ "url": self.mcp_url, "token": self.token, "steps": steps }));
        assert_eq!(code, 0, "{report}");
        report
    }

    /// Kills the hub with SIGKILL: no clean shutdown (sessions stay open, the runtime file stays).
    pub fn kill(&mut self) {
        let mut child = self.child.take().unwrap();
        child.kill().unwrap();
        child.wait().unwrap();
    }

    /// Starts the hub again on the same project, config folder and ledger (after `stop` or `kill`).
    pub fn restart(&mut self) {
        assert!(self.child.is_none(), "the hub still runs");
        let base = std::fs::canonicalize(self.dir.path()).unwrap();
        let _ = std::fs::remove_file(base.join("config/hub.json"));
        let env: Vec<(&str, &str)> = self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let args: Vec<&str> = self.args.iter().map(String::as_str).collect();
        let (child, info) = start_hub(&base, &env, &args);
        self.child = Some(child);
        self.mcp_url = info["mcp_url"].as_str().unwrap().to_owned();
        self.api = info["api_url"].as_str().unwrap().to_owned();
    }

    pub fn stop(&mut self) -> Output {
        let child = self.child.take().unwrap();
        let pid = child.id().to_string();
        Command::new("kill").args(["-TERM", &pid]).status().unwrap();
        child.wait_with_output().unwrap()
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

pub fn portcullis(dir: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_portcullis"));
    cmd.env_remove("XDG_CONFIG_HOME")
        .env_remove("XDG_DATA_HOME")
        .env("HOME", dir.join("home"))
        .env("PORTCULLIS_CONFIG_DIR", dir.join("config"))
        .env("RUST_LOG", "warn");
    cmd
}

/// `portcullis <args>` run in `base/proj` with no input: its standard output and error together.
pub fn in_project(base: &Path, args: &[&str]) -> String {
    let out =
        portcullis(base).args(args).current_dir(base.join("proj")).stdin(Stdio::null()).output().unwrap();
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

/// Starts `portcullis serve --port 0` for a fresh project and waits for its runtime file.
pub fn serve(policy: &str) -> Served {
    serve_with(policy, &[])
}

/// Like [`serve`], with extra environment variables for the hub. `{INTEROP}` in the policy is the
/// interop folder (where the npm peers are).
pub fn serve_with(policy: &str, env: &[(&str, &str)]) -> Served {
    serve_with_args(policy, env, &[])
}

/// Like [`serve_with`], with extra `portcullis serve` arguments.
pub fn serve_with_args(policy: &str, env: &[(&str, &str)], args: &[&str]) -> Served {
    let policy = policy.replace("{INTEROP}", &interop_dir().canonicalize().unwrap().display().to_string());
    let dir = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(dir.path()).unwrap();
    std::fs::create_dir_all(base.join("proj/.portcullis")).unwrap();
    std::fs::create_dir_all(base.join("home")).unwrap();
    std::fs::write(base.join("proj/.portcullis/policy.json"), policy).unwrap();
    let (child, info) = start_hub(&base, env, args);
    let token = std::fs::read_to_string(base.join("config/token")).unwrap();
    let operator_token = std::fs::read_to_string(base.join("config/operator-token")).unwrap_or_default();
    Served {
        dir,
        child: Some(child),
        env: env.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect(),
        args: args.iter().map(|a| (*a).to_owned()).collect(),
        mcp_url: info["mcp_url"].as_str().unwrap().to_owned(),
        api: info["api_url"].as_str().unwrap().to_owned(),
        token,
        operator_token,
    }
}

/// Spawns `portcullis serve --port 0` for the project in `base` (ledger `base/ledger.db`) and waits for
/// its runtime file; returns the child and the runtime file's content.
pub fn start_hub(base: &Path, env: &[(&str, &str)], args: &[&str]) -> (Child, Value) {
    let mut child = portcullis(base)
        .envs(env.iter().copied())
        .args(["serve", "--port", "0", "--approver", "none", "--shutdown-grace", "5"])
        .args(args)
        .arg("--db")
        .arg(base.join("ledger.db"))
        .current_dir(base.join("proj"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let runtime = base.join("config/hub.json");
    let started = Instant::now();
    while !runtime.exists() {
        if let Ok(Some(status)) = child.try_wait() {
            let mut said = String::new();
            if let Some(mut err) = child.stderr.take() {
                let _ = err.read_to_string(&mut said);
            }
            panic!("the hub exited before it started ({status}): {said}");
        }
        assert!(started.elapsed() < Duration::from_secs(30), "the hub did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(100));
    let info: Value = serde_json::from_str(&std::fs::read_to_string(&runtime).unwrap()).unwrap();
    (child, info)
}

/// A plain HTTP/1.1 request (the operator API needs nothing more); returns status and body.
pub fn http(
    url: &str,
    method: &str,
    token: Option<&str>,
    headers: &[(&str, &str)],
    body: Option<&str>,
) -> (u16, String) {
    let rest = url.strip_prefix("http://").unwrap();
    let (host, path) = rest.split_at(rest.find('/').unwrap());
    let mut stream = TcpStream::connect(host).unwrap();
    let mut request = format!("{method} {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n");
    if let Some(token) = token {
        request.push_str(&format!("Authorization: Bearer {token}\r\n"));
    }
    for (k, v) in headers {
        request.push_str(&format!("{k}: {v}\r\n"));
    }
    let body = body.unwrap_or("");
    if !body.is_empty() {
        request.push_str(&format!("Content-Type: application/json\r\nContent-Length: {}\r\n", body.len()));
    }
    request.push_str("\r\n");
    request.push_str(body);
    stream.write_all(request.as_bytes()).unwrap();
    let mut reader = BufReader::new(stream);
    let mut status_line = String::new();
    reader.read_line(&mut status_line).unwrap();
    let status = status_line.split_whitespace().nth(1).unwrap().parse().unwrap();
    let mut rest = String::new();
    let _ = reader.read_to_string(&mut rest);
    let body = rest.split_once("\r\n\r\n").map(|(_, b)| b.to_owned()).unwrap_or_default();
    (status, body)
}

/// An HTTP/1.1 response as a raw client sees it: status, headers (names lower-cased) and the body
/// (de-chunked).
pub struct RawResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl RawResponse {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    /// The body as JSON, or the JSON of its first SSE `data:` line (rmcp answers requests as an event
    /// stream).
    pub fn json(&self) -> Value {
        if let Ok(v) = serde_json::from_str(&self.body) {
            return v;
        }
        let data = self
            .body
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .map(str::trim)
            .find(|d| !d.is_empty())
            .unwrap_or_else(|| panic!("no JSON in the response: {}", self.body));
        serde_json::from_str(data).unwrap_or_else(|e| panic!("{e}: {data}"))
    }
}

/// One raw HTTP/1.1 request on a fresh connection, headers as given (no Host added), with generous
/// timeouts; the whole response is read (the request says `Connection: close`).
pub fn raw_http(addr: &str, request_head: &str, body: &str) -> RawResponse {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
    let mut request = request_head.to_owned();
    if !body.is_empty() {
        request.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    request.push_str("Connection: close\r\n\r\n");
    request.push_str(body);
    stream.write_all(request.as_bytes()).unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).unwrap();
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, rest) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let mut lines = head.lines();
    let status = lines.next().and_then(|l| l.split_whitespace().nth(1)).unwrap().parse().unwrap();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let chunked = headers.iter().any(|(k, v)| k == "transfer-encoding" && v.contains("chunked"));
    let body = if chunked { dechunk(rest) } else { rest.to_owned() };
    RawResponse { status, headers, body }
}

fn dechunk(mut rest: &str) -> String {
    let mut body = String::new();
    while let Some((size, after)) = rest.split_once("\r\n") {
        let Ok(size) = usize::from_str_radix(size.trim(), 16) else { break };
        if size == 0 || after.len() < size {
            break;
        }
        body.push_str(&after[..size]);
        rest = after[size..].strip_prefix("\r\n").unwrap_or(&after[size..]);
    }
    body
}

/// The ledger's calls once it holds `n` of them: a running hub commits its rows a moment after it
/// answers (group commit), so readers wait for the rows they expect (bounded).
pub fn ledger_calls_when(served: &Served, n: usize) -> Vec<Value> {
    let started = Instant::now();
    loop {
        let calls = ledger_calls(served);
        if calls.len() >= n || started.elapsed() > Duration::from_secs(15) {
            return calls;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

pub fn ledger_calls(served: &Served) -> Vec<Value> {
    let out = portcullis(served.dir.path())
        .args(["ledger", "query", "--json", "--limit", "1000", "--db"])
        .arg(served.db())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    v["calls"].as_array().unwrap().clone()
}

/// `portcullis ledger show` of a call once it finished (bounded: 15 s).
pub fn ledger_show(served: &Served, call_id: &str) -> String {
    let started = Instant::now();
    loop {
        let out = portcullis(served.dir.path())
            .args(["ledger", "show", "--db"])
            .arg(served.db())
            .arg(call_id)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        if (out.status.success() && text.contains("finished")) || started.elapsed() > Duration::from_secs(15)
        {
            return text;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

pub fn text_of(result: &Value) -> String {
    result["content"][0]["text"].as_str().unwrap_or_default().to_owned()
}

/// `portcullis serve --port 0` for the project `base/proj` on a pseudo-terminal (util-linux `script`),
/// as an operator runs it, with `envs` set and `unset` removed; returns the child (stdin piped, the
/// terminal's output on stdout) and the hub's runtime file once it is written.
pub fn serve_on_terminal(base: &Path, envs: &[(&str, &str)], unset: &[&str]) -> (std::process::Child, Value) {
    let mut command = Command::new("script");
    command
        .args(["-qec", r#""$PORTCULLIS_BIN" serve --port 0 --db "$DB""#, "/dev/null"])
        .current_dir(base.join("proj"))
        .env("SHELL", "/bin/sh")
        .env("PORTCULLIS_BIN", env!("CARGO_BIN_EXE_portcullis"))
        .env("DB", base.join("ledger.db"))
        .env("HOME", base.join("home"))
        .env("PORTCULLIS_CONFIG_DIR", base.join("config"))
        .env_remove("XDG_CONFIG_HOME")
        .envs(envs.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    for name in unset {
        command.env_remove(name);
    }
    let child = command.spawn().expect("util-linux `script` gives serve a terminal");
    let runtime = base.join("config/hub.json");
    let started = Instant::now();
    while !runtime.exists() {
        assert!(started.elapsed() < Duration::from_secs(30), "the hub did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
    let info: Value = serde_json::from_str(&std::fs::read_to_string(&runtime).unwrap()).unwrap();
    (child, info)
}

/// A child process killed (and reaped) when the test lets go of it.
pub struct Killed(pub Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The reference "everything" server over Streamable HTTP on a free port, and its URL.
pub fn everything_over_http() -> (Killed, String) {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let child = Command::new("node")
        .arg(interop_dir().join("node_modules/@modelcontextprotocol/server-everything/dist/index.js"))
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(started.elapsed() < Duration::from_secs(20), "server-everything did not listen");
        std::thread::sleep(Duration::from_millis(50));
    }
    (Killed(child), format!("http://127.0.0.1:{port}/mcp"))
}

/// Waits until the hub's health says each of `servers` is ready.
pub fn wait_ready(served: &Served, servers: &[&str]) {
    let started = Instant::now();
    loop {
        let (_, body) =
            crate::common::http(&format!("{}/health", served.api), "GET", Some(&served.token), &[], None);
        let health: Value = serde_json::from_str(&body).unwrap_or_default();
        let ready = |id: &str| {
            health["servers"]
                .as_array()
                .is_some_and(|s| s.iter().any(|s| s["id"] == id && s["state"] == "ready"))
        };
        if servers.iter().all(|id| ready(id)) {
            return;
        }
        assert!(started.elapsed() < Duration::from_secs(30), "servers not ready: {body}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The SDK client (`tests/interop/client.mjs`) as the agent, on a thread: `steps` against the hub whose
/// runtime file is `info`, with the agents' token; join it for the client's output.
pub fn agent_in_background(info: &Value, token: &str, steps: Value) -> std::thread::JoinHandle<Output> {
    let scenario = json!({"url": info["mcp_url"], "token": token, "steps": steps});
    std::thread::spawn(move || {
        Command::new("node").arg(interop_dir().join("client.mjs")).arg(scenario.to_string()).output().unwrap()
    })
}

/// Waits (20 s at most) until the hub's pending approvals, read with the operator's token, mention
/// `needle`.
pub fn await_approval(api: &str, operator_token: &str, needle: &str) {
    let started = Instant::now();
    loop {
        let (_, body) = http(&format!("{api}/approvals"), "GET", Some(operator_token), &[], None);
        if body.contains(needle) {
            return;
        }
        assert!(started.elapsed() < Duration::from_secs(20), "the prompt for {needle} never came: {body}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The approvals waiting on `served`, as `GET /v1/approvals` lists them.
pub fn pending(served: &Served) -> Vec<Value> {
    let (status, body) =
        http(&format!("{}/approvals", served.api), "GET", Some(&served.operator_token), &[], None);
    assert_eq!(status, 200, "{body}");
    serde_json::from_str::<Value>(&body).unwrap()["approvals"].as_array().unwrap().clone()
}

/// The first approval to wait on `served` (within 30 s).
pub fn first_pending(served: &Served) -> Value {
    let started = Instant::now();
    loop {
        if let Some(p) = pending(served).into_iter().next() {
            return p;
        }
        assert!(started.elapsed() < Duration::from_secs(30), "no approval came");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The decision `portcullis hook claude` (without a hub, ledger `base/hook.db`) gives Claude Code's `tool`
/// called with `tool_input` in `base/proj`: allow, deny, ask, or `pass` (no decision).
pub fn hook_decision(base: &Path, tool: &str, tool_input: Value) -> String {
    let input = json!({
        "session_id": "judge", "transcript_path": "/tmp/t.jsonl", "cwd": base.join("proj"),
        "permission_mode": "default", "hook_event_name": "PreToolUse", "tool_name": tool, "tool_input": tool_input,
    });
    let mut child = portcullis(base)
        .args(["hook", "claude", "--db"])
        .arg(base.join("hook.db"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input.to_string().as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    v["hookSpecificOutput"]["permissionDecision"].as_str().unwrap_or("pass").to_owned()
}

/// Answers the first pending approval (`once`, `deny`...) through the operator API as soon as one
/// appears (within 60 s), as an operator would; the approval answered.
pub fn answer_first_pending(api: &str, token: &str, answer: &str) -> Value {
    let started = Instant::now();
    loop {
        let (_, body) = http(&format!("{api}/approvals"), "GET", Some(token), &[], None);
        let v: Value = serde_json::from_str(&body).unwrap();
        if let Some(p) = v["approvals"].as_array().unwrap().first() {
            let id = p["id"].as_u64().unwrap();
            let body =
                serde_json::json!({"answer": answer, "arguments_sha256": p["arguments_sha256"]}).to_string();
            let (status, said) =
                http(&format!("{api}/approvals/{id}"), "POST", Some(token), &[], Some(&body));
            assert_eq!(status, 200, "{said}");
            return p.clone();
        }
        assert!(started.elapsed() < Duration::from_secs(60), "no approval appeared");
        std::thread::sleep(Duration::from_millis(50));
    }
}
