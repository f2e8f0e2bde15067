//! A command's own temporary folder, made by the hub before the launcher that runs the command is
//! started (a launcher started ahead builds its walls around it) and removed when the command is done.

use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};

/// The start of every such folder's name; the hub's process id follows.
const PREFIX: &str = "portcullis-cmd-";

/// A command's own temporary folder, removed when dropped.
#[derive(Debug)]
pub struct PrivateTmp(PathBuf);

impl PrivateTmp {
    /// A new folder under the system's temporary folder, owner-only, with a name nobody can guess (a
    /// name made in advance — a link planted there — is never reused: creating fails and another is
    /// tried).
    pub fn new() -> std::io::Result<Self> {
        use std::hash::{BuildHasher, Hasher};
        let mut last = None;
        for _ in 0..8 {
            let random = std::collections::hash_map::RandomState::new().build_hasher().finish();
            let dir = std::env::temp_dir().join(format!("{PREFIX}{}-{random:016x}", std::process::id()));
            match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
                Ok(()) => return Ok(PrivateTmp(dir)),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| std::io::Error::other("no temporary folder")))
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

/// Removes the folders a hub that is gone left behind (killed, its launchers waiting ahead never
/// dropped): in `dir`, the folders named for a process id no process has now, owned by this user. A link
/// is never followed; a live process's folders, and anything else, are left alone. Returns how many went.
pub(crate) fn sweep_orphans(dir: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    let me = nix::unistd::getuid().as_raw();
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.strip_prefix(PREFIX)).and_then(|r| r.split_once('-'))
        else {
            continue;
        };
        let Ok(pid) = pid.0.parse::<i32>() else { continue };
        let gone = matches!(
            nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None),
            Err(nix::errno::Errno::ESRCH)
        );
        // `symlink_metadata`: a link planted under that name is not a folder, and is not followed.
        let ours = entry.path().symlink_metadata().is_ok_and(|m| m.is_dir() && m.uid() == me);
        if pid > 0 && gone && ours && std::fs::remove_dir_all(entry.path()).is_ok() {
            removed += 1;
        }
    }
    removed
}

impl Drop for PrivateTmp {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_folders_of_a_hub_that_is_gone_are_swept_and_no_others() {
        let dir = tempfile::tempdir().unwrap();
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        let make = |name: String| {
            let path = dir.path().join(name);
            std::fs::create_dir(&path).unwrap();
            std::fs::write(path.join("left"), "x").unwrap();
            path
        };
        let orphan = make(format!("{PREFIX}{dead}-0123456789abcdef"));
        let live = make(format!("{PREFIX}{}-0123456789abcdef", std::process::id()));
        let other = make("portcullis-probe-1-2".to_owned());
        let target = make("target".to_owned());
        let link = dir.path().join(format!("{PREFIX}{dead}-link"));
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert_eq!(sweep_orphans(dir.path()), 1);
        assert!(!orphan.exists());
        assert!(live.join("left").exists() && other.join("left").exists());
        // The link is neither followed nor removed: what it points at keeps its file.
        assert!(target.join("left").exists() && link.symlink_metadata().is_ok());
    }
}
