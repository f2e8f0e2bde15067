//! Issue 53, contained, not asked: a command part of which the judge cannot read (interpreter code)
//! runs without asking, under the strictest reading of the policy, and its effects are what is judged.
//! Through the binary (`portcullis call` with an approver that denies everything, so any prompt would
//! stop it): the programs whose rules prompt or forbid hit a wall that names the rule, the network is
//! closed, `.env` is empty inside, an ordinary new file is kept, and what the policy would have asked
//! about (a deletion where `rm` prompts, a path a deny glob names, executed config, a nested repository)
//! is held for the operator, never in the project. `policy check` shows the walls, and a policy that says
//! `"unknown": "prompt"` asks instead (and the denied command changes nothing).
// Test helpers outside #[test] fns may unwrap and panic.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;
use std::path::{Path, PathBuf};

fn policy(unknown: &str) -> String {
    format!(
        r#"{{
  "commands": {{ "default": "allow", "unknown": "{unknown}", "rules": [
    {{ "id": "push", "pattern": ["git", "push"], "decision": "prompt" }},
    {{ "id": "no-rm", "pattern": ["rm"], "decision": "prompt" }},
    {{ "id": "no-curl", "pattern": ["curl"], "decision": "forbidden" }} ] }},
  "paths": {{ "roots": [ {{ "path": ".", "access": "write" }} ] }},
  "approvals": {{ "timeout_seconds": 4 }}
}}"#
    )
}

/// What the contained code tries: each step prints what became of it.
const CODE: &str = r#"
import os, socket, subprocess
def put(path, text):
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    open(path, "w").write(text)
print("env holds:", repr(open(".env").read()))
subprocess.run(["git", "push"])
subprocess.run(["/usr/lib/git-core/git", "push"])
subprocess.run(["rm", "src/a.txt"])
os.remove("src/b.txt")
put("src/new.txt", "kept\n")
put(".env.local", "TOKEN=planted\n")
# Names put together at run time: nothing a reading of the code could find.
dot = lambda name: "." + name
put(os.path.join(dot("cargo"), "config.toml"), "[build]\nrustc-wrapper = \"/bin/sh\"\n")
repo = os.path.join("sub", "r", dot("git"))
put(os.path.join(repo, "HEAD"), "ref: refs/heads/main\n")
put(os.path.join(repo, "config"), "[core]\n\tfsmonitor = touch /tmp/x\n")
os.makedirs(os.path.join(repo, "objects"), exist_ok=True)
os.makedirs(os.path.join(repo, "refs", "heads"), exist_ok=True)
try:
    socket.create_connection(("127.0.0.1", 9), timeout=2)
    print("network: reached")
except OSError as e:
    print("network: refused", e.errno)
"#;

fn project(unknown: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let proj = base.join("proj");
    std::fs::create_dir_all(proj.join(".portcullis")).unwrap();
    std::fs::create_dir_all(proj.join("src")).unwrap();
    std::fs::create_dir_all(base.join("home")).unwrap();
    std::fs::write(proj.join(".portcullis/policy.json"), policy(unknown)).unwrap();
    std::fs::write(proj.join(".env"), "SECRET=do-not-read\n").unwrap();
    std::fs::write(proj.join("src/a.txt"), "a\n").unwrap();
    std::fs::write(proj.join("src/b.txt"), "b\n").unwrap();
    (dir, base)
}

fn call(base: &Path) -> String {
    let command = format!("/usr/bin/python3 -c '{CODE}'");
    let args = serde_json::json!({ "command": command }).to_string();
    let db = base.join("call.db");
    common::in_project(base, &["call", "shell", &args, "--approver", "deny", "--db", db.to_str().unwrap()])
}

#[test]
fn interpreter_code_runs_contained_and_what_it_did_is_judged() {
    let (_dir, base) = project("contain");
    let proj = base.join("proj");
    let shown = call(&base);
    // It ran without asking (the approver would have denied), inside its walls.
    assert!(
        shown.contains("[ran contained (part of it cannot be read before it runs): network closed"),
        "{shown}"
    );
    assert!(shown.contains("env holds: ''"), "the deny glob's file was readable: {shown}");
    // git's second copy in its own folder is masked too: the wall is printed twice.
    let git_walls = shown.matches("portcullis: [contained: `git` cannot run").count();
    assert_eq!(git_walls, 2, "{shown}");
    for (program, rule) in [("git", "push"), ("rm", "no-rm")] {
        let wall = format!(
            "portcullis: [contained: `{program}` cannot run inside a command that runs contained — rule `{rule}`"
        );
        assert!(shown.contains(&wall), "no wall for {program}: {shown}");
    }
    assert!(shown.contains("network: refused"), "{shown}");
    // Kept: the ordinary new file. Held: the rest, with why.
    assert_eq!(std::fs::read_to_string(proj.join("src/new.txt")).unwrap(), "kept\n");
    assert_eq!(std::fs::read_to_string(proj.join("src/a.txt")).unwrap(), "a\n");
    assert_eq!(std::fs::read_to_string(proj.join("src/b.txt")).unwrap(), "b\n", "{shown}");
    assert!(
        shown.contains("src/b.txt — deleted by a command that ran contained, and rule `no-rm`"),
        "{shown}"
    );
    assert!(shown.contains(".env.local — the deny glob \".env*\" names it"), "{shown}");
    for planted in [".env.local", ".cargo/config.toml", "sub/r/.git/config", "sub/r/.git/HEAD"] {
        assert!(
            std::fs::symlink_metadata(proj.join(planted)).is_err(),
            "{planted} is in the project: {shown}"
        );
    }
    assert_eq!(std::fs::read_to_string(proj.join(".env")).unwrap(), "SECRET=do-not-read\n");
    // The operator sees what is held.
    let held = common::in_project(&base, &["held", "list"]);
    for path in ["src/b.txt", ".env.local", ".cargo/config.toml"] {
        assert!(held.contains(path), "{path} is not held: {held}");
    }
    // The call's record keeps its change set: the listing marks the call contained and held, its
    // filters find it, and `ledger show` lists each change with its size and short digest (the kept
    // file's read from the project, the held one's from the layer held for the operator).
    let db = base.join("call.db");
    let db = db.to_str().unwrap();
    let listed =
        common::in_project(&base, &["ledger", "query", "--db", db, "--changes", "held", "--contained"]);
    assert!(listed.contains("allow (contained)") && listed.contains(" held "), "{listed}");
    let none = common::in_project(&base, &["ledger", "query", "--db", db, "--changes", "discarded,kept"]);
    assert!(none.contains("no calls match"), "{none}");
    let json = common::portcullis(&base)
        .args(["ledger", "query", "--db", db, "--json"])
        .current_dir(&proj)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let page: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let call_id = page["calls"][0]["call_id"].as_str().unwrap().to_owned();
    assert_eq!(page["calls"][0]["changes"], "held", "{page}");
    let record = common::in_project(&base, &["ledger", "show", &call_id, "--db", db]);
    assert!(record.contains("changes: ") && record.contains(" kept, "), "{record}");
    assert!(record.contains("src/new.txt  5 B  sha256 78051faade05"), "{record}");
    assert!(record.contains(".env.local  14 B  sha256 33de8da734e9 — the deny glob"), "{record}");
    assert!(record.contains("src/b.txt — deleted by a command that ran contained"), "{record}");
    // `policy check` shows the decision and the walls.
    let check = common::in_project(&base, &["policy", "check", "--", "python3 -c 'print(1)'"]);
    assert!(check.starts_with("decision: contain"), "{check}");
    for line in ["masked: git (rule `push`", "masked: rm (rule `no-rm`", "hidden by the deny globs:"] {
        assert!(check.contains(line), "{line}: {check}");
    }
    // A command that runs a masked program itself is asked (it could not run contained).
    let git = common::in_project(&base, &["policy", "check", "--", "git log $(git rev-parse HEAD)"]);
    assert!(git.starts_with("decision: prompt"), "{git}");
    assert!(git.contains("it runs `git`, which contained code may not run"), "{git}");
}

#[test]
fn a_policy_that_says_unknown_prompt_asks_and_the_denied_command_changes_nothing() {
    let (_dir, base) = project("prompt");
    let proj = base.join("proj");
    let shown = call(&base);
    assert!(!shown.contains("[ran contained"), "{shown}");
    assert!(shown.contains("denied"), "{shown}");
    assert!(!proj.join("src/new.txt").exists(), "{shown}");
    assert_eq!(std::fs::read_to_string(proj.join("src/b.txt")).unwrap(), "b\n");
    let check = common::in_project(&base, &["policy", "check", "--", "python3 -c 'print(1)'"]);
    assert!(check.starts_with("decision: prompt"), "{check}");
    // The what-if replay of that ledger under a policy that contains: the past prompt would now run.
    let draft = base.join("contain.json");
    std::fs::write(&draft, policy("contain")).unwrap();
    let db = base.join("call.db");
    let replay = common::in_project(
        &base,
        &["policy", "replay", "--db", db.to_str().unwrap(), "--policy", draft.to_str().unwrap()],
    );
    assert!(replay.contains("prompt -> contain: 1"), "{replay}");
    assert!(replay.contains("1 past prompts would now run contained, without asking"), "{replay}");
}
