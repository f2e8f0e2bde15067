//! Issue 34: `portcullis serve --ship postgres://…` ships every record of its ledger to a real
//! PostgreSQL server (Debian's, private to the test), with the official SDK client as the agent: calls
//! arrive with their decisions and operators, two hubs ship into one database at once, and neither a
//! database down for 30 s under traffic nor a hub SIGKILLed mid-shipment loses or repeats a record,
//! counted against the local ledgers.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::{Served, http, node_modules, serve_with_args};
use portcullis_team::testing::PrivatePostgres;
use serde_json::{Value, json};
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
        let password_file = pg.password_file(dir.path(), "team-password");
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

/// Waits (60 s at most) until the hub's ledger holds at least `at_least` records and the team ledger
/// holds exactly those, and says so. The floor matters: a call's last record reaches the hub's SQLite
/// file (through the writer's queue and the journal's indexer) moments after the agent has its answer,
/// so an equal count read too early can miss the newest records.
fn assert_shipped_exactly(team: &Team, db: &Path, at_least: usize) -> (String, usize) {
    let started = Instant::now();
    loop {
        let (ledger_id, local) = local_records(db);
        let remote = shipped(team, &ledger_id);
        if local.len() >= at_least && remote == local {
            return (ledger_id, local.len());
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the team ledger does not hold the local records: {} local (at least {at_least} expected), {} shipped; missing {:?}; extra {:?}",
            local.len(),
            remote.len(),
            local.iter().filter(|id| !remote.contains(id)).take(10).collect::<Vec<_>>(),
            remote.iter().filter(|id| !local.contains(id)).take(10).collect::<Vec<_>>(),
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Where the running hub says its shipping stands (`portcullis api shipping`, as its operator).
fn shipping_of(served: &Served) -> Value {
    let out = crate::common::portcullis(&served.path("")).args(["api", "shipping"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
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
        if let Some(p) = pending["approvals"].as_array().and_then(|a| a.first()) {
            let url = format!("{}/approvals/{}", served.api, p["id"]);
            let body = json!({ "answer": answer, "arguments_sha256": p["arguments_sha256"] }).to_string();
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
    let (a, mut b) = (team.serve(), team.serve());
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

    let (ledger_a, n_a) = assert_shipped_exactly(&team, &a.db(), 83);
    let (ledger_b, n_b) = assert_shipped_exactly(&team, &b.db(), 80);
    assert_ne!(ledger_a, ledger_b);

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
    // A session's end (a change to a row already shipped) ships too: hub b closes its sessions as it
    // stops, and ships what it wrote before it exits.
    let open_before = team.count(&format!(
        "SELECT count(*) FROM portcullis.sessions WHERE ledger_id = '{ledger_b}' AND ended_at IS NULL"
    ));
    assert!(open_before > 0, "hub b's sessions were shipped while open");
    let stopped = b.stop();
    assert!(stopped.status.success(), "{}", String::from_utf8_lossy(&stopped.stderr));
    let said = String::from_utf8_lossy(&stopped.stderr);
    assert!(
        said.contains("shipping the ledger to the team ledger postgres://portcullis@127.0.0.1"),
        "{said}"
    );
    assert!(!said.contains(team.pg.password()), "{said}");
    let local_open: i64 = rusqlite::Connection::open(b.db())
        .unwrap()
        .query_row("SELECT count(*) FROM sessions WHERE ended_at IS NULL", [], |r| r.get(0))
        .unwrap();
    assert_eq!(local_open, 0);
    let shipped_open = team.count(&format!(
        "SELECT count(*) FROM portcullis.sessions WHERE ledger_id = '{ledger_b}' AND ended_at IS NULL"
    ));
    assert_eq!(shipped_open, 0, "hub b's sessions ended, but not in the team ledger");
    assert_eq!(team.count("SELECT count(*) FROM portcullis.hubs"), 2);
    let found = team.count(
        "SELECT count(*) FROM portcullis.records WHERE search @@ plainto_tsquery('simple', 'call-117')",
    );
    assert_eq!(found, 1, "full-text search over shipped calls");

    the_cli_reads_the_team_ledger(&team, &a, &ledger_a, n_a + n_b);

    // The agent cannot read the password file, and the password is nowhere in the team ledger.
    let report = a.agent(json!([{"op": "call", "name": "shell",
        "arguments": {"command": format!("cat {}", team.password_file.display())}}]));
    assert!(report.to_string().contains("the team ledger's password"), "{report}");
    assert!(!report.to_string().contains(team.pg.password()), "{report}");
    assert_shipped_exactly(&team, &a.db(), n_a + 1);
    let leaked = team.count(&format!(
        "SELECT count(*) FROM portcullis.records WHERE record::text LIKE '%{}%'",
        team.pg.password()
    ));
    assert_eq!(leaked, 0);
}

/// `portcullis ledger … --db postgres://…` as an auditor runs it (password from $PGPASSWORD).
fn the_cli_reads_the_team_ledger(team: &Team, a: &Served, ledger_a: &str, records: usize) {
    let url = team.pg.url("team");
    let run = |args: &[&str]| -> String {
        let out = crate::common::portcullis(a.dir.path())
            .env("PGPASSWORD", team.pg.password())
            .args(["ledger"])
            .args(args)
            .args(["--db", &url])
            .output()
            .unwrap();
        assert!(out.status.success(), "ledger {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    let json = |args: &[&str]| -> Value { serde_json::from_str(&run(args)).unwrap() };
    let host = rustix_host();

    // Every call of both hubs, newest first, each saying where it ran; paged by cursor.
    let page = json(&["query", "--json", "--limit", "50"]);
    let calls = page["calls"].as_array().unwrap();
    assert_eq!(calls.len(), 50);
    assert_eq!(calls[0]["origin"]["host"], host.as_str(), "{}", calls[0]);
    let next = page["next"].as_str().unwrap().to_owned();
    let rest = json(&["query", "--json", "--limit", "1000", "--before", &next]);
    let total = 50 + rest["calls"].as_array().unwrap().len();
    assert_eq!(total, 40 + 40 + 1 + 1, "every call once across pages");
    let hubs: std::collections::BTreeSet<String> = calls
        .iter()
        .chain(rest["calls"].as_array().unwrap())
        .map(|c| c["origin"]["ledger_id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(hubs.len(), 2);
    // Filters: one hub, a search, a status; a host that shipped nothing.
    let only_a = json(&["query", "--json", "--limit", "1000", "--hub", ledger_a]);
    assert!(only_a["calls"].as_array().unwrap().iter().all(|c| c["origin"]["ledger_id"] == ledger_a));
    let found = json(&["query", "--json", "--search", "call-117"]);
    assert_eq!(found["calls"].as_array().unwrap().len(), 1, "{found}");
    assert_eq!(found["calls"][0]["summary"], "echo call-117");
    let blocked = json(&["query", "--json", "--status", "blocked"]);
    assert_eq!(blocked["calls"].as_array().unwrap().len(), 1, "{blocked}");
    assert_eq!(json(&["query", "--json", "--host", "elsewhere"])["calls"], json!([]));
    let table = run(&["query", "--limit", "3"]);
    assert!(table.lines().next().unwrap().starts_with("HUB"), "{table}");
    assert!(table.contains(&format!("@{host}")), "{table}");

    // One call, with its approval and its hub.
    let approved = json(&["query", "--json", "--decided-by", "operator"]);
    let call_id = approved["calls"][0]["call_id"].as_str().unwrap().to_owned();
    let session = approved["calls"][0]["session_id"].as_str().unwrap().to_owned();
    let shown = run(&["show", &call_id, "--session", &session]);
    assert!(shown.contains(&format!("hub {ledger_a}")), "{shown}");
    assert!(shown.contains("approved_once") || shown.contains("approved once"), "{shown}");
    // The same through the table as a file's call, its hub in the row and beside it.
    let detail = json(&["show", &call_id, "--session", &session, "--json"]);
    assert_eq!(detail["origin"]["ledger_id"], ledger_a, "{detail}");
    assert_eq!(detail["call"]["origin"], detail["origin"], "{detail}");
    let missing = crate::common::portcullis(a.dir.path())
        .env("PGPASSWORD", team.pg.password())
        .args(["ledger", "show", "no-such-call", "--db", &url])
        .output()
        .unwrap();
    assert!(!missing.status.success());
    assert!(String::from_utf8_lossy(&missing.stderr).contains("the team ledger: no call \"no-such-call\""));

    // Stats over both hubs, sessions, and an export of every record with its origin.
    let stats = json(&["stats", "--json"]);
    assert_eq!(stats["total"], 82, "{stats}");
    assert_eq!(stats["by_host"][0]["key"], host.as_str());
    let shipped_sessions = team.count("SELECT count(*) FROM portcullis.sessions");
    assert!(shipped_sessions >= 3);
    assert_eq!(stats["sessions"]["total"], shipped_sessions, "{stats}");
    assert!(stats["durations"][0]["p50_us"].as_i64().unwrap() > 0);
    let text = run(&["stats"]);
    assert!(text.contains("by host:"), "{text}");
    let sessions = json(&["sessions", "--json"]);
    assert_eq!(sessions["sessions"].as_array().unwrap().len() as i64, shipped_sessions, "{sessions}");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("team.jsonl");
    run(&["export", "--format", "jsonl", "--out", file.to_str().unwrap()]);
    let lines: Vec<Value> =
        std::fs::read_to_string(&file).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), records);
    assert!(lines.iter().all(|l| l["origin"]["host"] == host.as_str()));

    // A stricter policy judged against the whole team's history: every echo of both hubs would now be
    // refused (`policy replay` reads the team ledger as it reads a file).
    let stricter = dir.path().join("stricter.json");
    std::fs::write(&stricter, r#"{ "commands": { "default": "forbidden" } }"#).unwrap();
    let replayed = crate::common::portcullis(a.dir.path())
        .env("PGPASSWORD", team.pg.password())
        .args(["policy", "replay", "--json", "--db", &url, "--policy"])
        .arg(&stricter)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&replayed.stdout);
    let lines: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let changes = lines.iter().filter(|l| l["before"] == "allow" && l["after"] == "forbidden").count();
    assert_eq!(changes, 80, "{text}");
    assert!(lines.iter().any(|l| l["subject"] == "echo call-117"), "{text}");

    // What a hub's own file answers and the team ledger does not is said so.
    for (command, what) in [("refusals", "refused requests"), ("check", "a check")] {
        let out = crate::common::portcullis(a.dir.path())
            .env("PGPASSWORD", team.pg.password())
            .args(["ledger", command, "--db", &url])
            .output()
            .unwrap();
        assert!(!out.status.success());
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(
            said.contains(&format!("{what} is asked of a hub's own ledger file, not of the team ledger")),
            "{said}"
        );
    }
    // And a wrong password is refused with the server's words.
    let out = crate::common::portcullis(a.dir.path())
        .env("PGPASSWORD", "wrong")
        .args(["ledger", "query", "--db", &url])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("password authentication failed"));

    // The hub's own ledger says how far its shipping stands.
    let local = crate::common::portcullis(a.dir.path())
        .args(["ledger", "stats", "--db"])
        .arg(a.db())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&local.stdout);
    assert!(text.contains("shipping to postgres://portcullis@127.0.0.1"), "{text}");
    assert!(text.contains(": 0 records and 0 other rows behind"), "{text}");
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
    // The operator sees the lag and why (the Connections view reads the same command).
    let lag = shipping_of(&served);
    assert!(lag[0]["sink"].as_str().unwrap().starts_with("team:postgres://portcullis@127.0.0.1"), "{lag}");
    assert!(lag[0]["records_behind"].as_i64().unwrap() > 100, "{lag}");
    assert!(lag[0]["failing"].as_str().unwrap().contains("cannot connect"), "{lag}");
    team.pg.start_again();
    let out = traffic.join().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
    assert_shipped_exactly(&team, &served.db(), 840);
    let started = Instant::now();
    while shipping_of(&served)[0]["failing"] != Value::Null || shipping_of(&served)[0]["records_behind"] != 0
    {
        assert!(started.elapsed() < Duration::from_secs(10), "{}", shipping_of(&served));
        std::thread::sleep(Duration::from_millis(200));
    }
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
    assert_shipped_exactly(&team, &served.db(), local.len() + 10);
}

/// Issue 36: two hubs ship their signed ledgers with each record's link and their checkpoints; an
/// export of the team ledger is proven with the hubs' public keys alone (`ledger verify --export --key
/// … --key …`), fails with one key only, and an UPDATE made in PostgreSQL is found at its record.
#[test]
fn a_team_export_is_proven_with_the_hubs_public_keys_alone() {
    node_modules();
    let team = Team::start();
    let (mut a, mut b) = (team.serve(), team.serve());
    a.agent(echo_calls(0, 6, 0));
    b.agent(echo_calls(10, 5, 0));
    // Stopped: each hub seals its chain at close and ships the checkpoint before it exits.
    for hub in [&mut a, &mut b] {
        let stopped = hub.stop();
        assert!(stopped.status.success(), "{}", String::from_utf8_lossy(&stopped.stderr));
    }
    let (ledger_a, n_a) = assert_shipped_exactly(&team, &a.db(), 0);
    let (ledger_b, n_b) = assert_shipped_exactly(&team, &b.db(), 0);
    for (hub, ledger) in [(&a, &ledger_a), (&b, &ledger_b)] {
        let local: i64 = rusqlite::Connection::open(hub.db())
            .unwrap()
            .query_row("SELECT count(*) FROM chain_checkpoints WHERE signature IS NOT NULL", [], |r| r.get(0))
            .unwrap();
        assert!(local >= 1);
        let shipped = team.count(&format!(
            "SELECT count(*) FROM portcullis.chain_checkpoints WHERE ledger_id = '{ledger}' AND signature IS NOT NULL"
        ));
        assert_eq!(shipped, local, "{ledger}");
        assert_eq!(
            team.count(&format!(
                "SELECT count(*) FROM portcullis.records WHERE ledger_id = '{ledger}' AND chain IS NULL"
            )),
            0
        );
    }
    let url = team.pg.url("team");
    let dir = tempfile::tempdir().unwrap();
    let export = |name: &str, filter: &[&str]| -> PathBuf {
        let file = dir.path().join(name);
        let out = crate::common::portcullis(a.dir.path())
            .env("PGPASSWORD", team.pg.password())
            .args(["ledger", "export", "--format", "jsonl", "--db", &url, "--out"])
            .arg(&file)
            .args(filter)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        file
    };
    let verify = |file: &Path, keys: &[&Served]| -> (Option<i32>, String) {
        let mut command = crate::common::portcullis(dir.path());
        command.args(["ledger", "verify", "--export"]).arg(file);
        for hub in keys {
            command.arg("--key").arg(hub.path("config/ledger-key.pub"));
        }
        let out = command.output().unwrap();
        let text =
            format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        (out.status.code(), text)
    };

    // Both hubs' records, each hub's ledger against its own key.
    let whole = export("team.jsonl", &[]);
    let lines: Vec<Value> =
        std::fs::read_to_string(&whole).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), n_a + n_b);
    assert!(lines.iter().all(|l| l["chain"]["link"].as_str().is_some_and(|h| h.len() == 64)));
    let (code, text) = verify(&whole, &[&a, &b]);
    assert_eq!(code, Some(0), "{text}");
    let all = n_a + n_b;
    assert!(text.contains(&format!("records: {all} chained, {all} sealed")), "{text}");
    assert!(text.contains(&format!("ledger {ledger_a}: verified, {n_a} chained, {n_a} sealed")), "{text}");
    assert!(text.contains(&format!("ledger {ledger_b}: verified, {n_b} chained, {n_b} sealed")), "{text}");
    // One key proves one hub's ledger, not the other's.
    let (code, text) = verify(&whole, &[&a]);
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains(&format!("ledger {ledger_a}: verified")), "{text}");
    assert!(text.contains(&format!("ledger {ledger_b}: BROKEN")), "{text}");
    assert!(text.contains("bad signature"), "{text}");
    // One hub's records alone, with its key alone; the hub's own file export too.
    let only_b = export("b.jsonl", &["--hub", &ledger_b]);
    let (code, text) = verify(&only_b, &[&b]);
    assert_eq!(code, Some(0), "{text}");
    let own = dir.path().join("own.jsonl");
    let out = crate::common::portcullis(a.dir.path())
        .args(["ledger", "export", "--format", "jsonl", "--db"])
        .arg(a.db())
        .arg("--out")
        .arg(&own)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let (code, text) = verify(&own, &[&a]);
    assert_eq!(code, Some(0), "{text}");

    // A record edited in PostgreSQL (what a reader of the team ledger sees): a new export names it.
    let edited = team.count(&format!(
        "SELECT min(id) FROM portcullis.records WHERE ledger_id = '{ledger_a}' AND id > 2 AND record ? 'arguments'"
    ));
    team.pg.sql(
        "team",
        &format!(
            "UPDATE portcullis.records SET record = jsonb_set(record, '{{arguments,command}}', '\"echo nothing\"')
             WHERE ledger_id = '{ledger_a}' AND id = {edited}"
        ),
    );
    let (code, text) = verify(&export("edited.jsonl", &[]), &[&a, &b]);
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains(&format!("BROKEN at record {edited}")), "{text}");
    assert!(text.contains(&format!("ledger {ledger_a}: line")), "{text}");
    assert!(text.contains(&format!("ledger {ledger_b}: verified")), "{text}");
    // Its canonical columns edited to match: the link no longer does.
    team.pg.sql(
        "team",
        &format!(
            "UPDATE portcullis.records SET chain_columns = regexp_replace(chain_columns, 'echo call-[0-9]+', 'echo nothing')
             WHERE ledger_id = '{ledger_a}' AND id = {edited}"
        ),
    );
    let (code, text) = verify(&export("forged.jsonl", &[]), &[&a, &b]);
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains(&format!("BROKEN at record {edited}")), "{text}");
    assert!(text.contains(&format!("(record {edited}) does not match its link")), "{text}");
}
