//! The command table over HTTP, as a browser console or a script meets it through `portcullis serve`:
//! every command and stream of the table answers at `/v1/commands/NAME` or `/v1/streams/NAME` and reads
//! exactly its own arguments; only the operator's credential opens them; calls round-trip real data
//! (the ledger of a real agent's call, a policy draft); a stream sends its id, then live updates, and
//! `stop_stream` ends it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::{
    Served, agent_in_background, await_approval, http, ledger_calls_when, node_modules, serve,
};
use portcullis_api::COMMANDS;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

const POLICY: &str = r#"{
  "grants": [ { "name": "agents", "allow": ["shell"] } ],
  "commands": { "default": "forbidden",
    "rules": [ { "id": "printing", "pattern": ["echo"], "decision": "allow", "match": ["echo hi"] } ] }
}
"#;

fn route(served: &Served, name: &str, stream: bool) -> String {
    format!("{}/{}/{name}", served.api, if stream { "streams" } else { "commands" })
}

fn command(served: &Served, name: &str, args: Value) -> (u16, Value) {
    let (status, body) =
        http(&route(served, name, false), "POST", Some(&served.operator_token), &[], Some(&args.to_string()));
    (status, serde_json::from_str(&body).unwrap_or_else(|e| panic!("{name}: {e}: {body}")))
}

fn ok(served: &Served, name: &str, args: Value) -> Value {
    let (status, out) = command(served, name, args);
    assert_eq!(status, 200, "{name}: {out}");
    out
}

#[test]
fn every_command_of_the_table_answers_over_http_and_reads_only_its_own_arguments() {
    let served = serve(POLICY);
    assert!(COMMANDS.len() >= 40, "the table lists {} commands", COMMANDS.len());
    for c in COMMANDS {
        // A field no command takes: each route exists and parses its own arguments (400, never 404).
        let (status, body) = http(
            &route(&served, c.name, c.stream),
            "POST",
            Some(&served.operator_token),
            &[],
            Some(r#"{"notAnArgument": 1}"#),
        );
        assert_eq!(status, 400, "{}: {body}", c.name);
        let error: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(error["error"]["code"], "bad_request", "{}: {body}", c.name);
        assert_eq!(error["error"]["details"]["arguments"], json!(c.args), "{}", c.name);
        // The agents' credential never opens them.
        let (status, _) =
            http(&route(&served, c.name, c.stream), "POST", Some(&served.token), &[], Some("{}"));
        assert_eq!(status, 403, "{}: the agent's token opened it", c.name);
    }
    let (status, out) = command(&served, "no_such_command", json!({}));
    assert_eq!((status, out["error"]["code"].as_str()), (404, Some("command_unknown")), "{out}");
    let (status, out) = command(&served, "ledger_count", json!({"id": "one"}));
    assert_eq!((status, out["error"]["code"].as_str()), (400, Some("bad_request")), "{out}");
}

#[test]
fn calls_round_trip_the_ledger_and_the_workbench() {
    node_modules();
    let served = serve(POLICY);
    let status = ok(&served, "hub_status", json!({}));
    assert!(status.is_object(), "{status}");
    let state = ok(&served, "hub_state", json!({}));
    assert_eq!(state["state"], "running", "{state}");
    assert_eq!(state["ledger"], served.db().display().to_string());

    let report =
        served.agent(json!([{"op": "call", "name": "shell", "arguments": {"command": "echo over-http"}}]));
    assert!(report.to_string().contains("over-http"), "{report}");
    let opened = ok(&served, "open_ledger", json!({}));
    assert_eq!(opened["hub"], true, "{opened}");
    let id = opened["id"].clone();
    let started = Instant::now();
    let page = loop {
        let page = ok(
            &served,
            "ledger_calls",
            json!({"id": id, "filter": {}, "order": "newest_first", "cursor": null, "limit": 10}),
        );
        if page["calls"].as_array().is_some_and(|r| !r.is_empty())
            || started.elapsed() > Duration::from_secs(10)
        {
            break page;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let row = &page["calls"][0];
    assert_eq!(row["tool"], "shell", "{page}");
    let detail =
        ok(&served, "ledger_call", json!({"id": id, "callId": row["call_id"], "session": row["session_id"]}));
    assert!(detail.to_string().contains("echo over-http"), "{detail}");
    assert_eq!(ok(&served, "close_ledger", json!({"id": id})), json!(true));
    let (status, out) = command(&served, "ledger_count", json!({"id": id, "filter": {}}));
    assert_eq!((status, out["error"]["code"].as_str()), (400, Some("bad_argument")), "closed: {out}");

    let file = served.policy_file().display().to_string();
    let check = ok(&served, "check_policy_draft", json!({"file": file, "text": "{ \"commands\": "}));
    assert_eq!(check["problem"]["code"], "policy_syntax", "{check}");
    let layers = ok(&served, "policy_layers", json!({}));
    assert!(layers.to_string().contains("printing"), "{layers}");
}

/// A stream read as it arrives: the text so far, until `needle` shows or `within` passes.
struct EventStream {
    reader: BufReader<TcpStream>,
    seen: String,
}

impl EventStream {
    fn open(served: &Served, name: &str, args: Value) -> EventStream {
        let url = route(served, name, true);
        let rest = url.strip_prefix("http://").unwrap();
        let (host, path) = rest.split_at(rest.find('/').unwrap());
        let mut stream = TcpStream::connect(host).unwrap();
        stream.set_read_timeout(Some(Duration::from_millis(200))).unwrap();
        let body = args.to_string();
        let head = format!(
            "POST {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            served.operator_token,
            body.len()
        );
        stream.write_all(head.as_bytes()).unwrap();
        EventStream { reader: BufReader::new(stream), seen: String::new() }
    }

    /// Reads until `needle` shows (true) or the stream ends or `within` passes (false).
    fn until(&mut self, needle: &str, within: Duration) -> bool {
        let started = Instant::now();
        while !self.seen.contains(needle) && started.elapsed() < within {
            let mut line = String::new();
            match self.reader.read_line(&mut line) {
                Ok(0) => return self.seen.contains(needle),
                Ok(_) => self.seen.push_str(&line),
                Err(e)
                    if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
                Err(_) => return self.seen.contains(needle),
            }
        }
        self.seen.contains(needle)
    }

    /// Whether the server closed the stream within `within`.
    fn ends(&mut self, within: Duration) -> bool {
        let started = Instant::now();
        while started.elapsed() < within {
            let mut line = String::new();
            match self.reader.read_line(&mut line) {
                Ok(0) => return true,
                Ok(_) => self.seen.push_str(&line),
                Err(e)
                    if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
                Err(_) => return true,
            }
        }
        false
    }
}

#[test]
fn a_stream_sends_its_id_then_live_updates_and_stop_stream_ends_it() {
    node_modules();
    let served = serve(POLICY);
    let mut feed = EventStream::open(&served, "follow_events", json!({}));
    assert!(feed.until("event: stream", Duration::from_secs(10)), "{}", feed.seen);
    assert!(feed.seen.starts_with("HTTP/1.1 200"), "{}", feed.seen);
    assert!(feed.seen.to_ascii_lowercase().contains("content-type: text/event-stream"), "{}", feed.seen);
    assert!(feed.until("\"id\":", Duration::from_secs(5)), "{}", feed.seen);
    let id: u32 = {
        let at = feed.seen.find("{\"id\":").unwrap();
        let rest = &feed.seen[at..];
        serde_json::from_str::<Value>(&rest[..=rest.find('}').unwrap()]).unwrap()["id"].as_u64().unwrap()
            as u32
    };
    served.agent(json!([{"op": "call", "name": "shell", "arguments": {"command": "echo streamed"}}]));
    assert!(
        feed.until("echo streamed", Duration::from_secs(10)),
        "the call never reached the feed: {}",
        feed.seen
    );
    assert_eq!(ok(&served, "stop_stream", json!({"id": id})), json!(true));
    assert!(feed.ends(Duration::from_secs(10)), "the stream went on after stop_stream");
    assert_eq!(ok(&served, "stop_stream", json!({"id": id})), json!(false), "stopped once");

    // A stream's arguments are checked before it starts: an export of a ledger never opened.
    let (status, body) = http(
        &route(&served, "export_ledger", true),
        "POST",
        Some(&served.operator_token),
        &[],
        Some(&json!({"id": 99, "filter": {}, "format": "jsonl", "file": "/tmp/x.jsonl"}).to_string()),
    );
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("bad_argument"), "{body}");
}

/// `portcullis api NAME ARGS` on the served hub, as its operator (the same user's config folder).
fn api_cli(served: &Served, args: &[&str]) -> std::process::Output {
    crate::common::portcullis(&served.path("")).arg("api").args(args).output().unwrap()
}

#[test]
fn portcullis_api_calls_the_table_of_the_running_hub_as_its_operator() {
    node_modules();
    let served = serve(&POLICY.replace(r#""default": "forbidden""#, r#""default": "prompt""#));
    let listed = api_cli(&served, &["--list"]);
    let listed = String::from_utf8(listed.stdout).unwrap();
    assert!(listed.contains("answer_approval") && listed.contains("{id, answer}"), "{listed}");
    assert!(listed.lines().count() >= COMMANDS.len(), "{listed}");

    // An agent's call waits for an answer; another terminal answers it through the table.
    let info = json!({ "mcp_url": served.mcp_url });
    let agent = crate::common::agent_in_background(
        &info,
        &served.token,
        json!([{"op": "call", "name": "shell", "arguments": {"command": "touch answered-by-api"}}]),
    );
    let started = Instant::now();
    let (id, digest) = loop {
        let out = api_cli(&served, &["pending_approvals"]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let pending: Value = serde_json::from_slice(&out.stdout).unwrap();
        if let Some(id) = pending[0]["id"].as_u64() {
            break (id, pending[0]["arguments_sha256"].clone());
        }
        assert!(started.elapsed() < Duration::from_secs(20), "the prompt never came");
        std::thread::sleep(Duration::from_millis(100));
    };
    let answer = json!({"id": id, "answer": {"answer": "once", "arguments_sha256": digest}}).to_string();
    let out = api_cli(&served, &["answer_approval", &answer]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // The answer's receipt: the arguments it approved, who through which channel.
    let receipt: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(receipt["arguments_sha256"], digest, "{receipt}");
    assert_eq!((receipt["operator"].as_str(), receipt["channel"].as_str()), (Some("api"), Some("api")));
    let agent = agent.join().unwrap();
    assert!(agent.status.success(), "{}", String::from_utf8_lossy(&agent.stdout));
    assert!(served.project().join("answered-by-api").exists());
    // The same answer again is the hub's own error, with its code.
    let again = api_cli(&served, &["answer_approval", &answer]);
    assert!(!again.status.success());
    assert!(
        String::from_utf8_lossy(&again.stderr).contains("approval"),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );

    // A stream prints its updates as JSON lines until it ends.
    let opened: Value = serde_json::from_slice(&api_cli(&served, &["open_ledger"]).stdout).unwrap();
    let file = served.path("export.jsonl");
    let args = json!({"id": opened["id"], "filter": {}, "format": "jsonl", "file": file}).to_string();
    let out = api_cli(&served, &["export_ledger", &args]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let updates: Vec<Value> =
        String::from_utf8(out.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(updates.last().unwrap()["kind"], "done", "{updates:?}");
    assert!(std::fs::read_to_string(&file).unwrap().contains("answered-by-api"));
    let exported = std::fs::read_to_string(&file).unwrap();
    assert!(
        exported.contains(r#""operator":"api""#) || exported.contains("api: approved_once"),
        "{exported}"
    );

    let unknown = api_cli(&served, &["no_such_command"]);
    assert!(!unknown.status.success());
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("no_such_command"));
}

/// A caller with the operator token may name who answers (`x-portcullis-operator`: the desktop app
/// attached to this hub says `alice (app)`), recorded as given; a name that is not short printable text
/// is refused, and without one the channel (`api`) is recorded.
#[test]
fn the_token_s_caller_may_name_the_operator_the_ledger_records() {
    node_modules();
    let served = serve(
        POLICY.replace("\"echo\"], \"decision\": \"allow\"", "\"echo\"], \"decision\": \"prompt\"").as_str(),
    );
    let info: Value =
        serde_json::from_str(&std::fs::read_to_string(served.path("config/hub.json")).unwrap()).unwrap();
    let agent = agent_in_background(
        &info,
        &served.token,
        json!([{"op": "call", "name": "shell", "arguments": {"command": "echo named"}}]),
    );
    await_approval(&served.api, &served.operator_token, "echo named");
    let (status, pending) = http(
        &route(&served, "pending_approvals", false),
        "POST",
        Some(&served.operator_token),
        &[("x-portcullis-operator", "alice (app)")],
        Some("{}"),
    );
    assert_eq!(status, 200, "{pending}");
    let pending = serde_json::from_str::<Value>(&pending).unwrap();
    let (id, digest) = (pending[0]["id"].as_u64().unwrap(), &pending[0]["arguments_sha256"]);
    let answer = json!({"id": id, "answer": {"answer": "once", "arguments_sha256": digest}}).to_string();
    let bad = http(
        &route(&served, "answer_approval", false),
        "POST",
        Some(&served.operator_token),
        &[("x-portcullis-operator", "eve\u{7}")],
        Some(&answer),
    );
    assert_eq!(bad.0, 400, "{}", bad.1);
    let (status, body) = http(
        &route(&served, "answer_approval", false),
        "POST",
        Some(&served.operator_token),
        &[("x-portcullis-operator", "alice (app)")],
        Some(&answer),
    );
    assert_eq!(status, 200, "{body}");
    // The desktop app's name is the app's channel in the answer's receipt.
    let receipt: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        (receipt["operator"].as_str(), receipt["channel"].as_str()),
        (Some("alice (app)"), Some("app"))
    );
    assert!(agent.join().unwrap().status.success());
    let calls = ledger_calls_when(&served, 1);
    assert!(serde_json::to_string(&calls).unwrap().contains("alice (app): approved_once"), "{calls:?}");
}
