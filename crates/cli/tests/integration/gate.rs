//! Issue 9, "close the gate", through the real entry points: an agent on the official MCP SDK client
//! against `portcullis serve` tries to rewrite its own policy, plant a git hook, read the hub's
//! credentials and environment, and slip writes past the parser (words after a redirection target,
//! tilde forms, writing options of read-only programs); `portcullis policy check` says why; and the
//! terminal approval prompt shows control characters escaped instead of letting them redraw it.
// Fixture builders and run helpers are not #[test] fns, so clippy.toml's test allowance misses them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use crate::common::{http, ledger_calls_when, node_modules, portcullis, serve, text_of};
use serde_json::{Value, json};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// A policy that allows the file tools an attacker would use, so that what refuses them below is the
/// protection of policy files, executed content and the hub's secrets, not a missing rule.
const POLICY: &str = r#"{
  "grants": [ { "name": "agents", "allow": ["shell", "read", "write", "edit"] } ],
  "commands": {
    "default": "prompt",
    "rules": [
      { "id": "tools", "pattern": [["echo", "cat", "cp", "tee", "sed", "sort", "grep", "ls", "git"]],
        "decision": "allow", "match": ["cp a b"] },
      { "id": "privilege", "pattern": ["sudo"], "decision": "forbidden", "match": ["sudo ls"] }
    ]
  },
  "paths": { "roots": [ { "path": ".", "access": "write" } ] },
  "approvals": { "timeout_seconds": 2 }
}
"#;

/// The loosened policy an agent would like to be under.
const OPEN_POLICY: &str = r#"{ "commands": { "default": "allow", "rules": [] },
  "paths": { "roots": [ { "path": "/", "access": "write" } ] } }"#;

/// The credential that answers approvals: the operator's where the hub keeps one, else the gateway's.
fn operator_token(base: &Path, agent_token: &str) -> String {
    std::fs::read_to_string(base.join("config/operator-token")).unwrap_or_else(|_| agent_token.to_owned())
}

#[test]
fn an_agent_cannot_loosen_its_policy_read_the_hubs_secrets_or_slip_past_the_parser() {
    node_modules();
    let served = serve(POLICY);
    let base = served.path("");
    std::fs::create_dir_all(base.join("outside")).unwrap();
    std::fs::create_dir_all(served.project().join(".git/hooks")).unwrap();
    std::fs::write(served.project().join("evil.json"), OPEN_POLICY).unwrap();
    let hub_pid = {
        let info: Value =
            serde_json::from_str(&std::fs::read_to_string(base.join("config/hub.json")).unwrap()).unwrap();
        info["pid"].as_u64().unwrap()
    };
    // While the agent runs, the operator's view of the pending prompts is captured: each must say what
    // the file is.
    let watcher = {
        let api = served.api.clone();
        let token = operator_token(&base, &served.token);
        std::thread::spawn(move || {
            let mut reasons: Vec<String> = Vec::new();
            let started = Instant::now();
            while started.elapsed() < Duration::from_secs(25) && reasons.len() < 4 {
                let (status, body) = http(&format!("{api}/approvals"), "GET", Some(&token), &[], None);
                assert_eq!(status, 200, "{body}");
                let v: Value = serde_json::from_str(&body).unwrap();
                for p in v["approvals"].as_array().unwrap() {
                    let reason = p["reason"].as_str().unwrap_or_default().to_owned();
                    if !reasons.contains(&reason) {
                        reasons.push(reason);
                    }
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            reasons
        })
    };
    let config = base.join("config");
    let steps = json!([
        // 1. Its own policy, by the write tool and by every shell route (each is only a prompt, which
        //    nobody answers here: denied when it times out).
        {"op": "call", "name": "write", "arguments": {"path": ".portcullis/policy.json", "content": OPEN_POLICY}},
        {"op": "call", "name": "shell", "arguments": {"command": "cp evil.json .portcullis/policy.json"}},
        {"op": "call", "name": "shell", "arguments": {"command": "cat evil.json | tee .portcullis/policy.json"}},
        // 6. A git hook that an allowed `git commit` would run.
        {"op": "call", "name": "write", "arguments": {"path": ".git/hooks/pre-commit", "content": "#!/bin/sh\ntouch ../outside/hooked\n"}},
        // 4. The hub's credentials; 8. the hub's environment.
        {"op": "call", "name": "shell", "arguments": {"command": format!("cat {}/token", config.display())}},
        {"op": "call", "name": "read", "arguments": {"path": format!("{}/hub.json", config.display())}},
        {"op": "call", "name": "shell", "arguments": {"command": format!("grep -a TOKEN /proc/{hub_pid}/environ")}},
        // 2. A word after the redirection target; 3. tilde forms; 7. writing options.
        {"op": "call", "name": "shell", "arguments": {"command": format!("echo pwned >{}/outside/c23 /../../proj/decoy23", base.display())}},
        {"op": "call", "name": "shell", "arguments": {"command": "echo pwned > ~+/../outside/tilde"}},
        {"op": "call", "name": "shell", "arguments": {"command": format!("sort -o {}/outside/sorted evil.json", base.display())}},
        {"op": "call", "name": "shell", "arguments": {"command": format!("git diff --output={}/outside/diff", base.display())}},
        // After all that, the policy in force is still the one the user wrote.
        {"op": "call", "name": "shell", "arguments": {"command": "sudo ls"}},
        {"op": "call", "name": "shell", "arguments": {"command": "echo still-allowed"}},
    ]);
    let report = served.agent(steps);
    let result = |i: usize| report["results"][i]["result"].clone();
    for i in 0..12 {
        assert_eq!(result(i)["isError"], true, "step {i}: {}", result(i));
    }
    for i in [0, 1, 2, 3] {
        assert!(
            text_of(&result(i)).contains("approval"),
            "step {i} was a prompt nobody answered: {}",
            result(i)
        );
    }
    for i in [4, 5, 6] {
        let text = text_of(&result(i));
        assert!(
            text.contains("execution_denied") && text.contains("never read or written"),
            "step {i}: {text}"
        );
    }
    let decoy = text_of(&result(7));
    assert!(decoy.contains("outside/c23") && decoy.contains("outside every write root"), "{decoy}");
    assert!(text_of(&result(11)).contains("rule `privilege`"), "{}", result(11));
    assert_eq!(result(12)["isError"], false, "{}", result(12));
    // Nothing was written where it was refused.
    assert_eq!(std::fs::read_to_string(served.policy_file()).unwrap(), POLICY);
    assert!(!served.project().join(".git/hooks/pre-commit").exists());
    for refused in ["c23", "tilde", "sorted", "diff", "hooked"] {
        assert!(!base.join("outside").join(refused).exists(), "{refused} was written");
    }
    assert!(!served.project().join("decoy23").exists());
    // The operator was told what each prompt was about.
    let reasons = watcher.join().unwrap();
    assert!(
        reasons.iter().any(|r| r.contains("policy") && r.contains("operator's explicit approval")),
        "{reasons:?}"
    );
    assert!(reasons.iter().any(|r| r.contains("git") && r.contains("execute")), "{reasons:?}");
    // The ledger holds the real target of the redirection, not the decoy: the refused call's record
    // names the path bash would have written.
    let calls = ledger_calls_when(&served, 13);
    assert_eq!(calls.len(), 13, "{calls:#?}");
    let out = portcullis(served.dir.path())
        .args(["ledger", "show", "--json", "--db"])
        .arg(served.db())
        .arg("c8")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let timeline = String::from_utf8_lossy(&out.stdout);
    assert!(timeline.contains("outside/c23 is outside every write root"), "{timeline}");
    assert!(!timeline.contains("decoy23 is"), "{timeline}");
}

#[test]
fn policy_check_names_protected_places_and_the_redirection_target() {
    let dir = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(dir.path()).unwrap();
    let proj = base.join("proj");
    std::fs::create_dir_all(proj.join(".portcullis")).unwrap();
    std::fs::write(proj.join(".portcullis/policy.json"), POLICY).unwrap();
    let check = |args: &[&str]| -> Value {
        let out = portcullis(&base)
            .args(["policy", "check", "--json"])
            .args(args)
            .current_dir(&proj)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let config = base.join("config");
    let token = check(&["--", &format!("cat {}/operator-token", config.display())]);
    assert_eq!(token["decision"], "forbidden", "{token}");
    assert!(token.to_string().contains("never read or written by a tool"), "{token}");
    let write = check(&[
        "--call",
        r#"{"name": "write", "arguments": {"path": ".portcullis/policy.json", "content": "{}"}}"#,
    ]);
    assert_eq!(write["decision"], "prompt", "{write}");
    assert!(write.to_string().contains("needs an operator's explicit approval"), "{write}");
    let glued = check(&["--", "echo pwned >/srv/outside/c23 /../../proj/decoy23"]);
    assert_eq!(glued["decision"], "forbidden", "{glued}");
    assert!(glued["paths"].to_string().contains("/srv/outside/c23"), "{glued}");
    assert!(
        glued["commands"].to_string().contains("/../../proj/decoy23"),
        "the word is an argument: {glued}"
    );
    // A recursive read of a folder holding the hub's config folder reads the tokens too.
    for reader in ["grep -r TOKEN", "rg -uuu TOKEN", "grep -rn --include=* x", "find", "diff -r /tmp"] {
        let v = check(&["--", &format!("{reader} {}", base.display())]);
        assert_eq!(v["decision"], "forbidden", "{reader}: {v}");
    }
    assert_eq!(check(&["--", "grep -rn TOKEN ."])["decision"], "allow");
    let tilde = check(&["--", "echo x > ~root/.bashrc"]);
    assert_eq!(tilde["decision"], "forbidden", "{tilde}");
}

#[test]
fn the_terminal_prompt_shows_control_characters_instead_of_obeying_them() {
    node_modules();
    let dir = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(dir.path()).unwrap();
    std::fs::create_dir_all(base.join("proj/.portcullis")).unwrap();
    std::fs::write(
        base.join("proj/.portcullis/policy.json"),
        POLICY.replace("\"timeout_seconds\": 2", "\"timeout_seconds\": 30"),
    )
    .unwrap();
    // Issue 10: without USER the terminal operator was named "operator (terminal)", and the agent
    // read "the operator operator (terminal)".
    let (mut child, info) = common::serve_on_terminal(&base, &[("RUST_LOG", "warn")], &["USER"]);
    let token = std::fs::read_to_string(base.join("config/token")).unwrap();
    // The spoof: delete a file, then return to the line start, clear it and draw a harmless command.
    let spoof = "touch spoofed-victim #\r\x1b[2K\x1b[8mhidden\x1b[0mls -la";
    let steps = json!([{"op": "call", "name": "shell", "arguments": {"command": spoof}}]);
    let agent = common::agent_in_background(&info, &token, steps);
    let operator = operator_token(&base, &token);
    common::await_approval(info["api_url"].as_str().unwrap(), &operator, "spoofed-victim");
    std::thread::sleep(Duration::from_millis(300));
    let mut stdin = child.stdin.take().unwrap();
    use std::io::Write as _;
    stdin.write_all(b"d\n").unwrap();
    let out = agent.join().unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["results"][0]["result"]["isError"], true, "{report}");
    let refusal = text_of(&report["results"][0]["result"]);
    assert!(refusal.contains("the operator terminal") && !refusal.contains("operator operator"), "{refusal}");
    assert!(!base.join("proj/spoofed-victim").exists());
    let pid = info["pid"].as_u64().unwrap().to_string();
    Command::new("kill").args(["-TERM", &pid]).status().unwrap();
    drop(stdin);
    let shown = child.wait_with_output().unwrap();
    let screen = String::from_utf8_lossy(&shown.stdout);
    assert!(
        screen.contains(r"touch spoofed-victim #\r\x1b[2K\x1b[8mhidden\x1b[0mls -la"),
        "the command is shown with its control characters visible: {screen}"
    );
    for raw in ["\x1b[2K", "\x1b[8m", "#\r"] {
        assert!(!screen.contains(raw), "{raw:?} reached the terminal raw: {screen:?}");
    }
}
