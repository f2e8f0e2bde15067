//! Replacing a file at an evaluated canonical path without ever following a symlink swapped in: the
//! folder is opened one component at a time from `/` with `O_NOFOLLOW` (created there when missing),
//! and the temp file, the checks of the target and the rename are all made relative to that opened
//! folder (`openat`, `fstatat`, `renameat`), so a folder swapped for a symlink after the check cannot
//! send a byte outside it. Files are written without execute bits unless the action asked for them.
//! Blocking functions: call them from `spawn_blocking`.

use crate::errors::{io_error, path_changed};
use nix::errno::Errno;
use nix::fcntl::{AtFlags, OFlag, openat, renameat};
use nix::sys::stat::{FileStat, Mode, SFlag, fchmod, fstatat, mkdirat};
use nix::unistd::{UnlinkatFlags, unlinkat};
use portcullis_harness::CallErrorCode;
use portcullis_harness::ToolError;
use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::Write;
use std::os::fd::OwnedFd;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// What `atomic_write` expects to find at the target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expect {
    /// Whatever is there (a regular file or nothing).
    Any,
    /// The file with this dev/ino (an edit replaces the file it read).
    Identity(u64, u64),
}

/// What happens to execute bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExecBits {
    /// The file has none: a new file is created 0666 & umask, a replaced one keeps its mode without
    /// execute bits (what `write` does unless asked for an executable file).
    Clear,
    /// A replaced file keeps its execute bits; none is added (what `edit` does).
    Keep,
    /// The file is executable: a new one is created 0777 & umask, a replaced one gets `x` wherever it
    /// has `r` (`write` with `executable: true`, an action that says so).
    Set,
}

/// Permission bits a replaced file gets from its old mode (set-id and sticky bits are always dropped).
pub fn replaced_mode(old: u32, exec: ExecBits) -> u32 {
    let base = old & 0o777;
    match exec {
        ExecBits::Clear => base & !0o111,
        ExecBits::Keep => base,
        ExecBits::Set => (base & !0o111) | ((base & 0o444) >> 2),
    }
}

/// Open flags of a folder on the way down: no symlink followed, no read permission needed on Linux.
fn dir_flags() -> OFlag {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    let access = OFlag::O_PATH;
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    let access = OFlag::O_RDONLY;
    access | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC
}

fn errno_error(path: &Path, errno: Errno) -> ToolError {
    io_error(path, &std::io::Error::from(errno))
}

/// What is at a name inside an opened folder.
struct Entry {
    kind: SFlag,
    dev: u64,
    ino: u64,
    mode: u32,
}

// dev_t, ino_t and mode_t have different widths on different platforms.
#[allow(clippy::unnecessary_cast, clippy::useless_conversion)]
fn entry_of(st: &FileStat) -> Entry {
    Entry {
        kind: SFlag::from_bits_truncate(st.st_mode & SFlag::S_IFMT.bits()),
        dev: st.st_dev as u64,
        ino: st.st_ino as u64,
        mode: u32::from(st.st_mode),
    }
}

/// The entry `name` in `dir`, not following a symlink; `None` when there is none.
fn entry_at(dir: &OwnedFd, name: &OsStr, shown: &Path) -> Result<Option<Entry>, ToolError> {
    match fstatat(dir, name, AtFlags::AT_SYMLINK_NOFOLLOW) {
        Ok(st) => Ok(Some(entry_of(&st))),
        Err(Errno::ENOENT) => Ok(None),
        Err(e) => Err(errno_error(shown, e)),
    }
}

/// Opens the canonical absolute folder `dir` one component at a time from `/`, never following a
/// symlink: a component that is (or became) a symlink fails with `path_changed`. Missing components
/// are created when `create` is true.
pub fn open_dir(dir: &Path, create: bool) -> Result<OwnedFd, ToolError> {
    let mut shown = PathBuf::from("/");
    let mut fd =
        openat(nix::fcntl::AT_FDCWD, "/", dir_flags(), Mode::empty()).map_err(|e| errno_error(&shown, e))?;
    for part in dir.components() {
        let name = match part {
            Component::RootDir => continue,
            Component::Normal(name) => name,
            // Evaluated paths are canonical: no `.`, `..` or prefixes.
            _ => return Err(path_changed(dir)),
        };
        shown.push(name);
        let next = match openat(&fd, name, dir_flags(), Mode::empty()) {
            Ok(next) => next,
            Err(Errno::ENOENT) if create => {
                match mkdirat(&fd, name, Mode::from_bits_truncate(0o777)) {
                    Ok(()) | Err(Errno::EEXIST) => {}
                    Err(e) => return Err(errno_error(&shown, e)),
                }
                openat(&fd, name, dir_flags(), Mode::empty())
                    .map_err(|e| component_error(&fd, name, &shown, e))?
            }
            Err(e) => return Err(component_error(&fd, name, &shown, e)),
        };
        fd = next;
    }
    Ok(fd)
}

/// Why a folder component did not open: a symlink there is a swap (`path_changed`); a file there is
/// `not_a_directory`.
fn component_error(parent: &OwnedFd, name: &OsStr, shown: &Path, errno: Errno) -> ToolError {
    if !matches!(errno, Errno::ENOTDIR | Errno::ELOOP) {
        return errno_error(shown, errno);
    }
    match entry_at(parent, name, shown) {
        Ok(Some(entry)) if entry.kind == SFlag::S_IFLNK => path_changed(shown),
        Ok(Some(entry)) if entry.kind != SFlag::S_IFDIR => {
            ToolError::new(CallErrorCode::NotADirectory, format!("{} is not a directory", shown.display()))
        }
        _ => path_changed(shown),
    }
}

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Checks the target inside the opened folder: not a symlink, a regular file if anything, the
/// expected file for an edit. Returns its mode when it exists.
fn check_target(
    dir: &OwnedFd,
    name: &OsStr,
    target: &Path,
    expect: Expect,
) -> Result<Option<u32>, ToolError> {
    match entry_at(dir, name, target)? {
        Some(entry) if entry.kind == SFlag::S_IFLNK => Err(path_changed(target)),
        Some(entry) if entry.kind != SFlag::S_IFREG => Err(ToolError::new(
            CallErrorCode::NotAFile,
            format!("{} is not a regular file", target.display()),
        )),
        Some(entry) => match expect {
            Expect::Identity(dev, ino) if (entry.dev, entry.ino) != (dev, ino) => Err(path_changed(target)),
            _ => Ok(Some(entry.mode)),
        },
        None if matches!(expect, Expect::Identity(..)) => Err(path_changed(target)),
        None => Ok(None),
    }
}

/// Replaces the evaluated canonical `target` with `data`: opens its folder without following
/// symlinks (creating missing folders only when `create_missing` is true), checks the target is not
/// a symlink (nor another file than expected), writes a temp file in that folder (`O_EXCL` +
/// `O_NOFOLLOW`, relative to the opened folder), fsyncs it, re-checks, renames it over the target
/// within the folder and fsyncs the folder. Execute bits as `exec` says.
pub fn atomic_write(
    target: &Path,
    data: &[u8],
    create_missing: bool,
    expect: Expect,
    exec: ExecBits,
) -> Result<(), ToolError> {
    let (Some(parent), Some(name)) = (target.parent(), target.file_name()) else {
        return Err(ToolError::new(
            CallErrorCode::InvalidPath,
            format!("{} has no file name", target.display()),
        ));
    };
    let dir = open_dir(parent, create_missing)?;
    let old_mode = check_target(&dir, name, target, expect)?;
    let mut temp = OsString::from(".");
    temp.push(name);
    temp.push(format!(
        ".portcullis-{}-{}.tmp",
        std::process::id(),
        TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let shown_temp = parent.join(&temp);
    let create_mode = if exec == ExecBits::Set { 0o777 } else { 0o666 };
    let file = openat(
        &dir,
        temp.as_os_str(),
        OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
        Mode::from_bits_truncate(create_mode),
    )
    .map_err(|e| errno_error(&shown_temp, e))?;
    let result = fill_and_rename(&dir, File::from(file), &temp, name, target, data, expect, old_mode, exec);
    if result.is_err() {
        // Removed inside the opened folder, wherever that folder is now.
        let _ = unlinkat(&dir, temp.as_os_str(), UnlinkatFlags::NoRemoveDir);
    }
    result
}

#[allow(clippy::too_many_arguments)] // one step of atomic_write, with its state
fn fill_and_rename(
    dir: &OwnedFd,
    mut file: File,
    temp: &OsStr,
    name: &OsStr,
    target: &Path,
    data: &[u8],
    expect: Expect,
    old_mode: Option<u32>,
    exec: ExecBits,
) -> Result<(), ToolError> {
    file.write_all(data).map_err(|e| io_error(target, &e))?;
    if let Some(old) = old_mode {
        fchmod(&file, Mode::from_bits_truncate(replaced_mode(old, exec) as _))
            .map_err(|e| errno_error(target, e))?;
    }
    file.sync_all().map_err(|e| io_error(target, &e))?;
    drop(file);
    check_target(dir, name, target, expect)?;
    renameat(dir, temp, dir, name).map_err(|e| errno_error(target, e))?;
    // Make the rename durable (best effort: the data is already synced).
    if let Ok(readable) =
        openat(dir, ".", OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC, Mode::empty())
    {
        let _ = File::from(readable).sync_all();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_of_replaced_files() {
        assert_eq!(replaced_mode(0o100755, ExecBits::Clear), 0o644);
        assert_eq!(replaced_mode(0o104755, ExecBits::Keep), 0o755, "set-id bits dropped");
        assert_eq!(replaced_mode(0o100640, ExecBits::Keep), 0o640, "no x added");
        assert_eq!(replaced_mode(0o100640, ExecBits::Set), 0o750);
        assert_eq!(replaced_mode(0o100600, ExecBits::Clear), 0o600);
    }
}
