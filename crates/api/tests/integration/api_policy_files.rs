//! Policy files through the operator API: each layer with its text and version, drafts checked without
//! saving (where the error is), and saves that are atomic and refused when the file changed on disk or
//! the text is broken — the working policy is never replaced by either.
// Test helpers outside #[test] fns may unwrap and panic.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use portcullis_api::ErrorCode;
use portcullis_api::policy_files::{policy_files, save_policy, validate_policy, version_of};
use std::os::unix::fs::PermissionsExt as _;

const GOOD: &str = r#"{ "commands": { "rules": [
  { "id": "git-status", "pattern": ["git", "status"], "decision": "allow", "match": ["git status -s"] }
], "default": "prompt" } }"#;

#[test]
fn layers_come_with_their_text_and_version() {
    let tmp = tempfile::tempdir().unwrap();
    let user = tmp.path().join("user.json");
    let project = tmp.path().join("proj/.portcullis/policy.json");
    std::fs::create_dir_all(project.parent().unwrap()).unwrap();
    std::fs::write(&user, GOOD).unwrap();
    std::fs::write(&project, r#"{ "commands": { "default": "prompt" } }"#).unwrap();
    let files = policy_files(&[user.clone(), project.clone()], tmp.path()).unwrap();
    assert_eq!(files.len(), 2);
    assert_eq!((files[0].layer, files[0].source.as_str()), (0, user.to_str().unwrap()));
    assert_eq!(files[0].text, GOOD);
    assert_eq!(files[0].version, version_of(GOOD));
    assert!(files[0].editable && files[1].editable);
    assert_eq!(files[1].source, project.display().to_string());
}

#[test]
fn a_draft_is_checked_without_saving_and_says_where_it_is_wrong() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("policy.json");
    let summary = validate_policy(&path, GOOD, tmp.path()).unwrap();
    assert_eq!((summary.rules, summary.examples, summary.tests), (1, 1, 0));
    assert!(!path.exists(), "validating saved something");

    let e = validate_policy(&path, "{ \"commands\": {\n  \"default\": maybe } }", tmp.path()).unwrap_err();
    assert_eq!(e.code, ErrorCode::PolicySyntax);
    assert_eq!((e.details["line"].as_u64(), e.details["column"].as_u64()), (Some(2), Some(14)), "{e:?}");

    // A rule whose own example does not match it.
    let wrong_example = GOOD.replace("git status -s", "git push");
    let e = validate_policy(&path, &wrong_example, tmp.path()).unwrap_err();
    assert_eq!(e.code, ErrorCode::PolicyRule, "{e:?}");
    assert_eq!(e.details["rule"], "git-status");
    assert!(e.details["line"].as_u64().unwrap() >= 2, "{e:?}");
}

#[test]
fn a_save_is_refused_when_the_file_changed_or_the_text_is_broken_and_is_atomic_otherwise() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("policy.json");
    std::fs::write(&path, GOOD).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    let read = version_of(GOOD);

    // Someone else changed it after the editor read it.
    let theirs = GOOD.replace("prompt", "forbidden");
    std::fs::write(&path, &theirs).unwrap();
    let mine = GOOD.replace("\"git-status\"", "\"status\"");
    let e = save_policy(&path, &mine, Some(&read), tmp.path()).unwrap_err();
    assert_eq!(e.code, ErrorCode::PolicyChanged);
    assert_eq!(e.code.http_status(), 409);
    assert_eq!(e.details["version_on_disk"], version_of(&theirs));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), theirs, "a stale save replaced the file");

    // A broken text never replaces the working one, whatever the version.
    let e = save_policy(&path, "{ not json", Some(&version_of(&theirs)), tmp.path()).unwrap_err();
    assert_eq!(e.code, ErrorCode::PolicySyntax);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), theirs);

    // The right version: saved, with the file's permissions, and nothing left beside it.
    let version = save_policy(&path, &mine, Some(&version_of(&theirs)), tmp.path()).unwrap();
    assert_eq!(version, version_of(&mine));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), mine);
    assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
    let beside: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(beside.len(), 1, "{beside:?}");

    // A new file: saved only if none appeared meanwhile.
    let fresh = tmp.path().join("new.json");
    save_policy(&fresh, GOOD, None, tmp.path()).unwrap();
    let e = save_policy(&fresh, GOOD, None, tmp.path()).unwrap_err();
    assert_eq!(e.code, ErrorCode::PolicyChanged);
}
