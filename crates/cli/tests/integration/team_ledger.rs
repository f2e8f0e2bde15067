//! Issue 34: `portcullis serve --ship postgres://…` ships every record of its ledger to a real
//! PostgreSQL server (Debian's, private to the test), with the official SDK client as the agent: calls
//! arrive with their decisions and operators, two hubs ship into one database at once, and neither a
//! database down for 30 s under traffic nor a hub SIGKILLed mid-shipment loses or repeats a record,
//! counted against the local ledgers.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::{Served, http, node_modules, serve_with_args};
use portcullis_team::testing::PrivatePostgres;
use serde_json::{Value, json};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const POLICY: &str = r#"{
  "grants": [ { "name": "agents", "allow": ["shell"] } ],
  "commands": { "default": "forbidden",
    "rules": [
      { "id": "echoing", "pattern": [["echo"]], "decision": "allow", "match": ["echo hi"] },
      { "id": "reading", "pattern": [["cat"]], "decision": "allow", "match": ["cat x"] },
      { "id": "touching", "pattern": [["touch"]], "decision": "prompt", "match": ["touch x"] }
    ] }
}
"#;

struct Team {
    pg: PrivatePostgres,
    _dir: tempfile::TempDir,
    password_file: PathBuf,
}

impl Team {
    fn start() -> Team {
        let pg = PrivatePostgres::start();
        pg.create_db("team");
        let dir = tempfile::tempdir().unwrap();
        let password_file = dir.path().join("team-password");
        std::fs::write(&password_file, format!("{}\n", pg.password())).unwrap();
        std::fs::set_permissions(&password_file, std::fs::Permissions::from_mode(0o600)).unwrap();
        Team { pg, _dir: dir, password_file }
    }

    fn serve(&self) -> Served {
        let url = self.pg.url("team");
        serve_with_args(
            POLICY,
            &[],
            &["--ship", &url, "--ship-password-file", self.password_file.to_str().unwrap()],
        )
    }

    fn count(&self, sql: &str) -> i64 {
        self.pg.count("team", sql)
    }
}

/// The ids of every record in the hub's local ledger, and the ledger's id.
fn local_records(db: &Path) -> (String, Vec<i64>) {
    let conn = rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
    let ledger_id = conn.query_row("SELECT ledger_id FROM ledger_identity", [], |r| r.get(0)).unwrap();
    let ids = conn
        .prepare("SELECT id FROM records ORDER BY id")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<Vec<i64>, _>>()
        .unwrap();
    (ledger_id, ids)
}

/// The ids shipped for `ledger_id`, in order (none before the first shipment made the schema).
fn shipped(team: &Team, ledger_id: &str) -> Vec<i64> {
    if team.count("SELECT count(*) FROM pg_tables WHERE schemaname = 'portcullis' AND tablename = 'records'")
        == 0
    {
        return Vec::new();
    }
    team.pg
        .sql(
            "team",
            &format!("SELECT id FROM portcullis.records WHERE ledger_id = '{ledger_id}' ORDER BY id"),
        )
        .into_iter()
        .map(|row| row[0].parse().unwrap())
        .collect()
}

/// Waits (60 s at most) until the team ledger holds exactly the hub's local records, and says so.
fn assert_shipped_exactly(team: &Team, db: &Path) -> (String, usize) {
    let started = Instant::now();
    loop {
        let (ledger_id, local) = local_records(db);
        let remote = shipped(team, &ledger_id);
        if remote == local {
            return (ledger_id, local.len());
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the team ledger does not hold the local records: {} local, {} shipped; missing {:?}; extra {:?}",
            local.len(),
            remote.len(),
            local.iter().filter(|id| !remote.contains(id)).take(10).collect::<Vec<_>>(),
            remote.iter().filter(|id| !local.contains(id)).take(10).collect::<Vec<_>>(),
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn echo_calls(from: usize, n: usize, pause_ms: u64) -> Value {
    let mut steps = Vec::new();
    for i in from..from + n {
        steps
            .push(json!({"op": "call", "name": "shell", "arguments": {"command": format!("echo call-{i}")}}));
        if pause_ms > 0 {
            steps.push(json!({"op": "wait", "ms": pause_ms}));
        }
    }
    Value::Array(steps)
}

fn answer_first_prompt(served: &Served, answer: &str) {
    let started = Instant::now();
    loop {
        let (_, body) =
            http(&format!("{}/approvals", served.api), "GET", Some(&served.operator_token), &[], None);
        let pending: Value = serde_json::from_str(&body).unwrap();
        if let Some(id) = pending["approvals"].as_array().and_then(|a| a.first()).map(|p| p["id"].clone()) {
            let url = format!("{}/approvals/{}", served.api, id);
            let body = json!({ "answer": answer }).to_string();
            let (status, text) = http(&url, "POST", Some(&served.operator_token), &[], Some(&body));
            assert_eq!(status, 200, "{text}");
            return;
        }
        assert!(started.elapsed() < Duration::from_secs(30), "no prompt came");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn two_hubs_ship_their_calls_decisions_and_operators_into_one_database() {
    node_modules();
    let team = Team::start();
    let (a, b) = (team.serve(), team.serve());
    // Both hubs under traffic at once; on hub a, one call the operator approves and one the policy forbids.
    let traffic_b = {
        let steps = echo_calls(0, 40, 0);
        let (url, token) = (b.mcp_url.clone(), b.token.clone());
        std::thread::spawn(move || {
            crate::common::agent_in_background(&json!({"mcp_url": url}), &token, steps).join().unwrap()
        })
    };
    let prompted = crate::common::agent_in_background(
        &json!({"mcp_url": a.mcp_url}),
        &a.token,
        json!([{"op": "call", "name": "shell", "arguments": {"command": "touch x"}}]),
    );
    answer_first_prompt(&a, "once");
    assert!(prompted.join().unwrap().status.success());
    let mut steps = echo_calls(100, 40, 0);
    steps
        .as_array_mut()
        .unwrap()
        .push(json!({"op": "call", "name": "shell", "arguments": {"command": "rm -rf ."}}));
    a.agent(steps);
    assert!(traffic_b.join().unwrap().status.success());

    let (ledger_a, n_a) = assert_shipped_exactly(&team, &a.db());
    let (ledger_b, n_b) = assert_shipped_exactly(&team, &b.db());
    assert_ne!(ledger_a, ledger_b);
    assert!(n_a >= 83 && n_b >= 80, "{n_a} {n_b}");

    // Decisions and who made them.
    let row = |sql: &str| team.pg.sql("team", sql).into_iter().next().unwrap_or_default();
    let approved = row(&format!(
        "SELECT status, policy_decision, decided_by, decided_operator FROM portcullis.records
         WHERE ledger_id = '{ledger_a}' AND status IS NOT NULL
           AND call_id IN (SELECT call_id FROM portcullis.approvals WHERE ledger_id = '{ledger_a}')"
    ));
    assert_eq!(approved[..3], ["finished", "prompt", "operator"], "{approved:?}");
    assert!(approved[3].contains("approved_once"), "{approved:?}");
    let forbidden = row(&format!(
        "SELECT status, policy_decision, decided_rule FROM portcullis.records
         WHERE ledger_id = '{ledger_a}' AND status = 'blocked' AND record->'arguments'->>'command' = 'rm -rf .'"
    ));
    assert_eq!(forbidden[..2], ["blocked", "forbidden"], "{forbidden:?}");
    let approval = row(&format!(
        "SELECT outcome, operator, tool FROM portcullis.approvals WHERE ledger_id = '{ledger_a}'"
    ));
    assert_eq!(approval[0], "approved_once", "{approval:?}");
    assert!(!approval[1].is_empty(), "no operator on the approval: {approval:?}");

    // Where each row came from, on every row; sessions of both hubs; full-text search finds a call.
    let host = rustix_host();
    for table in ["records", "sessions", "approvals"] {
        let unmarked = team.count(&format!(
            "SELECT count(*) FROM portcullis.{table} WHERE hub_host <> '{host}' OR hub_user = '' OR ledger_id NOT IN ('{ledger_a}', '{ledger_b}')"
        ));
        assert_eq!(unmarked, 0, "{table} rows without their hub");
    }
    assert_eq!(team.count("SELECT count(DISTINCT ledger_id) FROM portcullis.sessions"), 2);
    assert_eq!(team.count("SELECT count(*) FROM portcullis.hubs"), 2);
    let found = team.count(
        "SELECT count(*) FROM portcullis.records WHERE search @@ plainto_tsquery('simple', 'call-117')",
    );
    assert_eq!(found, 1, "full-text search over shipped calls");

    // The agent cannot read the password file, and the password is nowhere in the team ledger.
    let report = a.agent(json!([{"op": "call", "name": "shell",
        "arguments": {"command": format!("cat {}", team.password_file.display())}}]));
    assert!(report.to_string().contains("the team ledger's password"), "{report}");
    assert!(!report.to_string().contains(team.pg.password()), "{report}");
    assert_shipped_exactly(&team, &a.db());
    let leaked = team.count(&format!(
        "SELECT count(*) FROM portcullis.records WHERE record::text LIKE '%{}%'",
        team.pg.password()
    ));
    assert_eq!(leaked, 0);
}

fn rustix_host() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap().trim().to_owned()
}

#[test]
fn a_database_down_for_30_seconds_under_traffic_loses_and_repeats_nothing() {
    node_modules();
    let team = Team::start();
    let served = team.serve();
    // Calls every ~100 ms for about 45 s: before, during and after the outage.
    let traffic = crate::common::agent_in_background(
        &json!({"mcp_url": served.mcp_url}),
        &served.token,
        echo_calls(0, 420, 100),
    );
    std::thread::sleep(Duration::from_secs(5));
    let (ledger_id, before) = local_records(&served.db());
    assert!(!shipped(&team, &ledger_id).is_empty(), "nothing shipped before the outage");
    team.pg.stop();
    std::thread::sleep(Duration::from_secs(30));
    let (_, during) = local_records(&served.db());
    assert!(during.len() > before.len() + 100, "the hub stopped recording while the database was down");
    team.pg.start_again();
    let out = traffic.join().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
    let (_, n) = assert_shipped_exactly(&team, &served.db());
    assert!(n >= 840, "{n}");
}

#[test]
fn a_hub_killed_mid_shipment_ships_the_rest_once_after_a_restart() {
    node_modules();
    let team = Team::start();
    let mut served = team.serve();
    // A backlog made while the database is down, so shipping it takes several batches.
    team.pg.stop();
    for run in 0..12 {
        // Runs of 60 calls: the client's report of each fits the pipe it writes to.
        served.agent(echo_calls(run * 60, 60, 0));
    }
    let (ledger_id, local) = local_records(&served.db());
    assert!(local.len() >= 1400, "{}", local.len());
    team.pg.start_again();
    let started = Instant::now();
    let shipped_at_kill = loop {
        let n = shipped(&team, &ledger_id).len();
        if n > 0 {
            served.kill();
            break n;
        }
        assert!(started.elapsed() < Duration::from_secs(30), "shipping never resumed");
        std::thread::sleep(Duration::from_millis(5));
    };
    assert!(shipped_at_kill < local.len(), "the hub shipped everything before it was killed");
    served.restart();
    served.agent(echo_calls(1000, 5, 0));
    let (_, n) = assert_shipped_exactly(&team, &served.db());
    assert!(n >= local.len() + 10);
}
