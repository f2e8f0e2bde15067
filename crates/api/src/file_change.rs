//! What a waiting `write` or `edit` call would do to its file, shown before an operator answers: the
//! file as it is and as the call would leave it, as a diff. The hub reads the file for the operator's
//! eyes only (the agent never sees this), bounded in size, and passes both sides through the hub's
//! redactor so a secret in the file is not put on screen.

use super::line_diff::{DiffLine, line_diff};
use portcullis_harness::{ExecutionAction, Redactor};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Files larger than this are not read for a preview.
pub const MAX_PREVIEW_BYTES: u64 = 512 * 1024;

/// The change a file tool's call would make.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileChange {
    /// The canonical path the tool resolved.
    pub path: String,
    /// The file exists now (else the call creates it).
    pub exists: bool,
    /// The lines that change, with context; empty when there is nothing to show (see `note`).
    pub diff: Vec<DiffLine>,
    /// Why the diff is incomplete or what the call will do instead (too large, not text, the edit's text
    /// not found once).
    pub note: Option<String>,
}

/// The change the built-in `write` or `edit` tool would make with `arguments`; `None` for other tools.
pub fn file_change(
    tool: &str,
    arguments: &Value,
    action: &ExecutionAction,
    redactor: Option<&Redactor>,
) -> Option<FileChange> {
    if tool != "write" && tool != "edit" {
        return None;
    }
    let path = action.paths.first()?;
    let text = |key: &str| arguments.get(key).and_then(Value::as_str).map(str::to_owned);
    let shown = path.display().to_string();
    let change = |exists: bool, diff: Vec<DiffLine>, note: Option<String>| {
        Some(FileChange { path: shown.clone(), exists, diff, note })
    };
    let before = match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return change(false, Vec::new(), Some(format!("the file cannot be read: {e}"))),
        Ok(meta) if !meta.is_file() => return change(true, Vec::new(), Some("not a regular file".into())),
        Ok(meta) if meta.len() > MAX_PREVIEW_BYTES => {
            return change(
                true,
                Vec::new(),
                Some(format!(
                    "the file has {} bytes; only files up to {MAX_PREVIEW_BYTES} are shown",
                    meta.len()
                )),
            );
        }
        Ok(_) => match std::fs::read(path).map(String::from_utf8) {
            Ok(Ok(text)) => Some(text),
            Ok(Err(_)) => return change(true, Vec::new(), Some("the file is not UTF-8 text".into())),
            Err(e) => return change(true, Vec::new(), Some(format!("the file cannot be read: {e}"))),
        },
    };
    let exists = before.is_some();
    let before = redacted(before.unwrap_or_default(), redactor);
    let (after, note) = if tool == "write" {
        (text("content").unwrap_or_default(), None)
    } else {
        let (old, new) = (text("old_string").unwrap_or_default(), text("new_string").unwrap_or_default());
        match before.matches(old.as_str()).count() {
            1 => (before.replacen(old.as_str(), &new, 1), None),
            0 if !exists => (String::new(), Some("the file does not exist; the edit will fail".into())),
            n => (before.clone(), Some(format!("the text to replace occurs {n} times; the edit will fail"))),
        }
    };
    // Arguments reach the operator redacted already; the after side is redacted again as a whole.
    let after = redacted(after, redactor);
    change(exists, line_diff(&before, &after), note)
}

/// What a change held for the operator would do to the real tree: `real` as it is now and `held` as the
/// command left it in its layer (a whiteout or nothing there: deleted), as the write tool's diff shows it.
pub fn held_change(
    real: &std::path::Path,
    held: &std::path::Path,
    redactor: Option<&Redactor>,
) -> FileChange {
    let shown = real.display().to_string();
    let change = |exists: bool, diff: Vec<DiffLine>, note: Option<String>| FileChange {
        path: shown.clone(),
        exists,
        diff,
        note,
    };
    let (before, exists) = match side(real) {
        Side::Text(t) => (t, true),
        Side::Missing => (String::new(), false),
        Side::Shown(why) => return change(true, Vec::new(), Some(format!("now: {why}"))),
    };
    let after = match side(held) {
        Side::Text(t) => t,
        Side::Missing => {
            return change(exists, line_diff(&redacted(before, redactor), ""), Some("deleted".into()));
        }
        Side::Shown(why) if why.starts_with("a deletion") => {
            return change(exists, line_diff(&redacted(before, redactor), ""), Some("deleted".into()));
        }
        Side::Shown(why) => return change(exists, Vec::new(), Some(why)),
    };
    change(exists, line_diff(&redacted(before, redactor), &redacted(after, redactor)), None)
}

/// One side of a held change.
enum Side {
    Text(String),
    Missing,
    /// Not shown as lines, and why.
    Shown(String),
}

fn side(path: &std::path::Path) -> Side {
    use std::os::unix::fs::FileTypeExt;
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Side::Missing,
        Err(e) => Side::Shown(format!("it cannot be read: {e}")),
        // The overlay's mark of a deleted name: a character device 0:0.
        Ok(meta) if meta.file_type().is_char_device() => Side::Shown("a deletion".into()),
        Ok(meta) if meta.is_dir() => Side::Shown("a folder".into()),
        Ok(meta) if meta.file_type().is_symlink() => Side::Shown(format!(
            "a link to {}",
            std::fs::read_link(path).map(|t| t.display().to_string()).unwrap_or_default()
        )),
        Ok(meta) if meta.len() > MAX_PREVIEW_BYTES => {
            Side::Shown(format!("{} bytes; only files up to {MAX_PREVIEW_BYTES} are shown", meta.len()))
        }
        Ok(_) => match std::fs::read(path).map(String::from_utf8) {
            Ok(Ok(text)) => Side::Text(text),
            Ok(Err(_)) => Side::Shown("not UTF-8 text".into()),
            Err(e) => Side::Shown(format!("it cannot be read: {e}")),
        },
    }
}

fn redacted(text: String, redactor: Option<&Redactor>) -> String {
    redactor.and_then(|r| r.redact_str(&text)).unwrap_or(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use portcullis_harness::ActionKind;
    use serde_json::json;

    fn write_action(path: &std::path::Path) -> ExecutionAction {
        let mut action = ExecutionAction::new(ActionKind::Write, "write");
        action.paths = vec![path.to_path_buf()];
        action
    }

    /// A secret in the file is not put on screen, on either side of the diff.
    #[test]
    fn secrets_in_the_file_are_redacted_on_both_sides() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("env");
        std::fs::write(&path, "TOKEN=s3cr3t-value-123456\nA=1\n").unwrap();
        let redactor = Redactor::builder().secrets(["s3cr3t-value-123456"]).build();
        let args = json!({"path": "env", "content": "TOKEN=s3cr3t-value-123456\nA=2\n"});
        let change = file_change("write", &args, &write_action(&path), Some(&redactor)).unwrap();
        let shown = serde_json::to_string(&change.diff).unwrap();
        assert!(!shown.contains("s3cr3t"), "{shown}");
        assert!(shown.contains("A=2"), "{shown}");
    }

    #[test]
    fn a_held_change_is_shown_as_the_diff_from_the_real_file_to_the_held_one() {
        let dir = tempfile::tempdir().unwrap();
        let (real, held) = (dir.path().join("real"), dir.path().join("held"));
        std::fs::write(&real, "a\nb\n").unwrap();
        std::fs::write(&held, "a\nc\n").unwrap();
        let change = held_change(&real, &held, None);
        assert!(change.exists && change.note.is_none());
        assert!(change.diff.iter().any(|l| matches!(l, DiffLine::Added { text, .. } if text == "c")));
        assert!(change.diff.iter().any(|l| matches!(l, DiffLine::Removed { text, .. } if text == "b")));
        let created = held_change(&dir.path().join("none"), &held, None);
        assert!(!created.exists);
        let deleted = held_change(&real, &dir.path().join("gone"), None);
        assert_eq!(deleted.note.as_deref(), Some("deleted"));
        assert!(deleted.diff.iter().all(|l| !matches!(l, DiffLine::Added { .. })));
    }

    #[test]
    fn an_edit_whose_text_is_not_found_once_says_it_will_fail() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.txt");
        std::fs::write(&path, "x\nx\n").unwrap();
        let args = json!({"path": "f.txt", "old_string": "x", "new_string": "y"});
        let change = file_change("edit", &args, &write_action(&path), None).unwrap();
        assert!(change.diff.is_empty());
        assert!(change.note.unwrap().contains("occurs 2 times"));
        let once = json!({"path": "f.txt", "old_string": "x\nx", "new_string": "x\ny"});
        let change = file_change("edit", &once, &write_action(&path), None).unwrap();
        assert!(change.diff.iter().any(|l| matches!(l, DiffLine::Added { text, .. } if text == "y")));
        assert!(file_change("shell", &args, &write_action(&path), None).is_none());
    }
}
