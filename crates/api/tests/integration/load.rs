//! The hub under load, in process: 32 rmcp clients, each its own Streamable HTTP session with the bearer
//! token, make 500 `read` calls each (16,000 calls) at the same time. Every call reads one line of its
//! client's own file, so every answer is checked for being exactly the line that was asked for (no mixed
//! up responses). Then the ledger must hold exactly what happened: one session per client, one `started`
//! and one `finished` record per call, no call id twice in a session, each session's calls on its own
//! client's file, and `check()` healthy. No sleeps: the test waits on events, never on time.
// Helpers outside #[test] fns unwrap and panic; clippy.toml's test allowance does not reach them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use portcullis_api::serve;
use portcullis_hub::{Hub, HubConfig, HubEvent};
use portcullis_ledger::{CallFilter, CallStatus, LedgerReader, StoredKind};
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation, JsonObject, ProtocolVersion,
};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientCacheConfig, ServiceExt};
use serde_json::{Value, json};
use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::time::{Duration, Instant};

const CLIENTS: usize = 32;
const CALLS_PER_CLIENT: usize = 500;
/// Lines in each client's file; call `i` reads line `i % LINES + 1`.
const LINES: usize = 10;

const POLICY: &str = r#"{
  "grants": [ { "name": "agents", "allow": ["read"] } ],
  "paths": { "roots": [ { "path": ".", "access": "write" } ] }
}
"#;

fn line(client: usize, line: usize) -> String {
    format!("client {client:02} line {line:02} marker-{client}-{line}\n")
}

fn file_name(client: usize) -> String {
    format!("data-{client:02}.txt")
}

/// Which client's file a `read` call named.
fn client_of(arguments: &Value) -> usize {
    let path = arguments["path"].as_str().unwrap();
    path.strip_prefix("data-").and_then(|p| p.strip_suffix(".txt")).unwrap().parse().unwrap()
}

fn config(base: &Path) -> HubConfig {
    let project = base.join("proj");
    std::fs::create_dir_all(project.join(".portcullis")).unwrap();
    std::fs::write(project.join(".portcullis/policy.json"), POLICY).unwrap();
    for client in 0..CLIENTS {
        let text: String = (1..=LINES).map(|l| line(client, l)).collect();
        std::fs::write(project.join(file_name(client)), text).unwrap();
    }
    HubConfig {
        policy_files: vec![project.join(".portcullis/policy.json")],
        listen: "127.0.0.1:0".parse().unwrap(),
        config_dir: Some(base.join("config")),
        // Nobody answers prompts here: a call the policy did not allow fails at once instead of waiting.
        unattended: true,
        ..HubConfig::new(project, base.join("ledger.db"))
    }
}

/// One agent: connects, makes its calls one after another, checks each answer, disconnects.
async fn agent(url: String, token: String, client: usize) {
    let mut transport = StreamableHttpClientTransportConfig::with_uri(url).auth_header(token);
    // A lost session must fail the test, not be papered over by a new one.
    transport.reinit_on_expired_session = false;
    let info = ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new(format!("load-{client:02}"), "1.0.0"),
    )
    .with_protocol_version(ProtocolVersion::V_2025_11_25);
    let mut service = info
        .serve(StreamableHttpClientTransport::from_config(transport))
        .await
        .unwrap_or_else(|e| panic!("client {client}: initialize failed: {e}"));
    service.peer().set_response_cache_config(ClientCacheConfig::disabled()).await;
    for i in 0..CALLS_PER_CLIENT {
        let wanted = i % LINES + 1;
        let mut arguments = JsonObject::new();
        arguments.insert("path".into(), json!(file_name(client)));
        arguments.insert("offset".into(), json!(wanted));
        arguments.insert("limit".into(), json!(1));
        let result = service
            .call_tool(CallToolRequestParams::new("read").with_arguments(arguments))
            .await
            .unwrap_or_else(|e| panic!("client {client} call {i}: {e}"));
        assert_eq!(result.is_error, Some(false), "client {client} call {i}: {result:?}");
        let text = result.content.first().and_then(|b| b.as_text()).map(|t| t.text.as_str());
        assert_eq!(text, Some(line(client, wanted).as_str()), "client {client} call {i}: {result:?}");
    }
    service.close().await.unwrap_or_else(|e| panic!("client {client}: close failed: {e}"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thirty_two_agents_make_sixteen_thousand_calls_and_the_ledger_holds_each_once() {
    let dir = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(dir.path()).unwrap();
    let db = base.join("ledger.db");
    let hub = Hub::open(config(&base)).await.unwrap();
    let mut events = hub.subscribe();
    let running = serve(hub).await.unwrap();
    let url = format!("http://{}/mcp", running.addr);

    // Counts sessions closed (the hub's event comes after the ledger got the session's end).
    let closed = tokio::spawn(async move {
        let mut closed = HashSet::new();
        while closed.len() < CLIENTS {
            match events.recv().await {
                Ok(HubEvent::SessionClosed { session_id }) => {
                    assert!(closed.insert(session_id.clone()), "{session_id} closed twice");
                }
                Ok(_) => {}
                Err(e) => panic!("hub events: {e}"),
            }
        }
        closed
    });

    let started = Instant::now();
    let agents: Vec<_> =
        (0..CLIENTS).map(|client| tokio::spawn(agent(url.clone(), running.token.clone(), client))).collect();
    for agent in agents {
        agent.await.unwrap();
    }
    let elapsed = started.elapsed();
    let total = CLIENTS * CALLS_PER_CLIENT;
    eprintln!(
        "{total} calls from {CLIENTS} clients in {:.2} s ({:.0} calls/s)",
        elapsed.as_secs_f64(),
        total as f64 / elapsed.as_secs_f64()
    );

    // Every client closed its session (DELETE); wait until the hub has ended all of them. The bound is
    // a safety net for a hang, far beyond what it takes.
    let closed =
        tokio::time::timeout(Duration::from_secs(120), closed).await.expect("every session closed").unwrap();
    running.shutdown().await.unwrap();

    let reader = LedgerReader::open(&db).unwrap();
    let finished = CallFilter { statuses: vec![CallStatus::Finished], ..CallFilter::default() };
    assert_eq!(reader.count(&finished).unwrap(), total as u64, "finished calls");
    assert_eq!(reader.count(&CallFilter::default()).unwrap(), total as u64, "calls of any terminal status");
    let running_calls = CallFilter { statuses: vec![CallStatus::Running], ..CallFilter::default() };
    assert_eq!(reader.count(&running_calls).unwrap(), 0, "calls left running");

    // One ledger session per MCP connection, each ended, each named after its client.
    let sessions = reader.sessions(1000).unwrap();
    assert_eq!(sessions.len(), CLIENTS, "one ledger session per client");
    let ids: HashSet<String> = sessions.iter().map(|s| s.id.clone()).collect();
    assert_eq!(ids, closed, "the sessions closed are the sessions recorded");
    let mut client_of_session: HashMap<String, usize> = HashMap::new();
    for session in &sessions {
        assert!(session.ended_at.is_some(), "session {} has no end", session.id);
        let name = session.client_name.as_deref().unwrap();
        let client: usize = name.strip_prefix("load-").unwrap().parse().unwrap();
        client_of_session.insert(session.id.clone(), client);
    }
    let clients: HashSet<usize> = client_of_session.values().copied().collect();
    assert_eq!(clients.len(), CLIENTS, "each client has its own session");

    // Every record, in id order: one started and one finished per (session, call id), nothing else.
    #[derive(Default)]
    struct Seen {
        started: usize,
        finished: usize,
        started_line: Option<usize>,
        output: Option<String>,
    }
    let mut calls: HashMap<(String, String), Seen> = HashMap::new();
    let mut records = 0usize;
    let mut after = 0i64;
    loop {
        let page = reader.records(after, 5000).unwrap();
        let Some(last) = page.last() else { break };
        after = last.id;
        for record in page {
            records += 1;
            assert_eq!(record.head.tool, "read", "{record:?}");
            let client = client_of_session[&record.head.session_id];
            let seen =
                calls.entry((record.head.session_id.clone(), record.head.call_id.clone())).or_default();
            match record.kind {
                StoredKind::Started => {
                    seen.started += 1;
                    let arguments = record.body.arguments.as_deref().unwrap();
                    assert_eq!(client_of(arguments), client, "a call on another client's file: {record:?}");
                    seen.started_line = arguments["offset"].as_u64().map(|o| o as usize);
                }
                StoredKind::Finished => {
                    seen.finished += 1;
                    seen.output = record.body.output.as_ref().map(|o| o.joined_text());
                }
                other => panic!("unexpected {other:?} record: {record:?}"),
            }
        }
    }
    assert_eq!(records, 2 * total, "records");
    assert_eq!(calls.len(), total, "distinct (session, call id) pairs");
    let mut per_session: HashMap<&str, usize> = HashMap::new();
    for ((session, call_id), seen) in &calls {
        assert_eq!((seen.started, seen.finished), (1, 1), "{session}/{call_id}");
        let client = client_of_session[session];
        let wanted = seen.started_line.unwrap();
        assert_eq!(seen.output.as_deref(), Some(line(client, wanted).as_str()), "{session}/{call_id}");
        *per_session.entry(session.as_str()).or_default() += 1;
    }
    assert_eq!(per_session.len(), CLIENTS);
    assert!(per_session.values().all(|n| *n == CALLS_PER_CLIENT), "{per_session:?}");

    let report = reader.check().unwrap();
    assert!(report.healthy(), "{report:?}");
    assert_eq!(report.calls, total as u64, "{report:?}");
    assert_eq!(report.records, 2 * total as u64, "{report:?}");
    assert_eq!(report.sessions, CLIENTS as u64, "{report:?}");
    assert_eq!(report.open_calls, 0, "{report:?}");
    assert_eq!(report.unclosed_writers, 0, "{report:?}");
}
