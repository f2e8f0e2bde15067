//! Path containment and check-then-use: canonical paths in actions, and refusal when a path changed
//! between the policy's evaluation and execution.

use crate::common;
use portcullis_harness::CallErrorCode;

use crate::common::{code, ctx, execute, fixture, write};
use portcullis_coding::{EditTool, ReadTool, WriteTool};
use portcullis_harness::{BlockedReason, RunContext, Tool};
use serde_json::json;
use std::os::unix::fs::symlink;

#[test]
fn dotdot_escaping_the_root_resolves_outside() {
    let fx = fixture();
    let name = fx.outside().file_name().unwrap().to_string_lossy().into_owned();
    let tool = ReadTool::new(fx.workspace.clone());
    let action = tool.describe_action(&json!({"path": format!("../{name}/x.txt")}), &ctx()).unwrap();
    assert_eq!(action.paths, vec![fx.outside().join("x.txt")]);
    assert!(!fx.workspace.is_inside(&action.paths[0]));
    let action = tool.describe_action(&json!({"path": "a/b/../../../x"}), &ctx()).unwrap();
    assert_eq!(action.paths, vec![fx.root().parent().unwrap().join("x")]);
}

#[test]
fn symlink_inside_root_pointing_outside_is_outside() {
    let fx = fixture();
    write(&fx.outside().join("secret.txt"), "s");
    symlink(fx.outside().join("secret.txt"), fx.root().join("link.txt")).unwrap();
    symlink(fx.outside(), fx.root().join("dirlink")).unwrap();
    symlink(fx.outside().join("missing/deeper"), fx.root().join("dangling")).unwrap();
    let tool = WriteTool::new(fx.workspace.clone());
    let describe = |p: &str| tool.describe_action(&json!({"path": p, "content": ""}), &ctx()).unwrap().paths;
    assert_eq!(describe("link.txt"), vec![fx.outside().join("secret.txt")]);
    assert_eq!(describe("dirlink/new/file.txt"), vec![fx.outside().join("new/file.txt")]);
    assert_eq!(describe("dangling/x"), vec![fx.outside().join("missing/deeper/x")]);
}

#[test]
fn nested_new_folders_resolve_inside_the_root() {
    let fx = fixture();
    let tool = WriteTool::new(fx.workspace.clone());
    let action = tool.describe_action(&json!({"path": "a/b/c/new.txt", "content": "x"}), &ctx()).unwrap();
    assert_eq!(action.paths, vec![fx.root().join("a/b/c/new.txt")]);
    assert!(fx.workspace.is_inside(&action.paths[0]));
    assert_eq!(action.operation, "write");
}

#[tokio::test]
async fn relative_paths_resolve_against_the_call_cwd_when_inside_the_root() {
    let fx = fixture();
    write(&fx.root().join("sub/f.txt"), "in sub\n");
    write(&fx.root().join("f.txt"), "at root\n");
    let in_sub = RunContext::new("s", "r").with_cwd(fx.root().join("sub"));
    let result = fx.call_in(&in_sub, "read", json!({"path": "f.txt"})).await;
    assert_eq!(common::output(&result).joined_text(), "in sub\n");
    let elsewhere = RunContext::new("s", "r").with_cwd(fx.outside());
    let result = fx.call_in(&elsewhere, "read", json!({"path": "f.txt"})).await;
    assert_eq!(common::output(&result).joined_text(), "at root\n");
}

#[tokio::test]
async fn nul_bytes_are_refused_before_execution() {
    let fx = fixture();
    let result = fx.call("read", json!({"path": "a\u{0}b"})).await;
    assert_eq!(result.blocked_reason(), Some(BlockedReason::ValidationFailed));
    let direct = ReadTool::new(fx.workspace.clone()).describe_action(&json!({"path": "a\u{0}b"}), &ctx());
    assert_eq!(direct.unwrap_err().code, CallErrorCode::InvalidPath);
}

#[tokio::test]
async fn read_refuses_a_file_swapped_for_a_symlink_after_evaluation() {
    let fx = fixture();
    write(&fx.root().join("f.txt"), "mine");
    write(&fx.outside().join("secret"), "secret");
    let tool = ReadTool::new(fx.workspace.clone());
    let args = json!({"path": "f.txt"});
    let action = tool.describe_action(&args, &ctx()).unwrap();
    std::fs::remove_file(fx.root().join("f.txt")).unwrap();
    symlink(fx.outside().join("secret"), fx.root().join("f.txt")).unwrap();
    let err = execute(&tool, action, args).await.unwrap_err();
    assert_eq!(err.code, CallErrorCode::PathChanged, "{err:?}");
}

#[tokio::test]
async fn read_refuses_a_parent_folder_swapped_for_a_symlink() {
    let fx = fixture();
    write(&fx.root().join("d/f.txt"), "mine");
    write(&fx.outside().join("f.txt"), "secret");
    let tool = ReadTool::new(fx.workspace.clone());
    let args = json!({"path": "d/f.txt"});
    let action = tool.describe_action(&args, &ctx()).unwrap();
    std::fs::remove_dir_all(fx.root().join("d")).unwrap();
    symlink(fx.outside(), fx.root().join("d")).unwrap();
    let err = execute(&tool, action, args).await.unwrap_err();
    assert_eq!(err.code, CallErrorCode::PathChanged, "{err:?}");
}

#[tokio::test]
async fn write_refuses_swaps_of_the_file_or_a_parent() {
    let fx = fixture();
    let tool = WriteTool::new(fx.workspace.clone());
    // The final component becomes a symlink to outside.
    write(&fx.root().join("f.txt"), "old");
    let args = json!({"path": "f.txt", "content": "new"});
    let action = tool.describe_action(&args, &ctx()).unwrap();
    std::fs::remove_file(fx.root().join("f.txt")).unwrap();
    symlink(fx.outside().join("target"), fx.root().join("f.txt")).unwrap();
    let err = execute(&tool, action, args).await.unwrap_err();
    assert_eq!(err.code, CallErrorCode::PathChanged);
    assert!(!fx.outside().join("target").exists());
    // A new parent folder appears as a symlink to outside.
    let args = json!({"path": "new/dir/f.txt", "content": "new"});
    let action = tool.describe_action(&args, &ctx()).unwrap();
    symlink(fx.outside(), fx.root().join("new")).unwrap();
    let err = execute(&tool, action, args).await.unwrap_err();
    assert_eq!(err.code, CallErrorCode::PathChanged);
    assert!(!fx.outside().join("dir").exists(), "no folder was created outside");
}

#[tokio::test]
async fn edit_refuses_a_swapped_file() {
    let fx = fixture();
    write(&fx.root().join("f.txt"), "hello");
    write(&fx.outside().join("f.txt"), "hello");
    let tool = EditTool::new(fx.workspace.clone());
    let args = json!({"path": "f.txt", "old_string": "hello", "new_string": "bye"});
    let action = tool.describe_action(&args, &ctx()).unwrap();
    std::fs::remove_file(fx.root().join("f.txt")).unwrap();
    symlink(fx.outside().join("f.txt"), fx.root().join("f.txt")).unwrap();
    let err = execute(&tool, action, args).await.unwrap_err();
    assert_eq!(err.code, CallErrorCode::PathChanged);
    assert_eq!(std::fs::read_to_string(fx.outside().join("f.txt")).unwrap(), "hello");
}

#[tokio::test]
async fn tool_errors_keep_their_codes_through_the_dispatcher() {
    let fx = fixture();
    let result = fx.call("read", json!({"path": "missing.txt"})).await;
    assert_eq!(code(&result), CallErrorCode::NotFound);
}

/// A folder swapped for a symlink to outside, again and again (an atomic exchange of the real folder
/// and a symlink, racing the tool), never gets a file — final or temporary — outside the project: each
/// write lands in the folder that was opened, or is refused with `path_changed`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn write_under_a_racing_folder_swap_never_writes_outside() {
    use nix::fcntl::{AT_FDCWD, RenameFlags, renameat2};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    let fx = fixture();
    std::fs::create_dir(fx.root().join("d")).unwrap();
    symlink(fx.outside(), fx.root().join("swap")).unwrap();
    let tool = WriteTool::new(fx.workspace.clone());
    let args = json!({"path": "d/f.txt", "content": "inside"});
    let action = tool.describe_action(&args, &ctx()).unwrap();
    assert_eq!(action.paths, vec![fx.root().join("d/f.txt")]);

    let stop = Arc::new(AtomicBool::new(false));
    let (d, swap) = (fx.root().join("d"), fx.root().join("swap"));
    let racer = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut swaps = 0u64;
            while !stop.load(Ordering::Relaxed) {
                renameat2(AT_FDCWD, &d, AT_FDCWD, &swap, RenameFlags::RENAME_EXCHANGE).unwrap();
                swaps += 1;
            }
            swaps
        })
    };
    let (mut written, mut refused, mut other) = (0, 0, Vec::new());
    let began = std::time::Instant::now();
    while written + refused < 3000 && began.elapsed() < std::time::Duration::from_secs(8) {
        match execute(&tool, action.clone(), args.clone()).await {
            Ok(_) => written += 1,
            Err(e) if e.code == CallErrorCode::PathChanged => refused += 1,
            Err(e) => other.push(e),
        }
    }
    stop.store(true, Ordering::Relaxed);
    let swaps = racer.join().unwrap();
    println!("{written} written, {refused} refused, {swaps} swaps");
    let outside: Vec<_> = std::fs::read_dir(fx.outside()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert!(
        outside.is_empty(),
        "written outside the project: {outside:?} ({written} written, {refused} refused, {swaps} swaps)"
    );
    assert!(other.is_empty(), "refused otherwise than path_changed: {other:?}");
    // The real folder (under either name) holds the file and no temp file.
    let real = if fx.root().join("d").is_symlink() { fx.root().join("swap") } else { fx.root().join("d") };
    let names: Vec<_> = std::fs::read_dir(&real).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert!(names.iter().all(|n| n == "f.txt"), "{names:?}");
    assert!(written > 0 && refused > 0, "the race was run both ways ({written} written, {refused} refused)");
}
