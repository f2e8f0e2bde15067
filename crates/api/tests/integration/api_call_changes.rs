//! Issue 53 through the command table: a call's undo plan and held changes (`call_changes`), the undo
//! (`undo_call`: byte for byte, refused with `changed_since_commit` naming the path, once only) and
//! keeping or discarding what is held (`answer_held`). A test binary is no sandbox launcher, so the
//! commit's undo record and the held layer are made here with the sandbox crate's own functions, for
//! calls the hub really recorded.
// Test helpers outside #[test] fns may unwrap and panic.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;
use portcullis_api::call_changes::{HeldAnswer, PathKind, UndoStep};
use portcullis_api::{Client, Connected, ErrorCode, HubState, Operator, OperatorApi};
use portcullis_hub::Hub;
use portcullis_sandbox::overlay::Layer;
use portcullis_sandbox::undo::{Before, UndoTarget};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};
use tokio_util::sync::CancellationToken;

const POLICY: &str =
    r#"{ "commands": { "rules": [ { "id": "echo", "pattern": ["echo"], "decision": "allow" } ] } }"#;

/// Runs `echo` as call `id` of session `s` and waits until the ledger lists it.
async fn recorded_call(hub: &Hub, dir: &Path, id: &str) {
    let arguments = serde_json::json!({ "command": format!("echo {id}") });
    hub.call("s", id, "shell", arguments, "tester", CancellationToken::new()).await;
    for _ in 0..200 {
        let reader = portcullis_ledger::LedgerReader::open(dir.join("ledger.db")).unwrap();
        if reader.timeline(id, Some("s")).is_ok_and(|t| !t.records.is_empty()) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("call {id} never reached the ledger");
}

/// What a commit of call `id` does: `write` run between the record's two halves, as the hub's review
/// does around its renames.
fn commit(dir: &Path, id: &str, paths: &[&str], write: impl FnOnce()) {
    let target = UndoTarget::new(&dir.join("undo"), "s", id);
    let mut before = Before::new(&target);
    before.capture(&dir.join("proj"), &paths.iter().map(PathBuf::from).collect::<Vec<_>>());
    write();
    before.finish().unwrap();
}

/// Holds `files` (relative path, bytes, why) for call `id` as a review does: in a layer's upper folder,
/// moved aside with its note.
fn hold(dir: &Path, id: &str, files: &[(&str, &str, &str)]) {
    let root = dir.join("proj");
    let layer = Layer { root: root.clone(), folder: root.join(format!(".portcullis/changes/tmp-{id}")) };
    for (path, bytes, _) in files {
        let file = layer.upper().join(path);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, bytes).unwrap();
    }
    std::fs::create_dir_all(layer.folder.join("work")).unwrap();
    let why: Vec<(PathBuf, String)> =
        files.iter().map(|(p, _, w)| (PathBuf::from(p), w.to_string())).collect();
    let started = SystemTime::now() - Duration::from_secs(5);
    portcullis_sandbox::held::hold(&layer, &format!("s__{id}"), &why, started).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn undo_puts_a_file_back_byte_for_byte_once_and_refuses_after_a_change() {
    let (_tmp, dir) = common::folder();
    let hub = common::hub(&dir, POLICY).await;
    let api = OperatorApi::new(hub.clone());
    let operator = Operator::named("tester");
    let notes = dir.join("proj/notes.txt");
    let old: &[u8] = b"the operator's notes\n\x00\xff";
    std::fs::write(&notes, old).unwrap();

    recorded_call(&hub, &dir, "c1").await;
    commit(&dir, "c1", &["notes.txt"], || std::fs::write(&notes, "overwritten by the agent\n").unwrap());
    let changes = api.call_changes("c1", "s").unwrap();
    assert!(changes.undo.possible && changes.undo.refusal.is_none(), "{changes:?}");
    let step = UndoStep { path: notes.display().to_string(), now: PathKind::File, again: PathKind::File };
    assert_eq!(changes.undo.steps, std::slice::from_ref(&step));
    assert_eq!(
        step.line(),
        format!("{}: a file now, a file again", notes.display()),
        "as `portcullis undo` prints"
    );
    assert!(changes.held.is_empty());

    let done = api.undo_call("c1", "s", &operator).unwrap();
    assert_eq!(done.steps, [step]);
    assert_eq!(std::fs::read(&notes).unwrap(), old, "back byte for byte");
    // Once only.
    let again = api.undo_call("c1", "s", &operator).unwrap_err();
    assert_eq!(again.code, ErrorCode::UndoneAlready, "{again:?}");
    let plan = api.call_changes("c1", "s").unwrap().undo;
    assert!(!plan.possible && plan.steps.is_empty());
    assert_eq!(plan.refusal.map(|e| e.code), Some(ErrorCode::UndoneAlready));

    // Another commit; the operator's editor saves the file meanwhile: refused, naming it, nothing touched.
    recorded_call(&hub, &dir, "c2").await;
    commit(&dir, "c2", &["notes.txt"], || std::fs::write(&notes, "the agent again\n").unwrap());
    std::fs::write(&notes, "the operator's edit, longer than the agent's\n").unwrap();
    let plan = api.call_changes("c2", "s").unwrap().undo;
    let refusal = plan.refusal.expect("refused");
    assert!(!plan.possible);
    assert_eq!(refusal.code, ErrorCode::ChangedSinceCommit);
    let refused = api.undo_call("c2", "s", &operator).unwrap_err();
    assert_eq!(refused.code, ErrorCode::ChangedSinceCommit);
    assert!(
        refused.message.contains("changed since") && refused.message.contains("notes.txt"),
        "{}",
        refused.message
    );
    assert_eq!(refused.details["paths"][0], notes.display().to_string());
    assert_eq!(refused.details["call_id"], "c2");
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "the operator's edit, longer than the agent's\n");

    // A call whose command committed nothing: nothing to undo. A call the ledger never saw: not found.
    recorded_call(&hub, &dir, "c3").await;
    let plan = api.call_changes("c3", "s").unwrap().undo;
    assert_eq!(plan.refusal.map(|e| e.code), Some(ErrorCode::NothingToUndo));
    assert_eq!(api.undo_call("c3", "s", &operator).unwrap_err().code, ErrorCode::NothingToUndo);
    assert_eq!(api.call_changes("c3", "another-session").unwrap_err().code, ErrorCode::CallNotFound);
    assert_eq!(api.call_changes("never", "s").unwrap_err().code, ErrorCode::CallNotFound);
    hub.close().await.unwrap();
}

/// The commands through the table's [`Client`], as the window, the console and `portcullis api` call
/// them: held changes listed (agent text as it is), kept, then answered already; another call's
/// discarded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn held_changes_are_listed_kept_and_discarded_through_the_table() {
    let (_tmp, dir) = common::folder();
    let hub = common::hub(&dir, POLICY).await;
    let state = HubState::Running {
        mcp_url: String::new(),
        token_file: String::new(),
        project: dir.join("proj").display().to_string(),
        ledger: dir.join("ledger.db").display().to_string(),
    };
    let client = Client::new(
        Connected::Hub { api: OperatorApi::new(hub.clone()), state },
        Operator::named("tester"),
        None,
    );
    let proj = dir.join("proj");
    recorded_call(&hub, &dir, "c1").await;
    recorded_call(&hub, &dir, "c2").await;
    let why = "executed config: cargo runs it on the next build \u{1b}[31m";
    hold(&dir, "c1", &[(".cargo/config.toml", "[build]\nrustc = \"evil\"\n", why)]);
    hold(&dir, "c2", &[("sub/.git/HEAD", "ref: refs/heads/main\n", "a repository look-alike")]);

    let changes = client.call_changes("c1".into(), "s".into()).await.unwrap();
    assert_eq!(changes.held.len(), 1, "{changes:?}");
    assert_eq!(changes.held[0].path, proj.join(".cargo/config.toml").display().to_string());
    assert_eq!(changes.held[0].why, why, "agent text as it is: front ends escape it");
    assert_eq!(changes.undo.refusal.map(|e| e.code), Some(ErrorCode::NothingToUndo));
    assert!(!proj.join(".cargo/config.toml").exists(), "held, not in the project");

    let kept = client.answer_held("c1".into(), "s".into(), HeldAnswer::Keep).await.unwrap();
    assert!(kept.kept.contains(&proj.join(".cargo/config.toml").display().to_string()), "{kept:?}");
    assert!(kept.not_kept.is_empty() && kept.discarded == 0, "{kept:?}");
    assert_eq!(
        std::fs::read_to_string(proj.join(".cargo/config.toml")).unwrap(),
        "[build]\nrustc = \"evil\"\n"
    );
    assert!(client.call_changes("c1".into(), "s".into()).await.unwrap().held.is_empty());
    let twice = client.answer_held("c1".into(), "s".into(), HeldAnswer::Keep).await.unwrap_err();
    assert_eq!(twice.code, ErrorCode::NoHeldChanges, "{twice:?}");

    let discarded = client.answer_held("c2".into(), "s".into(), HeldAnswer::Discard).await.unwrap();
    assert_eq!((discarded.discarded, discarded.kept.len()), (1, 0));
    assert!(!proj.join("sub").exists());
    assert!(client.call_changes("c2".into(), "s".into()).await.unwrap().held.is_empty());
    // The table names the commands as the window sends them.
    let names: Vec<&str> = portcullis_api::COMMANDS.iter().map(|c| c.name).collect();
    for name in ["call_changes", "undo_call", "answer_held"] {
        assert!(names.contains(&name), "{name}");
    }
    hub.close().await.unwrap();
}
