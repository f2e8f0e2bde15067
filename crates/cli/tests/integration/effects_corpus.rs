//! Issue 53, safe by effect: every shell attack of the repository's corpora (`tests/policy-corpus`) run
//! for what it does, not for what the judge said. Each corpus's own policy is used with its default
//! turned to `contain`, so that everything the judge cannot read, and every program no rule names, runs
//! without asking (an approver that denies answers every prompt). Then, in a world with canaries:
//! nothing outside the roots changed, the fake home (with its secrets) did not change, `.git`'s config
//! and hooks and the policy file did not change, no executed config or nested repository appeared below
//! the root, no file that existed was deleted where the policy's `rm` rule asks, no secret reached the
//! output, and nothing connected to a listener on the host. Through `portcullis call` (one process per
//! attack, checked after each) and through `portcullis serve` with the official SDK client (one session
//! per corpus, checked after it).
// Test helpers outside #[test] fns may unwrap and panic.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// What no command may show: the secrets of the fake home, the project's `.env`, a file outside.
const CANARIES: &[&str] = &["CANARY-SSH-KEY", "CANARY-AWS", "CANARY-ENV", "CANARY-OUTSIDE"];

/// Names below the root other programs execute (or take as a repository): none may appear.
const EXECUTED: &[&str] = &[
    ".git",
    ".cargo",
    ".mcp.json",
    ".husky",
    ".envrc",
    ".vscode",
    ".claude",
    ".npmrc",
    ".gitmodules",
    ".github",
    "rust-toolchain.toml",
    ".pre-commit-config.yaml",
    "HEAD",
    ".portcullis",
];

fn corpus_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/policy-corpus")
}

/// Every corpus with its policy (default `contain`) and its shell attacks.
fn corpora() -> Vec<(String, String, Vec<String>)> {
    let mut out = Vec::new();
    let mut dirs: Vec<PathBuf> =
        std::fs::read_dir(corpus_dir()).unwrap().map(|e| e.unwrap().path()).collect();
    dirs.sort();
    for dir in dirs {
        let mut policy: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("policy.json")).unwrap()).unwrap();
        policy["commands"]["default"] = json!("contain");
        policy["approvals"] = json!({ "timeout_seconds": 2 });
        if let Some(map) = policy.as_object_mut() {
            map.remove("$schema");
            map.remove("tests");
        }
        let cases: Vec<Value> =
            serde_json::from_str(&std::fs::read_to_string(dir.join("cases.json")).unwrap()).unwrap();
        let shells: Vec<String> =
            cases.iter().filter_map(|c| c["shell"].as_str().map(str::to_owned)).collect();
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        out.push((name, policy.to_string(), shells));
    }
    out
}

/// The world one corpus's attacks run in.
struct World {
    _dir: tempfile::TempDir,
    base: PathBuf,
    proj: PathBuf,
    /// Whether the policy asks (or forbids) for `rm`: then no file that existed may be deleted.
    rm_asks: bool,
    /// Whether some rule grants network (then a connection may be the policy's).
    network: bool,
}

fn world(policy: &str) -> World {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let proj = base.join("proj");
    let files = [
        ("home/.ssh/id_rsa", "CANARY-SSH-KEY\n"),
        ("home/.aws/credentials", "[default]\naws_secret_access_key = CANARY-AWS\n"),
        ("home/.bashrc", "export PS1='$ '\n"),
        ("outside/canary.txt", "CANARY-OUTSIDE\n"),
        ("proj/.env", "TOKEN=CANARY-ENV\n"),
        ("proj/README.md", "# project\n"),
        ("proj/src/main.rs", "fn main() {}\n"),
        ("proj/x", "x\n"),
        ("proj/y", "y\n"),
        ("proj/victim", "victim\n"),
        ("proj/notes.txt", "notes\n"),
        ("proj/.portcullis/policy.json", policy),
    ];
    for (path, text) in files {
        let path = base.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    let git = Command::new("git")
        .args(["init", "-q"])
        .current_dir(&proj)
        .env("HOME", base.join("home"))
        .status()
        .unwrap();
    assert!(git.success());
    std::fs::write(proj.join(".git/hooks/pre-commit"), "#!/bin/sh\nexit 0\n").unwrap();
    let parsed: Value = serde_json::from_str(policy).unwrap();
    let rules = parsed["commands"]["rules"].as_array().cloned().unwrap_or_default();
    let names = |r: &Value| -> Vec<String> {
        match &r["pattern"][0] {
            Value::String(s) => vec![s.clone()],
            Value::Array(a) => a.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect(),
            _ => Vec::new(),
        }
    };
    let rm_asks = rules.iter().any(|r| r["decision"] != "allow" && names(r).iter().any(|n| n == "rm"));
    let network = rules.iter().any(|r| !r["network"].is_null() && r["network"] != json!(false));
    World { _dir: dir, base, proj, rm_asks, network }
}

/// Every file below `dir` (links as their target) with its bytes; folders as such.
fn tree(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(d) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else { continue };
        for e in entries.flatten() {
            let p = e.path();
            let rel = p.strip_prefix(dir).unwrap().display().to_string();
            // Gone since it was listed: a launcher started ahead for the next command makes and removes
            // its layer folder in the project's `.portcullis` (not the project's files) meanwhile.
            let Ok(meta) = std::fs::symlink_metadata(&p) else { continue };
            if meta.is_dir() {
                if !rel.starts_with(".portcullis") {
                    pending.push(p);
                }
                out.insert(rel, b"dir".to_vec());
            } else if meta.file_type().is_symlink() {
                let target = std::fs::read_link(&p).map(|t| t.display().to_string()).unwrap_or_default();
                out.insert(rel, target.into_bytes());
            } else {
                out.insert(rel, std::fs::read(&p).unwrap_or_default());
            }
        }
    }
    out
}

/// What must not change, taken before the attacks.
struct Guarded {
    outside: BTreeMap<String, Vec<u8>>,
    home: BTreeMap<String, Vec<u8>>,
    git: BTreeMap<String, Vec<u8>>,
    policy: Vec<u8>,
    project: BTreeMap<String, Vec<u8>>,
    base: Vec<String>,
}

fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// The project's files, without Portcullis's own folder and `.git`'s contents.
fn project_files(proj: &Path) -> BTreeMap<String, Vec<u8>> {
    tree(proj)
        .into_iter()
        .filter(|(rel, _)| !rel.starts_with(".portcullis") && !rel.starts_with(".git/"))
        .collect()
}

fn git_guarded(proj: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = tree(&proj.join(".git/hooks"));
    out.insert("config".into(), std::fs::read(proj.join(".git/config")).unwrap_or_default());
    out
}

fn guard(w: &World) -> Guarded {
    Guarded {
        outside: tree(&w.base.join("outside")),
        home: tree(&w.base.join("home")),
        git: git_guarded(&w.proj),
        policy: std::fs::read(w.proj.join(".portcullis/policy.json")).unwrap(),
        project: project_files(&w.proj),
        base: names_in(&w.base),
    }
}

/// The effects beyond the policy since `before`, one line each (none: empty).
fn effects(w: &World, before: &Guarded, output: &str) -> Vec<String> {
    let mut found = Vec::new();
    if tree(&w.base.join("outside")) != before.outside {
        found.push("a file outside the roots changed".to_owned());
    }
    if tree(&w.base.join("home")) != before.home {
        found.push("the home folder changed".to_owned());
    }
    if git_guarded(&w.proj) != before.git {
        found.push(".git's config or hooks changed".to_owned());
    }
    if std::fs::read(w.proj.join(".portcullis/policy.json")).unwrap_or_default() != before.policy {
        found.push("the policy file changed".to_owned());
    }
    // The hub's own files beside the project: its ledger (with its journal) and the undo store.
    let hubs =
        |n: &String| n.starts_with("call.db") || n.starts_with("ledger.db") || n == "undo" || n == "config";
    let base: Vec<String> = names_in(&w.base).into_iter().filter(|n| !hubs(n)).collect();
    let was: Vec<String> = before.base.iter().filter(|n| !hubs(n)).cloned().collect();
    if base != was {
        found.push(format!("beside the project: {base:?} (was {was:?})"));
    }
    let now = project_files(&w.proj);
    for rel in now.keys().filter(|rel| !before.project.contains_key(*rel)) {
        let name = Path::new(rel);
        if name.components().any(|c| EXECUTED.contains(&c.as_os_str().to_string_lossy().as_ref())) {
            found.push(format!("planted below the root: {rel}"));
        }
    }
    if w.rm_asks {
        for rel in before.project.keys().filter(|rel| !now.contains_key(*rel)) {
            found.push(format!("deleted although the policy asks for rm: {rel}"));
        }
    }
    for canary in CANARIES {
        if output.contains(canary) {
            found.push(format!("the output holds {canary}"));
        }
    }
    found
}

/// A listener on the host's loopback: how many connected to it.
fn listener() -> (u16, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let count = Arc::new(AtomicUsize::new(0));
    let seen = count.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            if stream.is_ok() {
                seen.fetch_add(1, Ordering::SeqCst);
            }
        }
    });
    (port, count)
}

/// A call's arguments: the attack, with a short timeout (some loop forever).
fn arguments(command: &str) -> Value {
    json!({ "command": command, "timeout_ms": 3000 })
}

/// The corpus's attacks and one of the test's own, which the corpora cannot name: contained code
/// connecting to the listener on the host (the network namespace must keep it from ever arriving).
fn with_reach_for(port: u16, mut shells: Vec<String>) -> Vec<String> {
    shells.push(format!(
        "/usr/bin/python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", {port}), timeout=2)'"
    ));
    shells
}

#[test]
fn every_attack_run_through_call_has_no_effect_beyond_the_policy() {
    let (port, connections) = listener();
    let mut beyond = Vec::new();
    let mut ran = 0usize;
    let mut reach_ran = 0usize;
    for (corpus, policy, shells) in corpora() {
        let shells = with_reach_for(port, shells);
        let w = world(&policy);
        let db = w.base.join("call.db");
        for command in &shells {
            let before = guard(&w);
            let args = arguments(command).to_string();
            let db = db.to_str().unwrap();
            let shown =
                common::in_project(&w.base, &["call", "shell", &args, "--approver", "deny", "--db", db]);
            ran += usize::from(shown.contains("[exit code:"));
            reach_ran +=
                usize::from(command.contains("create_connection") && shown.contains("[ran contained"));
            for effect in effects(&w, &before, &shown) {
                beyond.push(format!("{corpus}: {command:?}: {effect}\n{shown}"));
            }
        }
        if !w.network {
            assert_eq!(connections.load(Ordering::SeqCst), 0, "{corpus}: a command reached the host");
        }
    }
    println!("{ran} attacks ran (allowed or contained); the rest were asked and denied");
    // The reach for the host ran contained somewhere, so the listener's count proves something.
    assert!(reach_ran > 0, "the test's own reach for the host never ran contained");
    assert!(ran > 50, "only {ran} attacks ran: the test would prove little");
    assert!(beyond.is_empty(), "{} effects beyond the policy:\n{}", beyond.len(), beyond.join("\n---\n"));
}

/// The attacks of `shells` a live call runs (allowed or contained), as `policy check` decides them in
/// the world's project: the others are asked, and an unanswered prompt would only wait.
fn running(w: &World, shells: &[String]) -> Vec<String> {
    shells
        .iter()
        .filter(|command| {
            let out = common::portcullis(&w.base)
                .args(["policy", "check", "--json", "--"])
                .arg(command.as_str())
                .current_dir(&w.proj)
                .stdin(Stdio::null())
                .output()
                .unwrap();
            let v: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
            matches!(v["decision"].as_str(), Some("allow" | "contain"))
        })
        .cloned()
        .collect()
}

#[test]
fn every_attack_run_through_serve_with_the_sdk_client_has_no_effect_beyond_the_policy() {
    common::node_modules();
    let (port, connections) = listener();
    let mut beyond = Vec::new();
    let mut ran = 0usize;
    for (corpus, policy, shells) in corpora() {
        let shells = with_reach_for(port, shells);
        let w = world(&policy);
        let before = guard(&w);
        let shells = running(&w, &shells);
        ran += shells.len();
        let (mut hub, info) = common::start_hub(&w.base, &[], &[]);
        let token = std::fs::read_to_string(w.base.join("config/token")).unwrap();
        let steps: Vec<Value> = shells
            .iter()
            .map(|c| json!({ "op": "call", "name": "shell", "arguments": arguments(c), "timeoutMs": 30000 }))
            .collect();
        let client = common::agent_in_background(&info, &token, json!(steps)).join().unwrap();
        let _ = hub.kill();
        let _ = hub.wait();
        let report = String::from_utf8_lossy(&client.stdout).into_owned();
        assert!(
            report.contains("\"results\""),
            "{corpus}: the client failed: {report}{}",
            String::from_utf8_lossy(&client.stderr)
        );
        for effect in effects(&w, &before, &report) {
            beyond.push(format!("{corpus}: {effect}"));
        }
        if !w.network {
            assert_eq!(connections.load(Ordering::SeqCst), 0, "{corpus}: a command reached the host");
        }
    }
    println!("{ran} attacks ran through serve (allowed or contained)");
    assert!(ran > 50, "only {ran} attacks ran: the test would prove little");
    assert!(beyond.is_empty(), "{} effects beyond the policy:\n{}", beyond.len(), beyond.join("\n"));
}
