//! `portcullis held`: the changes confined commands made that the review did not commit — executed
//! config, a repository look-alike, a file changed meanwhile — held in a project for the operator, who
//! lists them, keeps them (committed as any change is) or discards them. A call is named by its id (and
//! its session when several have that id).

use portcullis_sandbox::held::{self, Held};
use portcullis_sandbox::undo::UndoTarget;
use std::path::{Path, PathBuf};

/// The held changes of `root`, one line each: the call, the path and why it was held.
pub fn held_lines(root: &Path) -> Vec<String> {
    let visible = |t: &str| portcullis_harness::untrusted::visible(t).into_owned();
    held::list(root)
        .iter()
        .flat_map(|h| {
            h.note.changes.iter().map(move |c| {
                format!(
                    "{}  {}  {}",
                    visible(&h.key),
                    visible(&h.layer.root.join(&c.path).display().to_string()),
                    visible(&c.why)
                )
            })
        })
        .collect()
}

/// The held layers of call `call` of `session` (both named: the ledger's detail knows them) in any of
/// `roots` (a command has a layer per write root).
pub fn held_of(roots: &[PathBuf], call: &str, session: &str) -> Vec<Held> {
    roots
        .iter()
        .flat_map(|root| held::list(root))
        .filter(|h| UndoTarget::names_call(&h.key, call, Some(session)))
        .collect()
}

fn find(root: &Path, call: &str, session: Option<&str>) -> Result<Held, String> {
    let found: Vec<(String, Held)> = held::list(root)
        .into_iter()
        .filter(|h| UndoTarget::names_call(&h.key, call, session))
        .map(|h| (h.key.clone(), h))
        .collect();
    crate::undo_calls::the_one(found, call, || {
        format!("no changes of call {call} are held in {}", root.display())
    })
}

/// Keeps (commits) the held changes of `call`: the lines of what was committed and what was not.
pub fn keep_held(root: &Path, call: &str, session: Option<&str>) -> Result<Vec<String>, String> {
    let held = find(root, call, session)?;
    let done = held::keep(&held).map_err(|e| e.to_string())?;
    let visible =
        |p: &Path| portcullis_harness::untrusted::visible(&root.join(p).display().to_string()).into_owned();
    let mut lines: Vec<String> = done.kept.iter().map(|p| format!("kept: {}", visible(p))).collect();
    lines.extend(done.discarded.iter().map(|(p, why)| format!("not kept: {} — {why}", visible(p))));
    Ok(lines)
}

/// Discards the held changes of `call`.
pub fn discard_held(root: &Path, call: &str, session: Option<&str>) -> Result<usize, String> {
    let held = find(root, call, session)?;
    held::discard(&held).map_err(|e| e.to_string())?;
    Ok(held.note.changes.len())
}
