//! What a copy-on-write commit replaced, kept so that the operator can put it back. Before the commit,
//! every path it will change is read from the real tree (a deleted folder with all it held); after it,
//! what is there now is digested. `undo` puts the old state back byte for byte, and refuses, naming the
//! paths, when any of them changed since the commit. The store is the hub's (beside its ledger, hidden
//! from commands); each command has a folder, bounded in size, and only the newest commands are kept.

use serde::{Deserialize, Serialize};
use std::io::Write;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};

/// The most bytes of old files one command's record keeps: past it the record says it is incomplete,
/// and its undo is refused (the commit itself goes on).
pub const COMMAND_BUDGET: u64 = 256 << 20;
/// How many commands' records the store keeps (the oldest go first).
pub const KEPT_COMMANDS: usize = 64;
const MANIFEST: &str = "manifest.json";
const UNDONE: &str = "undone.json";

/// A path's state: what was there before the commit (with its bytes kept) or after it (digested).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum State {
    Absent,
    File {
        mode: u32,
        /// After the commit: the file's inode, size and status change time, which any later write,
        /// replacement or mode change alters (none reads the content: a committed 1 GB file costs
        /// nothing to record); before: empty.
        #[serde(default)]
        stamp: String,
        /// Before the commit: the name of the kept copy in the record's folder.
        #[serde(default)]
        blob: Option<String>,
    },
    Symlink {
        target: PathBuf,
    },
    Folder {
        mode: u32,
    },
}

/// One path a commit changed: under `root`, its state before and after.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    pub root: PathBuf,
    pub path: PathBuf,
    pub before: State,
    pub after: State,
}

/// A command's record: every path its commit changed, and whether all the old bytes were kept.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Record {
    pub entries: Vec<Entry>,
    pub complete: bool,
}

/// Where a command's record goes: the store and the command's key (its session and call).
#[derive(Debug, Clone)]
pub struct UndoTarget {
    pub store: PathBuf,
    pub key: String,
}

impl UndoTarget {
    /// The record folder of the call `call_id` of `session_id` in `store` (names made safe).
    pub fn new(store: &Path, session_id: &str, call_id: &str) -> Self {
        let safe = |s: &str| -> String {
            s.chars()
                .map(|c| if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') { c } else { '_' })
                .collect()
        };
        UndoTarget { store: store.to_path_buf(), key: format!("{}__{}", safe(session_id), safe(call_id)) }
    }

    fn folder(&self) -> PathBuf {
        self.store.join(&self.key)
    }

    /// Whether `key` is the call `call_id` (of `session_id` when given, else of any session).
    pub fn names_call(key: &str, call_id: &str, session_id: Option<&str>) -> bool {
        match session_id {
            Some(session) => key == UndoTarget::new(Path::new(""), session, call_id).key,
            None => key.ends_with(&UndoTarget::new(Path::new(""), "", call_id).key),
        }
    }
}

/// The state at `path` now (no link followed), a file by its stamp.
fn state_now(path: &Path) -> std::io::Result<State> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(meta) => meta,
        // Nothing there, or a file where a folder on the way was: nothing at the path either.
        Err(e) if matches!(e.kind(), std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory) => {
            return Ok(State::Absent);
        }
        Err(e) => return Err(e),
    };
    let mode = meta.mode() & 0o7777;
    Ok(if meta.file_type().is_symlink() {
        State::Symlink { target: std::fs::read_link(path)? }
    } else if meta.is_dir() {
        State::Folder { mode }
    } else {
        State::File {
            mode,
            stamp: format!("{}:{}:{}.{}", meta.ino(), meta.len(), meta.ctime(), meta.ctime_nsec()),
            blob: None,
        }
    })
}

/// Whether a component of `path` below `root` (its parents) is a link or missing-and-then-present:
/// undo writes through none.
fn linked_between(root: &Path, path: &Path) -> bool {
    let mut at = root.to_path_buf();
    let parents: Vec<Component> = path.parent().map(|p| p.components().collect()).unwrap_or_default();
    for part in parents {
        let Component::Normal(name) = part else { return true };
        at.push(name);
        match std::fs::symlink_metadata(&at) {
            Ok(meta) if meta.file_type().is_symlink() => return true,
            _ => {}
        }
    }
    false
}

/// The states before a commit of the paths it will change, old bytes kept in the record's folder.
pub struct Before {
    target: UndoTarget,
    entries: Vec<(PathBuf, PathBuf, State)>,
    seen: std::collections::HashSet<(PathBuf, PathBuf)>,
    bytes: u64,
    complete: bool,
}

impl Before {
    /// A record for `target`, empty (its folder is made when the first old file is kept).
    pub fn new(target: &UndoTarget) -> Before {
        Before {
            target: target.clone(),
            entries: Vec::new(),
            seen: std::collections::HashSet::new(),
            bytes: 0,
            complete: true,
        }
    }

    /// Reads, before the commit, the states of `paths` (relative to `root`); a folder is read with all
    /// it holds (a deletion or a replaced folder removes it whole). The old files are copied only when
    /// all of them fit the budget: a command that rewrites more (a build's outputs) costs a walk of
    /// stats, not a copy that would be thrown away.
    pub fn capture(&mut self, root: &Path, paths: &[PathBuf]) {
        let mut files: Vec<(usize, PathBuf)> = Vec::new();
        let mut batch = 0u64;
        let mut pending: Vec<PathBuf> = paths.iter().rev().cloned().collect();
        while let Some(rel) = pending.pop() {
            if !self.seen.insert((root.to_path_buf(), rel.clone())) {
                continue;
            }
            let path = root.join(&rel);
            let state = match std::fs::symlink_metadata(&path) {
                Err(_) => State::Absent,
                Ok(meta) if meta.file_type().is_symlink() => match std::fs::read_link(&path) {
                    Ok(target) => State::Symlink { target },
                    Err(_) => {
                        self.complete = false;
                        State::Absent
                    }
                },
                Ok(meta) if meta.is_dir() => {
                    if let Ok(read) = std::fs::read_dir(&path) {
                        let mut names: Vec<PathBuf> =
                            read.filter_map(|e| e.ok()).map(|e| rel.join(e.file_name())).collect();
                        names.sort();
                        pending.extend(names.into_iter().rev());
                    } else {
                        self.complete = false;
                    }
                    State::Folder { mode: meta.mode() & 0o7777 }
                }
                Ok(meta) => {
                    batch += meta.len();
                    files.push((self.entries.len(), path));
                    State::File { mode: meta.mode() & 0o7777, stamp: String::new(), blob: None }
                }
            };
            self.entries.push((root.to_path_buf(), rel, state));
        }
        self.bytes += batch;
        if self.bytes > COMMAND_BUDGET {
            self.complete = false;
        }
        if files.is_empty() || !self.complete {
            return;
        }
        let folder = self.target.folder();
        if std::fs::create_dir_all(&folder).is_err() {
            self.complete = false;
            return;
        }
        for (at, path) in files {
            let blob = at.to_string();
            if std::fs::copy(&path, folder.join(&blob)).is_err() {
                self.complete = false;
                return;
            }
            if let Some((_, _, State::File { blob: kept, .. })) = self.entries.get_mut(at) {
                *kept = Some(blob);
            }
        }
    }

    /// Writes the record once the commit is done: each path's state now beside its state before (paths
    /// the commit left as they were are dropped). Old records past [`KEPT_COMMANDS`] are removed.
    pub fn finish(self) -> std::io::Result<()> {
        let mut record = Record { entries: Vec::new(), complete: self.complete };
        // An incomplete record only says so (its undo is refused before any path is looked at).
        let entries = if self.complete { self.entries } else { Vec::new() };
        for (root, path, before) in entries {
            let after = state_now(&root.join(&path))?;
            let unchanged = match (&before, &after) {
                (State::Absent, State::Absent) => true,
                (State::Folder { mode: a }, State::Folder { mode: b }) => a == b,
                (State::Symlink { target: a }, State::Symlink { target: b }) => a == b,
                _ => false,
            };
            if !unchanged {
                record.entries.push(Entry { root, path, before, after });
            }
        }
        let folder = self.target.folder();
        if record.entries.is_empty() && record.complete {
            let _ = std::fs::remove_dir_all(&folder);
            return Ok(());
        }
        std::fs::create_dir_all(&folder)?;
        let text = serde_json::to_vec_pretty(&record).map_err(std::io::Error::other)?;
        let temp = folder.join(format!(".{MANIFEST}.tmp"));
        let mut out = std::fs::File::create(&temp)?;
        // Not synced: a record lost to a power cut only means that command cannot be undone; the rename
        // keeps a crashed hub from leaving half a record.
        out.write_all(&text)?;
        std::fs::rename(&temp, folder.join(MANIFEST))?;
        prune(&self.target.store);
        Ok(())
    }
}

/// Removes the oldest records past [`KEPT_COMMANDS`].
fn prune(store: &Path) {
    let Ok(read) = std::fs::read_dir(store) else { return };
    let mut records: Vec<(std::time::SystemTime, PathBuf)> = read
        .filter_map(|e| e.ok())
        .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
        .collect();
    if records.len() <= KEPT_COMMANDS {
        return;
    }
    records.sort();
    for (_, path) in records.iter().take(records.len() - KEPT_COMMANDS) {
        let _ = std::fs::remove_dir_all(path);
    }
}

/// Why an undo is refused.
#[derive(Debug, thiserror::Error)]
pub enum UndoError {
    #[error(
        "no record of what this call's commit replaced ({0}): it changed no file through copy-on-write, or its record is gone"
    )]
    NoRecord(PathBuf),
    #[error("this call's changes were undone already")]
    Undone,
    #[error("what this call's commit replaced was over the undo budget ({} MiB) or could not all be read: it cannot be put back", COMMAND_BUDGET >> 20)]
    Incomplete,
    #[error("changed since the commit, so putting the old state back would lose that: {}", .0.join(", "))]
    ChangedSince(Vec<String>),
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("the record {0} cannot be read: {1}")]
    BadRecord(PathBuf, String),
}

/// What `undo` would do: the paths put back (or removed), in the order it would.
pub fn plan(target: &UndoTarget) -> Result<Record, UndoError> {
    let folder = target.folder();
    if folder.join(UNDONE).exists() {
        return Err(UndoError::Undone);
    }
    let manifest = folder.join(MANIFEST);
    let text = std::fs::read(&manifest).map_err(|_| UndoError::NoRecord(folder.clone()))?;
    let record: Record =
        serde_json::from_slice(&text).map_err(|e| UndoError::BadRecord(manifest.clone(), e.to_string()))?;
    if !record.complete {
        return Err(UndoError::Incomplete);
    }
    let changed: Vec<String> = record
        .entries
        .iter()
        .filter(|e| {
            let path = e.root.join(&e.path);
            linked_between(&e.root, &e.path) || state_now(&path).map_or(true, |now| !same(&now, &e.after))
        })
        .map(|e| e.root.join(&e.path).display().to_string())
        .take(10)
        .collect();
    if !changed.is_empty() {
        return Err(UndoError::ChangedSince(changed));
    }
    Ok(record)
}

fn same(now: &State, after: &State) -> bool {
    match (now, after) {
        (State::File { mode: a, stamp: x, .. }, State::File { mode: b, stamp: y, .. }) => a == b && x == y,
        (a, b) => a == b,
    }
}

/// Puts back what the commit of `target` replaced, after [`plan`]'s checks; then marks the record
/// undone. The paths put back.
pub fn undo(target: &UndoTarget) -> Result<Vec<PathBuf>, UndoError> {
    let record = plan(target)?;
    let folder = target.folder();
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| UndoError::Io { path, source }
    };
    // What the commit made goes first, deepest first; then the old states, shallowest first.
    let mut made: Vec<&Entry> = record.entries.iter().filter(|e| e.after != State::Absent).collect();
    made.sort_by_key(|e| std::cmp::Reverse(e.path.components().count()));
    for e in made {
        let path = e.root.join(&e.path);
        let keep_folder = matches!((&e.before, &e.after), (State::Folder { .. }, State::Folder { .. }));
        match &e.after {
            State::Folder { .. } if !keep_folder => std::fs::remove_dir_all(&path).map_err(io(&path))?,
            State::Folder { .. } | State::Absent => {}
            State::File { .. } | State::Symlink { .. } => std::fs::remove_file(&path).map_err(io(&path))?,
        }
    }
    let mut old: Vec<&Entry> = record.entries.iter().filter(|e| e.before != State::Absent).collect();
    old.sort_by_key(|e| e.path.components().count());
    let mut restored = Vec::new();
    for e in old {
        let path = e.root.join(&e.path);
        match &e.before {
            State::Folder { mode } => {
                if !path.is_dir() {
                    std::fs::create_dir(&path).map_err(io(&path))?;
                }
                std::fs::set_permissions(&path, std::fs::Permissions::from_mode(*mode)).map_err(io(&path))?;
            }
            State::File { mode, blob: Some(blob), .. } => {
                let temp = path.with_file_name(format!(".portcullis-undo-{}", std::process::id()));
                std::fs::copy(folder.join(blob), &temp).map_err(io(&temp))?;
                std::fs::set_permissions(&temp, std::fs::Permissions::from_mode(*mode)).map_err(io(&temp))?;
                std::fs::rename(&temp, &path).map_err(io(&path))?;
            }
            State::File { blob: None, .. } => return Err(UndoError::Incomplete),
            State::Symlink { target } => std::os::unix::fs::symlink(target, &path).map_err(io(&path))?,
            State::Absent => {}
        }
        restored.push(path);
    }
    std::fs::write(folder.join(UNDONE), b"{}").map_err(io(&folder))?;
    Ok(restored)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// A commit simulated in the real tree between `capture` and `finish`; undo puts every byte back,
    /// and refuses once a file changed since.
    #[test]
    fn undo_puts_back_what_a_commit_replaced_and_refuses_after_a_change() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("proj");
        std::fs::create_dir_all(root.join("gone/deep")).unwrap();
        std::fs::write(root.join("gone/deep/a.txt"), "a").unwrap();
        std::fs::write(root.join("edit.txt"), "old").unwrap();
        std::fs::set_permissions(root.join("edit.txt"), std::fs::Permissions::from_mode(0o640)).unwrap();
        std::os::unix::fs::symlink("edit.txt", root.join("link")).unwrap();
        let target = UndoTarget::new(&dir.path().join("store"), "s/1", "c1");
        let paths: Vec<PathBuf> =
            ["edit.txt", "gone", "new", "new/n.txt", "link"].iter().map(PathBuf::from).collect();
        let mut before = Before::new(&target);
        before.capture(&root, &paths);
        // The commit.
        std::fs::write(root.join("edit.txt"), "new").unwrap();
        std::fs::remove_dir_all(root.join("gone")).unwrap();
        std::fs::create_dir(root.join("new")).unwrap();
        std::fs::write(root.join("new/n.txt"), "n").unwrap();
        std::fs::remove_file(root.join("link")).unwrap();
        std::fs::write(root.join("link"), "now a file").unwrap();
        before.finish().unwrap();
        assert!(target.key.starts_with("s_1__c1"), "{}", target.key);

        let restored = undo(&target).unwrap();
        assert!(!restored.is_empty());
        assert_eq!(std::fs::read_to_string(root.join("edit.txt")).unwrap(), "old");
        assert_eq!(std::fs::metadata(root.join("edit.txt")).unwrap().mode() & 0o777, 0o640);
        assert_eq!(std::fs::read_to_string(root.join("gone/deep/a.txt")).unwrap(), "a");
        assert!(!root.join("new").exists());
        assert_eq!(std::fs::read_link(root.join("link")).unwrap(), PathBuf::from("edit.txt"));
        assert!(matches!(undo(&target), Err(UndoError::Undone)));

        // Another commit, and the file it made is changed since (even back to the same bytes: any
        // write counts): refused, naming it, nothing touched.
        let target = UndoTarget::new(&dir.path().join("store"), "s/1", "c2");
        let mut before = Before::new(&target);
        before.capture(&root, &[PathBuf::from("made.txt")]);
        std::fs::write(root.join("made.txt"), "agent").unwrap();
        before.finish().unwrap();
        std::fs::write(root.join("made.txt"), "agent").unwrap();
        let refused = undo(&target).unwrap_err().to_string();
        assert!(refused.contains("made.txt"), "{refused}");
        assert!(root.join("made.txt").exists());
    }

    #[test]
    fn past_the_budget_nothing_is_copied_and_the_undo_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("proj");
        std::fs::create_dir_all(&root).unwrap();
        let big = std::fs::File::create(root.join("big.bin")).unwrap();
        big.set_len(COMMAND_BUDGET + 1).unwrap();
        std::fs::write(root.join("small.txt"), "old").unwrap();
        let target = UndoTarget::new(&dir.path().join("store"), "s", "c");
        let mut before = Before::new(&target);
        before.capture(&root, &[PathBuf::from("small.txt"), PathBuf::from("big.bin")]);
        // No old file was copied: the budget is known before any copy.
        assert!(!target.folder().exists());
        std::fs::write(root.join("small.txt"), "new").unwrap();
        before.finish().unwrap();
        assert!(matches!(undo(&target), Err(UndoError::Incomplete)));
        assert_eq!(std::fs::read_dir(target.folder()).unwrap().count(), 1, "the record alone");
    }

    #[test]
    fn undo_writes_through_no_link_planted_since() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("proj");
        let outside = dir.path().join("outside");
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(root.join("src/a.rs"), "old").unwrap();
        let target = UndoTarget::new(&dir.path().join("store"), "s", "c");
        let mut before = Before::new(&target);
        before.capture(&root, &[PathBuf::from("src/a.rs")]);
        std::fs::remove_file(root.join("src/a.rs")).unwrap();
        before.finish().unwrap();
        // The folder becomes a link out of the project.
        std::fs::remove_dir(root.join("src")).unwrap();
        std::os::unix::fs::symlink(&outside, root.join("src")).unwrap();
        assert!(matches!(undo(&target), Err(UndoError::ChangedSince(_))));
        assert!(!outside.join("a.rs").exists());
    }
}
