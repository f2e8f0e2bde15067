//! The record of what a confined command changed, made while its review commits, holds or discards each
//! change (`change_review`, which writes it): each change with what it is, its size and, for a file, the
//! SHA-256 of its new content — read from the committed file at its real path for a kept change, from
//! the copy in the command's layer for a held one (before the layer is moved aside). Digests are bounded
//! so a commit of 10,000 files stays fast: files up to [`DIGEST_MAX_FILE`] bytes, the first
//! [`DIGEST_MAX_FILES`] files of a call and [`DIGEST_MAX_BYTES`] in all; past them the digest is `None`.

use portcullis_harness::{ChangeEntry, ChangeKind, ChangeOutcome, ChangeRecord};
use portcullis_sandbox::changes::{Change, ChangeSet, Committed, Kind};
use rustix::fs::{CWD, FileType, Mode, OFlags, ResolveFlags};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};

/// The largest file whose content is digested.
pub const DIGEST_MAX_FILE: u64 = 1 << 20;
/// The most files of one call whose content is digested.
pub const DIGEST_MAX_FILES: usize = 1_000;
/// The most bytes of one call's files that are digested.
pub const DIGEST_MAX_BYTES: u64 = 64 << 20;

/// What is left of a call's digest bounds.
#[derive(Debug, Clone)]
pub struct DigestBudget {
    files: usize,
    bytes: u64,
}

impl Default for DigestBudget {
    fn default() -> Self {
        DigestBudget { files: DIGEST_MAX_FILES, bytes: DIGEST_MAX_BYTES }
    }
}

impl DigestBudget {
    /// The SHA-256 (hex) of the regular file at `path` whose size is `size`, when the bounds allow it
    /// and it can be read through no link; `None` otherwise.
    pub fn digest(&mut self, path: &Path, size: u64) -> Option<String> {
        if size > DIGEST_MAX_FILE || self.files == 0 || self.bytes < size {
            return None;
        }
        self.files -= 1;
        self.bytes -= size;
        sha256_of(path)
    }
}

/// The SHA-256 (hex) of the regular file at the absolute `path`, opened through no link (a FIFO put
/// there since is not waited on: opened non-blocking, and only a regular file is read); `None` when it
/// cannot be read or is past [`DIGEST_MAX_FILE`] now.
fn sha256_of(path: &Path) -> Option<String> {
    let fd = rustix::fs::openat2(
        CWD,
        path,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
        Mode::empty(),
        ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS,
    )
    .ok()?;
    let stat = rustix::fs::fstat(&fd).ok()?;
    if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
        return None;
    }
    let file = std::fs::File::from(fd);
    let mut content = Vec::new();
    file.take(DIGEST_MAX_FILE + 1).read_to_end(&mut content).ok()?;
    if content.len() as u64 > DIGEST_MAX_FILE {
        return None;
    }
    Some(portcullis_harness::receipt::hex(&Sha256::digest(&content)))
}

/// What a change is, in the record's words.
pub fn kind_of(kind: Kind) -> ChangeKind {
    match kind {
        Kind::File => ChangeKind::File,
        Kind::Symlink => ChangeKind::Symlink,
        Kind::Folder { .. } => ChangeKind::Folder,
        Kind::Deleted => ChangeKind::Deleted,
        Kind::Special(_) => ChangeKind::Special,
    }
}

/// A file's size, for what has content.
fn size_of(change: &Change) -> Option<u64> {
    matches!(change.kind, Kind::File | Kind::Symlink).then_some(change.size)
}

/// The entry of `change` under `root`, its digest read from `content` (a file) within `budget`.
fn entry(
    root: &Path,
    change: &Change,
    outcome: ChangeOutcome,
    why: Option<String>,
    content: Option<&Path>,
    budget: &mut DigestBudget,
) -> ChangeEntry {
    let sha256 = match (change.kind, content) {
        (Kind::File, Some(content)) => budget.digest(content, change.size),
        _ => None,
    };
    ChangeEntry {
        path: root.join(&change.path).display().to_string(),
        what: kind_of(change.kind),
        size: size_of(change),
        sha256,
        outcome,
        why,
    }
}

/// Adds every change of `changes` under `root` as discarded for `why` (none was committed or read).
pub fn add_discarded(record: &mut ChangeRecord, root: &Path, changes: &[Change], why: &str) {
    let mut none = DigestBudget { files: 0, bytes: 0 };
    for change in changes {
        record.push_with(ChangeOutcome::Discarded, || {
            entry(root, change, ChangeOutcome::Discarded, Some(why.to_owned()), None, &mut none)
        });
    }
}

/// Adds a whole write root whose changes were not read or not committed, discarded for `why`.
pub fn add_root(record: &mut ChangeRecord, root: &Path, why: &str) {
    record.push(ChangeEntry {
        path: root.display().to_string(),
        what: ChangeKind::Root,
        size: None,
        sha256: None,
        outcome: ChangeOutcome::Discarded,
        why: Some(why.to_owned()),
    });
}

/// Adds what the commit of `set` did: each kept change (its digest from the committed file at its real
/// path) and each one not committed, held where `held` says so (its digest from the layer's copy, read
/// now: before the layer is moved aside) or discarded. Returns how many were held.
pub fn add_committed(
    record: &mut ChangeRecord,
    set: &ChangeSet,
    done: &Committed,
    held: impl Fn(&Path) -> bool,
    budget: &mut DigestBudget,
) -> usize {
    let root = &set.layer.root;
    let upper = set.layer.upper();
    let changes: HashMap<&Path, &Change> = set.changes.iter().map(|c| (c.path.as_path(), c)).collect();
    let unknown = |path: &PathBuf| Change {
        path: path.clone(),
        kind: Kind::File,
        existed: false,
        mode: 0,
        size: 0,
        marked: false,
    };
    // A path the set does not hold (a commit reports only what it was given) is recorded as a file.
    let change_of = |path: &PathBuf| {
        changes
            .get(path.as_path())
            .map_or_else(|| std::borrow::Cow::Owned(unknown(path)), |c| std::borrow::Cow::Borrowed(*c))
    };
    for path in &done.kept {
        let change = &*change_of(path);
        record.push_with(ChangeOutcome::Kept, || {
            entry(root, change, ChangeOutcome::Kept, None, Some(&root.join(path)), budget)
        });
    }
    let mut held_count = 0;
    for (path, why) in &done.discarded {
        let change = &*change_of(path);
        let (outcome, content) = if held(path) {
            held_count += 1;
            (ChangeOutcome::Held, Some(upper.join(path)))
        } else {
            (ChangeOutcome::Discarded, None)
        };
        record.push_with(outcome, || {
            entry(root, change, outcome, Some(why.clone()), content.as_deref(), budget)
        });
    }
    held_count
}

/// Turns the last `held` held changes of `record` listed from entry `from` on into discarded ones (their
/// layer could not be held: `why` says so).
pub fn unhold(record: &mut ChangeRecord, from: usize, held: usize, why: &str) {
    let held = held as u64;
    record.held = record.held.saturating_sub(held);
    record.discarded += held;
    for entry in record.entries.iter_mut().skip(from).filter(|e| e.outcome == ChangeOutcome::Held) {
        entry.outcome = ChangeOutcome::Discarded;
        entry.why = Some(format!(
            "{} (it could not be held for the operator: {why})",
            entry.why.as_deref().unwrap_or("")
        ));
        entry.sha256 = None;
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn digests_stay_within_their_bounds_and_never_follow_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::write(root.join("a"), "hello\n").unwrap();
        std::fs::write(root.join("big"), vec![0u8; (DIGEST_MAX_FILE + 1) as usize]).unwrap();
        std::os::unix::fs::symlink(root.join("a"), root.join("link")).unwrap();
        let mut budget = DigestBudget::default();
        let hello = "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03";
        assert_eq!(budget.digest(&root.join("a"), 6).as_deref(), Some(hello));
        assert_eq!(budget.digest(&root.join("big"), DIGEST_MAX_FILE + 1), None);
        // A file that grew past the bound since its size was read.
        assert_eq!(budget.digest(&root.join("big"), 10), None);
        assert_eq!(budget.digest(&root.join("link"), 6), None);
        assert_eq!(budget.digest(&root.join("gone"), 6), None);
        let mut spent = DigestBudget { files: 1, bytes: DIGEST_MAX_BYTES };
        assert!(spent.digest(&root.join("a"), 6).is_some());
        assert_eq!(spent.digest(&root.join("a"), 6), None, "past the count of files");
    }

    #[test]
    fn a_commit_is_recorded_with_the_kept_files_digest_from_the_real_tree_and_the_held_ones_from_the_layer() {
        let dir = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        let (root, folder) = (base.join("root"), base.join("layer"));
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::create_dir_all(folder.join("upper/src")).unwrap();
        std::fs::write(root.join("src/old.txt"), "old\n").unwrap();
        std::fs::write(folder.join("upper/src/old.txt"), "hello\n").unwrap();
        std::fs::write(folder.join("upper/.npmrc"), "hello\n").unwrap();
        std::os::unix::fs::symlink("src/old.txt", folder.join("upper/link")).unwrap();
        let layer = portcullis_sandbox::overlay::Layer { root: root.clone(), folder };
        let set = portcullis_sandbox::changes::read(&layer).unwrap();
        let profile = portcullis_sandbox::system_only(vec![root.clone()]);
        let verdicts: Vec<Option<String>> =
            set.changes.iter().map(|c| crate::change_review::verdict(&profile, &root, c)).collect();
        let done = portcullis_sandbox::changes::commit(&set, &verdicts, None);
        let mut record = ChangeRecord::default();
        let held = add_committed(
            &mut record,
            &set,
            &done,
            |p| p == Path::new(".npmrc"),
            &mut DigestBudget::default(),
        );
        assert_eq!((held, record.kept, record.held, record.discarded), (1, 2, 1, 0), "{record:?}");
        let hello = Some("5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03".to_owned());
        let of = |record: &ChangeRecord, name: &str| {
            let path = root.join(name).display().to_string();
            record.entries.iter().find(|e| e.path == path).cloned().unwrap()
        };
        let kept = of(&record, "src/old.txt");
        assert_eq!(
            (kept.outcome, kept.what, kept.size, &kept.sha256),
            (ChangeOutcome::Kept, ChangeKind::File, Some(6), &hello)
        );
        assert_eq!(std::fs::read_to_string(root.join("src/old.txt")).unwrap(), "hello\n");
        let npmrc = of(&record, ".npmrc");
        assert_eq!((npmrc.outcome, &npmrc.sha256), (ChangeOutcome::Held, &hello));
        assert!(npmrc.why.as_deref().is_some_and(|w| w.contains("protected")), "{npmrc:?}");
        let link = of(&record, "link");
        assert_eq!(
            (link.outcome, link.what, &link.sha256),
            (ChangeOutcome::Kept, ChangeKind::Symlink, &None)
        );
        // The layer could not be held: its held changes are discarded, said so, and no longer digested.
        unhold(&mut record, 0, held, "no room");
        assert_eq!((record.held, record.discarded), (0, 1));
        let npmrc = of(&record, ".npmrc");
        assert_eq!((npmrc.outcome, &npmrc.sha256), (ChangeOutcome::Discarded, &None));
        assert!(
            npmrc
                .why
                .as_deref()
                .is_some_and(|w| w.ends_with("(it could not be held for the operator: no room)"))
        );
    }
}
