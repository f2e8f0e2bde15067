//! What a confined command changed in a write root, read from its copy-on-write layer (see
//! [`crate::overlay`]) after it ended — created and changed files, links, folders made or replaced,
//! deletions (the overlay's whiteouts), special files — and the commit of the changes a review kept into
//! the real tree: by rename on the same file system, through no link of the real tree.

use crate::overlay::Layer;
use rustix::fs::{AtFlags, CWD, FileType, Mode, OFlags, RenameFlags, ResolveFlags};
use std::ffi::OsStr;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

/// The most changes one command's set may hold: past it the whole set is discarded (and the result
/// says so), never a part of it chosen.
pub const MAX_CHANGES: usize = 20_000;
/// The most bytes of files one command's set may hold: past it the whole set is discarded.
pub const MAX_BYTES: u64 = 2 << 30;
/// The overlay's mark of a folder made over a deleted one: nothing of the lower folder shows through.
const OPAQUE: &str = "user.overlay.opaque";
/// The overlay's own attributes on the files it copied up: not the command's, never committed.
const OVERLAY_ATTRIBUTES: &str = "user.overlay.";

/// What one change is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A regular file created or changed (content or mode).
    File,
    /// A symbolic link created or replaced.
    Symlink,
    /// A folder made where none was, made over a deleted one (`replaced`: nothing of the old shows
    /// through), or whose mode changed.
    Folder { replaced: bool },
    /// A file or folder deleted.
    Deleted,
    /// A FIFO, socket or device: never committed.
    Special(&'static str),
}

/// One change, at a path relative to its write root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub path: PathBuf,
    pub kind: Kind,
    /// Something was at the path in the real tree when the set was read.
    pub existed: bool,
    /// The new mode (permission bits) of a file or folder.
    pub mode: u32,
    /// A file's size.
    pub size: u64,
    /// The overlay put its own attributes (`user.overlay.*`) on it: taken off before it is committed.
    pub marked: bool,
}

/// A command's changes in one write root, parents before what they hold.
#[derive(Debug, Clone)]
pub struct ChangeSet {
    pub layer: Layer,
    pub changes: Vec<Change>,
    /// Why the set is past its bounds (then `changes` is only its beginning, and nothing is committed).
    pub over_bound: Option<String>,
}

/// What a commit did: the changes now in the real tree, and those discarded, with why.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Committed {
    pub kept: Vec<PathBuf>,
    pub discarded: Vec<(PathBuf, String)>,
}

fn special(file_type: std::fs::FileType) -> Option<&'static str> {
    if file_type.is_fifo() {
        Some("a FIFO")
    } else if file_type.is_socket() {
        Some("a socket")
    } else if file_type.is_block_device() {
        Some("a block device")
    } else if file_type.is_char_device() {
        Some("a character device")
    } else {
        None
    }
}

/// Whether the entry at `path` carries attributes of the overlay's (`user.overlay.*`: a copied-up file's
/// origin, a folder's impure mark, or one the command set, which the overlay stores escaped).
fn overlay_marked(path: &Path) -> bool {
    let mut names = [0u8; 4096];
    match rustix::fs::llistxattr(path, &mut names[..]) {
        Ok(n) => names[..n].split(|b| *b == 0).any(|n| n.starts_with(OVERLAY_ATTRIBUTES.as_bytes())),
        // More names than the buffer holds: treated as marked (the commit then looks again).
        Err(rustix::io::Errno::RANGE) => true,
        Err(_) => false,
    }
}

fn opaque(path: &Path) -> bool {
    let mut value = [0u8; 8];
    rustix::fs::lgetxattr(path, OPAQUE, &mut value[..]).is_ok_and(|n| matches!(&value[..n], b"y" | b"x"))
}

/// Reads the change set of `layer` (after its command ended). A layer never made is an empty set.
pub fn read(layer: &Layer) -> std::io::Result<ChangeSet> {
    let mut set = ChangeSet { layer: layer.clone(), changes: Vec::new(), over_bound: None };
    let upper = layer.upper();
    if std::fs::symlink_metadata(&upper).is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound) {
        return Ok(set);
    }
    let mut bytes = 0u64;
    // Folders the commit makes afresh (made where none was, or replacing a deleted one): nothing of the
    // real tree is under them once they are committed, so all they hold is new, whatever the real tree
    // has at those names now.
    let mut fresh: Vec<PathBuf> = Vec::new();
    // Depth first, each folder's entries in name order: a folder before what it holds.
    let mut pending: Vec<PathBuf> = vec![PathBuf::new()];
    while let Some(dir) = pending.pop() {
        let mut entries: Vec<_> = std::fs::read_dir(upper.join(&dir))?
            .map(|e| e.map(|e| e.file_name()))
            .collect::<Result<_, _>>()?;
        entries.sort();
        let mut folders = Vec::new();
        for name in entries {
            let rel = dir.join(&name);
            let here = upper.join(&rel);
            let meta = std::fs::symlink_metadata(&here)?;
            let under_fresh = fresh.iter().any(|f| rel.starts_with(f));
            let real = if under_fresh { None } else { std::fs::symlink_metadata(layer.root.join(&rel)).ok() };
            let file_type = meta.file_type();
            let mode = meta.mode() & 0o7777;
            let kind = if file_type.is_char_device() && meta.rdev() == 0 {
                Some(Kind::Deleted)
            } else if file_type.is_dir() {
                folders.push(rel.clone());
                let replaced = opaque(&here);
                let same_mode = real.as_ref().is_some_and(|r| r.is_dir() && r.mode() & 0o7777 == mode);
                let made = real.as_ref().is_none_or(|r| !r.is_dir());
                if replaced || made {
                    fresh.push(rel.clone());
                }
                (replaced || made || !same_mode).then_some(Kind::Folder { replaced })
            } else if file_type.is_symlink() {
                Some(Kind::Symlink)
            } else if file_type.is_file() {
                bytes += meta.len();
                Some(Kind::File)
            } else {
                Some(Kind::Special(special(file_type).unwrap_or("a special file")))
            };
            let Some(kind) = kind else { continue };
            let size = if kind == Kind::File { meta.len() } else { 0 };
            let marked = kind != Kind::Deleted && overlay_marked(&here);
            set.changes.push(Change { path: rel, kind, existed: real.is_some(), mode, size, marked });
            if set.changes.len() > MAX_CHANGES || bytes > MAX_BYTES {
                set.over_bound = Some(format!(
                    "the command changed more than the review takes ({MAX_CHANGES} changes, {} MiB of files)",
                    MAX_BYTES >> 20
                ));
                return Ok(set);
            }
        }
        pending.extend(folders.into_iter().rev());
    }
    Ok(set)
}

/// What every open beneath a root resolves through: nothing above it, no link, no other mount.
fn beneath() -> ResolveFlags {
    ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS | ResolveFlags::NO_XDEV
}

/// The folder `rel` beneath `base` (`base` itself when empty), through no link.
fn folder(base: &OwnedFd, rel: &Path, flags: OFlags) -> rustix::io::Result<OwnedFd> {
    let rel = if rel.as_os_str().is_empty() { Path::new(".") } else { rel };
    rustix::fs::openat2(base, rel, flags | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty(), beneath())
}

/// Removes `name` in `dir`, a folder with all it holds, through no link (a link is removed, never
/// followed). Missing is removed.
fn remove_tree(dir: &impl AsFd, name: &Path) -> rustix::io::Result<()> {
    match rustix::fs::unlinkat(dir, name, AtFlags::empty()) {
        Ok(()) | Err(rustix::io::Errno::NOENT) => Ok(()),
        Err(rustix::io::Errno::ISDIR) => {
            let inner = rustix::fs::openat2(
                dir,
                name,
                OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
                Mode::empty(),
                beneath(),
            )?;
            let mut names = Vec::new();
            for entry in rustix::fs::Dir::read_from(&inner)? {
                let entry = entry?;
                let n = entry.file_name().to_bytes();
                if n != b"." && n != b".." {
                    names.push(PathBuf::from(OsStr::from_bytes(n)));
                }
            }
            for n in names {
                remove_tree(&inner, &n)?;
            }
            rustix::fs::unlinkat(dir, name, AtFlags::REMOVEDIR)
        }
        Err(e) => Err(e),
    }
}

/// Sets the mode of the folder `name` in `dir` (opened through no link).
fn set_folder_mode(dir: &impl AsFd, name: &Path, mode: u32) -> rustix::io::Result<()> {
    let fd = rustix::fs::openat2(
        dir,
        name,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
        beneath(),
    )?;
    rustix::fs::fchmod(&fd, Mode::from_raw_mode(mode))
}

/// Takes the overlay's own attributes off a file about to be committed.
fn strip_overlay_attributes(path: &Path) {
    let mut names = vec![0u8; 4096];
    let Ok(n) = rustix::fs::llistxattr(path, &mut names[..]) else { return };
    for name in names[..n].split(|b| *b == 0).filter(|n| n.starts_with(OVERLAY_ATTRIBUTES.as_bytes())) {
        let _ = rustix::fs::lremovexattr(path, OsStr::from_bytes(name));
    }
}

struct Trees {
    real: OwnedFd,
    upper: OwnedFd,
    upper_path: PathBuf,
    /// The changes over a file the real tree changed after the command started (read before the commit
    /// touches anything: its own renames change the status time of a file's other hard links).
    conflicts: std::collections::HashSet<PathBuf>,
}

/// The last parent folder a commit opened, in one tree: the changes of a set come parents first, so
/// siblings follow each other and share it (10,000 new files in one folder open it once, not 10,000
/// times). Opened through no link, as every folder of a commit is.
#[derive(Default)]
struct Parent {
    at: Option<(PathBuf, OwnedFd)>,
}

impl Parent {
    fn open(&mut self, root: &OwnedFd, parent: &Path) -> rustix::io::Result<&OwnedFd> {
        if !matches!(&self.at, Some((at, _)) if at == parent) {
            self.at = Some((parent.to_path_buf(), folder(root, parent, OFlags::PATH)?));
        }
        match &self.at {
            Some((_, fd)) => Ok(fd),
            None => Err(rustix::io::Errno::NOENT),
        }
    }
}

/// Why a change is not committed over a file someone else changed while the command ran.
pub const CONFLICT: &str = "changed in the real tree since the command started (an editor, another command): \
                            not overwritten";

/// Whether the status change time `stat` says is after `since`.
fn changed_after(stat: &rustix::fs::Stat, since: std::time::SystemTime) -> bool {
    let Ok(since) = since.duration_since(std::time::UNIX_EPOCH) else { return false };
    let since_secs = i64::try_from(since.as_secs()).unwrap_or(i64::MAX);
    (stat.st_ctime, stat.st_ctime_nsec) > (since_secs, u64::from(since.subsec_nanos()))
}

fn commit_one(trees: &Trees, parents: &mut (Parent, Parent), change: &Change) -> Result<(), String> {
    let (Some(parent), Some(name)) = (change.path.parent(), change.path.file_name()) else {
        return Err("not a name in the root".into());
    };
    let name = Path::new(name);
    let text = |e: rustix::io::Errno| match e {
        rustix::io::Errno::LOOP | rustix::io::Errno::XDEV => {
            "the real tree has a link or another mount on the way there".to_owned()
        }
        e => e.to_string(),
    };
    if trees.conflicts.contains(&change.path) {
        return Err(CONFLICT.to_owned());
    }
    let (real_parents, upper_parents) = parents;
    let real_parent = real_parents.open(&trees.real, parent).map_err(text)?;
    if matches!(change.kind, Kind::File | Kind::Symlink) && !change.existed {
        // Nothing was there when the set was read (an `npm install`'s 10,000 new files): the rename
        // itself makes sure nothing is there now, in one lookup instead of a stat and a rename. Where
        // something is (made since) or the file system cannot say, the general way below decides.
        let upper_parent = upper_parents.open(&trees.upper, parent).map_err(text)?;
        if change.marked {
            strip_overlay_attributes(&trees.upper_path.join(&change.path));
        }
        match rustix::fs::renameat_with(upper_parent, name, real_parent, name, RenameFlags::NOREPLACE) {
            Ok(()) => return Ok(()),
            Err(rustix::io::Errno::EXIST | rustix::io::Errno::INVAL) => {}
            Err(e) => return Err(text(e)),
        }
    }
    let there = rustix::fs::statat(real_parent, name, AtFlags::SYMLINK_NOFOLLOW).ok();
    let is_dir = there.as_ref().is_some_and(|s| FileType::from_raw_mode(s.st_mode) == FileType::Directory);
    match change.kind {
        Kind::Special(what) => Err(format!("{what} is never committed")),
        Kind::Deleted => remove_tree(real_parent, name).map_err(text),
        Kind::Folder { replaced } => {
            // A folder the command made over nothing finds nothing, or the folder it showed; anything
            // else there was put there since (a link is never replaced by a folder, nor followed).
            if !replaced && there.is_some() && !is_dir {
                return Err("the real tree has a link or a file there now".into());
            }
            if replaced || !is_dir {
                remove_tree(real_parent, name).map_err(text)?;
                rustix::fs::mkdirat(real_parent, name, Mode::from_raw_mode(0o700)).map_err(text)?;
            }
            set_folder_mode(real_parent, name, change.mode).map_err(text)
        }
        Kind::File | Kind::Symlink => {
            let upper_parent = upper_parents.open(&trees.upper, parent).map_err(text)?;
            if is_dir {
                remove_tree(real_parent, name).map_err(text)?;
            }
            if change.marked {
                strip_overlay_attributes(&trees.upper_path.join(&change.path));
            }
            rustix::fs::renameat(upper_parent, name, real_parent, name).map_err(text)
        }
    }
}

/// The changes of `set` over a file (or link) someone else wrote, replaced or made in the real tree after
/// `since`: the command's change would overwrite what it never saw. Folders change whenever anything in
/// them does; what they hold is checked one by one.
fn conflicts(
    real: &OwnedFd,
    set: &ChangeSet,
    since: std::time::SystemTime,
) -> std::collections::HashSet<PathBuf> {
    // Only where something was in the real tree when the set was read: a new name has nothing to lose.
    // A folder the commit removes whole (deleted, or replaced by a new one) conflicts when anything in
    // it changed meanwhile; a folder that only changes mode or is made holds nothing of the real tree.
    set.changes
        .iter()
        .filter(|c| c.existed && !matches!(c.kind, Kind::Folder { replaced: false }))
        .filter(|c| {
            let (Some(parent), Some(name)) = (c.path.parent(), c.path.file_name()) else { return false };
            let Ok(dir) = folder(real, parent, OFlags::PATH) else { return false };
            let Ok(stat) = rustix::fs::statat(&dir, Path::new(name), AtFlags::SYMLINK_NOFOLLOW) else {
                return false;
            };
            if FileType::from_raw_mode(stat.st_mode) != FileType::Directory {
                return changed_after(&stat, since);
            }
            let removes_it = matches!(c.kind, Kind::Deleted | Kind::Folder { replaced: true });
            removes_it
                && folder(&dir, Path::new(name), OFlags::RDONLY)
                    .is_ok_and(|inner| changed_inside(&inner, since, 0))
        })
        .map(|c| c.path.clone())
        .collect()
}

/// Whether a file or link in the folder `dir`, at any depth (through no link), changed after `since`.
/// Past 64 levels, or where a folder cannot be read, it counts as changed: never removed unseen.
fn changed_inside(dir: &OwnedFd, since: std::time::SystemTime, depth: usize) -> bool {
    if depth > 64 {
        return true;
    }
    let Ok(entries) = rustix::fs::Dir::read_from(dir) else { return true };
    for entry in entries {
        let Ok(entry) = entry else { return true };
        let name = entry.file_name().to_bytes();
        if name == b"." || name == b".." {
            continue;
        }
        let name = Path::new(OsStr::from_bytes(name));
        let Ok(stat) = rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) else { return true };
        let changed = if FileType::from_raw_mode(stat.st_mode) == FileType::Directory {
            folder(dir, name, OFlags::RDONLY).map_or(true, |inner| changed_inside(&inner, since, depth + 1))
        } else {
            changed_after(&stat, since)
        };
        if changed {
            return true;
        }
    }
    false
}

/// The folders the command made where nothing was that can be committed whole, by one rename (an `npm
/// install`'s `node_modules`), not one per file: kept, with everything inside them kept too and none of
/// it a special file, a deletion, or marked by the overlay.
fn whole_folders<'s>(set: &'s ChangeSet, verdicts: &[Option<String>]) -> std::collections::HashSet<&'s Path> {
    let kept = |k: usize| verdicts.get(k).is_none_or(Option::is_none);
    let plain = |k: usize, c: &Change| kept(k) && !c.marked && !c.existed;
    // Every folder above a change that must go one by one (the chain upwards is inserted whole, so the
    // walk stops at the first folder already in).
    let mut spoiled: std::collections::HashSet<&Path> = std::collections::HashSet::new();
    for (k, c) in set.changes.iter().enumerate() {
        if !plain(k, c) || matches!(c.kind, Kind::Special(_) | Kind::Deleted) {
            for above in c.path.ancestors().skip(1) {
                if !spoiled.insert(above) {
                    break;
                }
            }
        }
    }
    set.changes
        .iter()
        .enumerate()
        .filter(|(k, c)| c.kind == (Kind::Folder { replaced: false }) && plain(*k, c))
        .map(|(_, c)| c.path.as_path())
        .filter(|p| !spoiled.contains(p))
        .collect()
}

/// Moves a folder the command made, with all it holds, from the upper layer into the real tree: one
/// rename that never replaces anything (something made there since: refused, and the folder's changes
/// are then committed one by one).
fn move_folder(trees: &Trees, parents: &mut (Parent, Parent), change: &Change) -> rustix::io::Result<()> {
    let (Some(parent), Some(name)) = (change.path.parent(), change.path.file_name()) else {
        return Err(rustix::io::Errno::INVAL);
    };
    let name = Path::new(name);
    let (real_parents, upper_parents) = parents;
    let real_parent = real_parents.open(&trees.real, parent)?;
    let upper_parent = upper_parents.open(&trees.upper, parent)?;
    rustix::fs::renameat_with(upper_parent, name, real_parent, name, RenameFlags::NOREPLACE)
}

/// Commits the changes of `set` whose verdict is `None` into the real tree, in order (a folder before
/// what it holds); a change whose verdict is a reason is discarded, and so is everything inside a folder
/// discarded or not made. Every open in the real tree resolves beneath the root, through no link.
/// `since`: when the command started; a change over a file the real tree changed after that is a
/// conflict ([`CONFLICT`]), never committed.
pub fn commit(
    set: &ChangeSet,
    verdicts: &[Option<String>],
    since: Option<std::time::SystemTime>,
) -> Committed {
    let mut done = Committed::default();
    let opened = |p: &Path| {
        rustix::fs::openat2(
            CWD,
            p,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
            ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS,
        )
    };
    let trees = match (opened(&set.layer.root), opened(&set.layer.upper())) {
        (Ok(real), Ok(upper)) => {
            let conflicts = since.map(|since| conflicts(&real, set, since)).unwrap_or_default();
            Trees { real, upper, upper_path: set.layer.upper(), conflicts }
        }
        (Err(e), _) | (_, Err(e)) => {
            let why = format!("the write root could not be opened through no link: {e}");
            done.discarded = set.changes.iter().map(|c| (c.path.clone(), why.clone())).collect();
            return done;
        }
    };
    let mut blocked: Vec<PathBuf> = Vec::new();
    let mut parents = (Parent::default(), Parent::default());
    let whole = whole_folders(set, verdicts);
    let mut moved: std::collections::HashSet<&Path> = std::collections::HashSet::new();
    for (k, change) in set.changes.iter().enumerate() {
        let verdict = verdicts.get(k).cloned().flatten();
        let folder = matches!(change.kind, Kind::Folder { .. });
        if !moved.is_empty() && change.path.ancestors().skip(1).any(|a| moved.contains(a)) {
            done.kept.push(change.path.clone());
            continue;
        }
        if whole.contains(change.path.as_path())
            && !blocked.iter().any(|b| change.path.starts_with(b))
            && move_folder(&trees, &mut parents, change).is_ok()
        {
            moved.insert(change.path.as_path());
            done.kept.push(change.path.clone());
            continue;
        }
        let inside = blocked.iter().find(|b| change.path.starts_with(b));
        let outcome = match (inside, verdict) {
            (Some(b), _) => Err(format!("inside {}, which was not committed", b.display())),
            (None, Some(reason)) => Err(reason),
            (None, None) => commit_one(&trees, &mut parents, change)
                .map_err(|e| if e == CONFLICT { e } else { format!("could not be committed: {e}") }),
        };
        match outcome {
            Ok(()) => done.kept.push(change.path.clone()),
            Err(why) => {
                if folder {
                    blocked.push(change.path.clone());
                }
                done.discarded.push((change.path.clone(), why));
            }
        }
    }
    done
}
