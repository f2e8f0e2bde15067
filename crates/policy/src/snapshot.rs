//! One look at each path per evaluation: an evaluation resolves the same folders and words many times
//! (every word from every folder a `cd` may reach, a written file for its roots, its protected places
//! and whether it is a link itself), and each resolution looks at every component. Within one
//! evaluation the answers of those looks are remembered, and a path below one found missing is missing
//! too, so the evaluation judges one view of the file system with one system call per distinct path.
//! Nothing is remembered between evaluations: the next one looks again (a word that became a link into
//! a protected place since is seen as one). The one wider view: a replay over a ledger (a what-if
//! report, never a gate) judges each batch of records against one view (`within` around the batch).

use portcullis_harness::paths::{Found, look};
use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::OsString;
use std::path::Path;

/// Most paths one view remembers (beyond, it starts over).
const MAX_REMEMBERED: usize = 4096;

#[derive(Default)]
struct Snapshot {
    /// Evaluations under way on this thread (one evaluation may start another: an action's command).
    depth: usize,
    /// By the path's text (hashing a `Path` walks its components; its text is hashed as bytes).
    found: HashMap<OsString, Found>,
}

thread_local! {
    static SNAPSHOT: RefCell<Snapshot> = RefCell::new(Snapshot::default());
}

/// Ends an evaluation's view when the outermost evaluation ends (also when it unwinds).
struct Scope;

impl Drop for Scope {
    fn drop(&mut self) {
        SNAPSHOT.with(|cell| {
            if let Ok(mut snapshot) = cell.try_borrow_mut() {
                snapshot.depth = snapshot.depth.saturating_sub(1);
                if snapshot.depth == 0 {
                    snapshot.found.clear();
                }
            }
        });
    }
}

/// Runs `judge` with one view of the file system: its looks are remembered until the outermost
/// `within` on this thread returns. Every evaluation runs within its own; a live call's gate must never
/// be judged inside a wider one (only a replay's batch is).
pub fn within<R>(judge: impl FnOnce() -> R) -> R {
    SNAPSHOT.with(|cell| {
        if let Ok(mut snapshot) = cell.try_borrow_mut() {
            snapshot.depth += 1;
        }
    });
    let _scope = Scope;
    judge()
}

/// What `path` is (see [`look`]), remembered within the evaluation under way; outside one, a plain
/// look. Errors other than a missing path are not remembered.
pub(crate) fn look_once(path: &Path) -> std::io::Result<Found> {
    SNAPSHOT.with(|cell| {
        let Ok(mut snapshot) = cell.try_borrow_mut() else { return look(path) };
        if snapshot.depth == 0 {
            return look(path);
        }
        if let Some(found) = snapshot.found.get(path.as_os_str()) {
            return Ok(found.clone());
        }
        // Below a path that is not there, nothing is (`ENOENT` or `ENOTDIR` alike).
        let found = if path.parent().and_then(|p| snapshot.found.get(p.as_os_str())) == Some(&Found::Missing)
        {
            Found::Missing
        } else {
            look(path)?
        };
        // Full (a long replay's view): start over, so what is looked at most is remembered again.
        if snapshot.found.len() >= MAX_REMEMBERED {
            snapshot.found.clear();
        }
        snapshot.found.insert(path.as_os_str().to_owned(), found.clone());
        Ok(found)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remembered_within_one_evaluation_only() {
        let dir = tempfile::tempdir().unwrap();
        let word = dir.path().join("word");
        within(|| {
            assert_eq!(look_once(&word).unwrap(), Found::Missing);
            assert_eq!(look_once(&word.join("below")).unwrap(), Found::Missing);
            // Made during the evaluation: this evaluation keeps its one view.
            std::os::unix::fs::symlink(dir.path().join("target"), &word).unwrap();
            assert_eq!(look_once(&word).unwrap(), Found::Missing);
        });
        // The next evaluation looks again and sees the link.
        within(|| assert_eq!(look_once(&word).unwrap(), Found::Link(dir.path().join("target"))));
        // Outside an evaluation nothing is remembered.
        assert_eq!(look_once(&word).unwrap(), Found::Link(dir.path().join("target")));
        std::fs::remove_file(&word).unwrap();
        assert_eq!(look_once(&word).unwrap(), Found::Missing);
    }

    #[test]
    fn nested_evaluations_share_the_view_until_the_outermost_ends() {
        let dir = tempfile::tempdir().unwrap();
        let word = dir.path().join("word");
        within(|| {
            within(|| assert_eq!(look_once(&word).unwrap(), Found::Missing));
            std::fs::write(&word, "x").unwrap();
            assert_eq!(look_once(&word).unwrap(), Found::Missing);
        });
        within(|| assert_eq!(look_once(&word).unwrap(), Found::Present));
    }
}
