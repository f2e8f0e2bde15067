//! A command's own temporary folder, made by the hub before the launcher that runs the command is
//! started (a launcher started ahead builds its walls around it) and removed when the command is done.

use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

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
            let dir =
                std::env::temp_dir().join(format!("portcullis-cmd-{}-{random:016x}", std::process::id()));
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

impl Drop for PrivateTmp {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
