//! Issue 31, what a new operator found, through the binary: "always" on a first day creates the user's
//! policy file; "." means the project a policy guards, wherever the file lives, and `serve` and
//! `policy check` say where it points; "decided by" names a protected place.
// Fixture builders and run helpers are not #[test] fns, so clippy.toml's test allowance misses them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::portcullis;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

/// A fresh machine: a home, an empty config folder, a project; no policy anywhere.
fn fresh() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(dir.path()).unwrap();
    for sub in ["home", "config", "proj"] {
        std::fs::create_dir_all(base.join(sub)).unwrap();
    }
    (dir, base)
}

/// `portcullis call shell` for `command` in the project, on a pseudo-terminal (util-linux `script`)
/// where `answer` is typed; the terminal's text.
fn call_on_terminal(base: &Path, command: &str, answer: &str) -> String {
    let mut child = std::process::Command::new("script")
        .args(["-qec", r#""$PORTCULLIS_BIN" call shell "$CALL_ARGS" --cwd "$PROJ""#, "/dev/null"])
        .env_remove("XDG_CONFIG_HOME")
        .env("HOME", base.join("home"))
        .env("PORTCULLIS_CONFIG_DIR", base.join("config"))
        .env("SHELL", "/bin/sh")
        .env("PORTCULLIS_BIN", env!("CARGO_BIN_EXE_portcullis"))
        .env("CALL_ARGS", json!({ "command": command }).to_string())
        .env("PROJ", base.join("proj"))
        .current_dir(base.join("proj"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("util-linux `script` gives the approver a terminal");
    child.stdin.take().unwrap().write_all(answer.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn check_json(base: &Path, args: &[&str]) -> Value {
    let out = portcullis(base).args(["policy", "check", "--json"]).args(args).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn always_on_a_first_day_creates_the_users_policy_with_the_defaults_rules() {
    let (_dir, base) = fresh();
    let proj = base.join("proj");
    let user_policy = base.join("config/policy.json");
    let out = call_on_terminal(&base, "touch first-day-file", "a\n");
    assert!(
        out.contains(&format!(
            "[a] always (creates your policy {}: the built-in default's rules and rule always-",
            user_policy.display()
        )),
        "{out}"
    );
    assert!(!out.contains("always unavailable"), "{out}");
    assert!(proj.join("first-day-file").exists(), "the call ran: {out}");
    // The file: the built-in default's rules, the new rule, no $schema pointing nowhere; owner-only.
    let text = std::fs::read_to_string(&user_policy).unwrap();
    let doc: Value = serde_json::from_str(&text).unwrap();
    let ids: Vec<&str> =
        doc["commands"]["rules"].as_array().unwrap().iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert!(ids.contains(&"read-only-basics") && ids.contains(&"privilege"), "{ids:?}");
    assert!(ids.last().unwrap().starts_with("always-"), "{ids:?}");
    assert!(doc.get("$schema").is_none(), "{text}");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(&user_policy).unwrap().permissions().mode() & 0o777, 0o600);
    // From now on the user's policy is found and allows exactly that command, in this project.
    let cwd = proj.to_str().unwrap();
    let v = check_json(&base, &["--cwd", cwd, "--", "touch first-day-file"]);
    assert_eq!(v["policies"], json!([user_policy.display().to_string()]));
    assert_eq!(v["decision"], "allow", "{v}");
    assert_eq!(check_json(&base, &["--cwd", cwd, "--", "touch other-file"])["decision"], "prompt");
    // Its "." is the project, not the config folder it lives in.
    assert_eq!(v["relative_roots"], json!([{ "policy": user_policy.display().to_string(), "folder": cwd }]));
    // A second "always" appends to the file it created (and never creates it again).
    let out = call_on_terminal(&base, "touch second-file", "a\n");
    assert!(out.contains("[a] always (adds rule always-"), "{out}");
    assert!(out.contains(&user_policy.display().to_string()), "{out}");
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&user_policy).unwrap()).unwrap();
    assert_eq!(doc["commands"]["rules"].as_array().unwrap().len(), ids.len() + 1);
}

const STRICT: &str = r#"{
  "commands": { "default": "prompt", "rules": [] },
  "paths": { "roots": [{ "path": ".", "access": "write" }], "read_outside_roots": "forbidden" }
}"#;

/// A policy kept in `~/policies` guards the project it is applied to: "." is that project for
/// `policy check`, `call` and `serve` alike, and `serve` and `policy check` say so.
#[test]
fn dot_is_the_project_a_policy_guards_wherever_the_file_lives() {
    let (_dir, base) = fresh();
    let kept = base.join("home/policies/strict.json");
    std::fs::create_dir_all(kept.parent().unwrap()).unwrap();
    std::fs::write(&kept, STRICT).unwrap();
    std::fs::write(base.join("proj/inside.txt"), "in").unwrap();
    std::fs::write(base.join("home/policies/beside.txt"), "beside").unwrap();
    let (policy, proj) = (kept.to_str().unwrap(), base.join("proj"));
    let read = |path: &Path| {
        let call = json!({ "name": "read", "arguments": { "path": path } }).to_string();
        check_json(&base, &["--policy", policy, "--cwd", proj.to_str().unwrap(), "--call", &call])
    };
    assert_eq!(read(&proj.join("inside.txt"))["decision"], "allow");
    assert_eq!(read(&base.join("home/policies/beside.txt"))["decision"], "forbidden");
    // The text output says where "." points.
    let out = portcullis(&base)
        .args(["policy", "check", "--policy", policy, "--cwd", proj.to_str().unwrap(), "--", "ls"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(&format!("\".\" in {policy} is {}", proj.display())), "{text}");
    // `call` reads the project's file under that policy.
    let out = portcullis(&base)
        .args([
            "call",
            "read",
            r#"{"path": "inside.txt"}"#,
            "--approver",
            "deny",
            "--policy",
            policy,
            "--cwd",
        ])
        .arg(&proj)
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("in"), "{}", String::from_utf8_lossy(&out.stderr));
    // `serve` says it at start.
    let mut serve = portcullis(&base)
        .args(["serve", "--port", "0", "--approver", "none", "--policy", policy, "--db"])
        .arg(base.join("ledger.db"))
        .current_dir(&proj)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(serve.stderr.take().unwrap()).lines();
    let started = Instant::now();
    let want = format!("portcullis: \".\" in {policy} is {}", proj.display());
    let (mut seen, mut said) = (Vec::new(), false);
    while !said && started.elapsed() < Duration::from_secs(30) {
        let Some(Ok(line)) = lines.next() else { break };
        said = line == want;
        seen.push(line);
    }
    let _ = serve.kill();
    let _ = serve.wait();
    assert!(said, "serve never said where \".\" is ({want}): {seen:?}");
}

/// "Decided by" names the protected place, in `policy check` (text and JSON), in `call`'s answer and in
/// `ledger show`, never "the policy's default".
#[test]
fn a_protected_place_is_named_as_what_decided() {
    let (_dir, base) = fresh();
    let proj = base.join("proj");
    let call = json!({ "name": "write", "arguments": { "path": ".claude/settings.json", "content": "{}" } })
        .to_string();
    let v = check_json(&base, &["--cwd", proj.to_str().unwrap(), "--call", &call]);
    assert_eq!(v["decision"], "prompt");
    let path = proj.join(".claude/settings.json").display().to_string();
    assert_eq!(
        v["deciding_place"],
        json!({ "kind": "executed", "place": "Claude Code settings (hooks and commands run code)", "path": path })
    );
    let out = portcullis(&base)
        .args(["policy", "check", "--cwd", proj.to_str().unwrap(), "--call", &call])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!(
            "decided by: protected place (executed content): Claude Code settings (hooks and commands run code) at {path}"
        )),
        "{text}"
    );
    // A hub secret is forbidden, and the call's answer names the place.
    let token = base.join("config/token");
    std::fs::write(&token, "secret").unwrap();
    let read = json!({ "path": token }).to_string();
    let db = base.join("ledger.db");
    let out = portcullis(&base)
        .args(["call", "read", &read, "--approver", "deny", "--cwd", proj.to_str().unwrap(), "--db"])
        .arg(&db)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("blocked (execution_denied)"), "{said}");
    assert!(
        said.contains("(the Portcullis config folder (tokens, operator credential, runtime file))"),
        "{said}"
    );
    // The prompt of the settings write, refused by the non-interactive approver: the ledger keeps what
    // made the policy ask.
    let out = portcullis(&base)
        .args([
            "call",
            "write",
            &call_args(&call),
            "--approver",
            "deny",
            "--cwd",
            proj.to_str().unwrap(),
            "--db",
        ])
        .arg(&db)
        .output()
        .unwrap();
    assert!(!proj.join(".claude/settings.json").exists(), "{}", String::from_utf8_lossy(&out.stdout));
    let rows = ledger_json(&base, &db);
    let ids: Vec<&str> = rows.iter().map(|r| r["call_id"].as_str().unwrap()).collect();
    let secret = rows.iter().find(|r| r["tool"] == "read").unwrap();
    assert_eq!(secret["decided_by"], "protected_place", "{secret}");
    let write = rows.iter().find(|r| r["tool"] == "write").unwrap();
    let session = write["session_id"].as_str().unwrap();
    let out = portcullis(&base)
        .args(["ledger", "show", "--db"])
        .arg(&db)
        .args(["--session", session, write["call_id"].as_str().unwrap()])
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(
        shown.contains("policy prompt (protected place (executed content): Claude Code settings"),
        "{ids:?} {shown} {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn call_args(call: &str) -> String {
    serde_json::from_str::<Value>(call).unwrap()["arguments"].to_string()
}

fn ledger_json(base: &Path, db: &Path) -> Vec<Value> {
    let out = portcullis(base).args(["ledger", "query", "--json", "--db"]).arg(db).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    v["calls"].as_array().unwrap().clone()
}

/// A command holding an ESC reads the same (`\x1b[2J`) in every CLI place that shows it, and no raw
/// control character reaches the terminal: `policy check` (parts, reasons, files), `call`, `ledger
/// query`, `ledger show`, `policy replay`.
#[test]
fn agent_text_is_escaped_alike_in_every_cli_output() {
    let (_dir, base) = fresh();
    let proj = base.join("proj");
    let cwd = proj.to_str().unwrap();
    let command = "echo \u{1b}[2Jhi > /tmp/outside-\u{1b}[2J";
    let db = base.join("ledger.db");
    let args = json!({ "command": command }).to_string();
    let mut outputs = Vec::new();
    let mut run = |args: &[&str]| {
        let out = portcullis(&base).args(args).output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
        outputs.push((args.join(" "), text.clone()));
        text
    };
    let check = run(&["policy", "check", "--cwd", cwd, "--", command]);
    assert!(check.contains("echo \\x1b[2Jhi"), "{check}");
    let db_arg = db.to_str().unwrap();
    run(&["call", "shell", &args, "--approver", "deny", "--cwd", cwd, "--db", db_arg]);
    run(&["ledger", "query", "--db", db_arg]);
    let show = run(&["ledger", "show", "--db", db_arg, "call-1"]);
    assert!(show.contains("echo \\x1b[2Jhi"), "{show}");
    // A policy that allows it: the replay lists the call as a change, its subject shown.
    let wide = base.join("wide.json");
    let open =
        r#"{"commands":{"default":"allow","rules":[]},"paths":{"roots":[{"path":"/","access":"write"}]}}"#;
    std::fs::write(&wide, open).unwrap();
    let replay = run(&["policy", "replay", "--db", db_arg, "--policy", wide.to_str().unwrap()]);
    assert!(replay.contains("echo \\x1b[2Jhi > /tmp/outside-\\x1b[2J: forbidden -> allow"), "{replay}");
    for (what, text) in &outputs {
        assert!(!text.contains('\u{1b}'), "a raw ESC in `{what}`: {text:?}");
        assert!(!text.contains("echo  [2J"), "the ESC dropped rather than shown in `{what}`: {text}");
    }
}

/// `portcullis serve` on a terminal, a first day (no policy anywhere), the SDK client as the agent: the
/// terminal offers "always" as creating the user's policy, and `a` creates it and lets the call run.
#[test]
fn serve_on_a_terminal_offers_always_on_a_first_day() {
    crate::common::node_modules();
    let (_dir, base) = fresh();
    let (mut child, info) = crate::common::serve_on_terminal(&base, &[("RUST_LOG", "warn")], &[]);
    let token = std::fs::read_to_string(base.join("config/token")).unwrap();
    let operator = std::fs::read_to_string(base.join("config/operator-token")).unwrap();
    let steps = json!([{"op": "call", "name": "shell", "arguments": {"command": "touch served-first-day"}}]);
    let agent = crate::common::agent_in_background(&info, &token, steps);
    crate::common::await_approval(info["api_url"].as_str().unwrap(), &operator, "served-first-day");
    std::thread::sleep(Duration::from_millis(300));
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"a\n").unwrap();
    let out = agent.join().unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["results"][0]["result"]["isError"], false, "{report}");
    assert!(base.join("proj/served-first-day").exists());
    let user_policy = base.join("config/policy.json");
    let text = std::fs::read_to_string(&user_policy).unwrap();
    assert!(
        text.contains("\"pattern\":[\"touch\",\"served-first-day\"]") && text.contains("read-only-basics"),
        "{text}"
    );
    let pid = info["pid"].as_u64().unwrap().to_string();
    std::process::Command::new("kill").args(["-TERM", &pid]).status().unwrap();
    drop(stdin);
    let shown = child.wait_with_output().unwrap();
    let screen = String::from_utf8_lossy(&shown.stdout);
    assert!(
        screen.contains(&format!("[a] always (creates your policy {}", user_policy.display())),
        "{screen}"
    );
}
