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
