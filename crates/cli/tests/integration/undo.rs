//! Issue 53, undo: a confined command's committed changes are put back byte for byte by
//! `portcullis undo <call>` (shown first, done with `--yes`), and refused, naming the path, when a file
//! changed since. Through the binary: `portcullis call` runs the command, `ledger query` names the call.
// Test helpers outside #[test] fns may unwrap and panic.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;
use serde_json::Value;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Output, Stdio};

const POLICY: &str = r#"{
  "commands": { "default": "prompt", "rules": [
    { "id": "edits", "pattern": [["sh", "rm", "mv", "chmod", "mkdir"]], "decision": "allow", "match": ["sh x.sh"] } ] },
  "paths": { "roots": [ { "path": ".", "access": "write" } ] }
}"#;

fn run(base: &Path, args: &[&str]) -> Output {
    common::portcullis(base).args(args).current_dir(base.join("proj")).stdin(Stdio::null()).output().unwrap()
}

/// Runs `command` through `portcullis call`; its session and call id, from the ledger.
fn call(base: &Path, command: &str) -> (String, String) {
    let args = serde_json::json!({ "command": command }).to_string();
    let db = base.join("call.db");
    let out = run(base, &["call", "shell", &args, "--approver", "deny", "--db", db.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let rows = run(base, &["ledger", "query", "--json", "--limit", "1", "--db", db.to_str().unwrap()]);
    let rows: Value = serde_json::from_slice(&rows.stdout).unwrap();
    let row = &rows["calls"][0];
    (row["session_id"].as_str().unwrap().to_owned(), row["call_id"].as_str().unwrap().to_owned())
}

/// Every path under `dir` with its kind, mode and bytes. Not `.portcullis/changes`: the layer folder a
/// launcher started ahead made for its next command is left there when `portcullis call` exits (the next
/// review sweeps it); it is Portcullis's, not the project's.
fn tree(dir: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(d) = pending.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let rel = p.strip_prefix(dir).unwrap().display().to_string();
            if rel.starts_with(".portcullis/changes") {
                continue;
            }
            let meta = std::fs::symlink_metadata(&p).unwrap();
            let mode = meta.permissions().mode() & 0o777;
            if meta.is_dir() {
                out.push((rel, format!("dir {mode:o}")));
                pending.push(p);
            } else if meta.file_type().is_symlink() {
                out.push((rel, format!("link {}", std::fs::read_link(&p).unwrap().display())));
            } else {
                out.push((rel, format!("file {mode:o} {:?}", std::fs::read(&p).unwrap())));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn undo_puts_a_commands_changes_back_byte_for_byte_and_refuses_after_a_change() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let proj = base.join("proj");
    std::fs::create_dir_all(proj.join(".portcullis")).unwrap();
    std::fs::create_dir_all(proj.join("docs/old")).unwrap();
    std::fs::create_dir_all(base.join("home")).unwrap();
    std::fs::write(proj.join(".portcullis/policy.json"), POLICY).unwrap();
    std::fs::write(proj.join("main.rs"), "fn main() {}\n").unwrap();
    std::fs::write(proj.join("docs/old/a.md"), "# a\n").unwrap();
    std::fs::write(proj.join("run.sh"), [0u8, 1, 2, 255]).unwrap();
    let before = tree(&proj);
    let script = "printf 'fn main() { changed(); }\\n' > main.rs; rm -r docs/old; mkdir new; \
                  printf n > new/n.txt; chmod 700 run.sh";
    std::fs::write(proj.join("x.sh"), script).unwrap();
    let (_, call_id) = call(&base, "sh x.sh");
    let changed = tree(&proj);
    assert_ne!(changed, before);
    assert!(!proj.join("docs/old").exists() && proj.join("new/n.txt").exists());
    let db = base.join("call.db");
    let db = db.to_str().unwrap();

    // Shown, not done, without --yes.
    let shown = run(&base, &["undo", &call_id, "--db", db]);
    let text = String::from_utf8_lossy(&shown.stdout).into_owned();
    assert_eq!(shown.status.code(), Some(1), "{text}");
    assert!(text.contains("main.rs: a file now, a file again") && text.contains("pass --yes"), "{text}");
    assert_eq!(tree(&proj), changed);

    let done = run(&base, &["undo", &call_id, "--db", db, "--yes"]);
    assert!(
        done.status.success(),
        "{}{}",
        String::from_utf8_lossy(&done.stdout),
        String::from_utf8_lossy(&done.stderr)
    );
    // x.sh was written by the test, not the command: the tree is the one before, byte for byte.
    let mut after = tree(&proj);
    after.retain(|(p, _)| p != "x.sh");
    assert_eq!(after, before);
    // Once only.
    let again = run(&base, &["undo", &call_id, "--db", db, "--yes"]);
    assert!(String::from_utf8_lossy(&again.stderr).contains("undone already"));

    // Another command; the operator's editor then saves a file it wrote: refused, naming the file,
    // nothing touched.
    let (session, call_id) = call(&base, "sh x.sh");
    std::fs::write(proj.join("new/n.txt"), "the operator's").unwrap();
    let edited = tree(&proj);
    // Two sessions of `portcullis call` have this call id now: the session is asked for.
    let ambiguous = run(&base, &["undo", &call_id, "--db", db]);
    assert!(String::from_utf8_lossy(&ambiguous.stderr).contains("--session"));
    let refused = run(&base, &["undo", &call_id, "--session", &session, "--db", db, "--yes"]);
    let said = String::from_utf8_lossy(&refused.stderr).into_owned();
    assert_eq!(refused.status.code(), Some(1), "{said}");
    assert!(said.contains("changed since") && said.contains("new/n.txt"), "{said}");
    assert_eq!(tree(&proj), edited);
}
