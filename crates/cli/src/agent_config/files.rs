//! Writing an agent's file safely: atomically (a temporary file beside it, then a rename onto the real
//! file, symbolic links followed), owner-only when it holds a secret, with the file as it was before
//! Portcullis kept beside it (`<file>.portcullis-backup`, owner-only; `<file>.portcullis-created` when
//! there was no file) so `--undo` puts it back byte for byte. And the unified diff shown first.

use super::ConfigError;
use portcullis_api::line_diff::{DiffLine, line_diff};
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The copy of the file as it was before Portcullis first changed it.
pub fn backup_path(path: &Path) -> PathBuf {
    suffixed(path, ".portcullis-backup")
}

/// The mark that Portcullis made the file (there was none).
pub fn created_mark(path: &Path) -> PathBuf {
    suffixed(path, ".portcullis-created")
}

fn suffixed(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// The file's text, `None` when there is none.
pub fn read(path: &Path) -> Result<Option<String>, ConfigError> {
    match std::fs::read(path) {
        Ok(bytes) => String::from_utf8(bytes).map(Some).map_err(|_| ConfigError::Unparsable {
            path: path.display().to_string(),
            format: "UTF-8 text",
            reason: "invalid UTF-8".into(),
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(ConfigError::io(path, e)),
    }
}

/// The file a write to `path` lands in: its link's target when it is a symbolic link.
fn real_path(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_owned())
}

/// Writes `bytes` to `path` atomically with `mode`.
pub fn write_atomic(path: &Path, bytes: &[u8], mode: u32) -> Result<(), ConfigError> {
    let path = real_path(path);
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| ConfigError::io(dir, e))?;
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let temp = dir.join(format!(".{name}.portcullis-{}", std::process::id()));
    let written = (|| {
        let mut file =
            std::fs::OpenOptions::new().write(true).create(true).truncate(true).mode(mode).open(&temp)?;
        // The mode given at creation is masked by the umask: set it as asked.
        file.set_permissions(std::fs::Permissions::from_mode(mode))?;
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&temp, &path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    written.map_err(|e| ConfigError::io(&path, e))
}

/// The mode a changed file gets: owner-only when it holds a secret (whatever it had), else the one it
/// has (0644 for a new file).
fn mode_for(path: &Path, secret: bool) -> u32 {
    let current = std::fs::metadata(path).ok().map(|m| m.permissions().mode() & 0o777);
    match (secret, current) {
        (true, Some(mode)) => mode & 0o700,
        (true, None) => 0o600,
        (false, Some(mode)) => mode,
        (false, None) => 0o644,
    }
}

/// Writes `after` over the file, first keeping what was there (unless a backup or mark of an earlier
/// `setup` is there already: that one is the file before Portcullis).
pub fn write_with_backup(
    path: &Path,
    before: Option<&str>,
    after: &str,
    secret: bool,
) -> Result<(), ConfigError> {
    let (backup, mark) = (backup_path(path), created_mark(path));
    if !backup.exists() && !mark.exists() {
        match before {
            Some(text) => write_atomic(&backup, text.as_bytes(), 0o600)?,
            None => write_atomic(&mark, b"", 0o600)?,
        }
    }
    write_atomic(path, after.as_bytes(), mode_for(path, secret))
}

/// What `--undo` does to one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Undo {
    /// Put the backup's text back.
    Restore(String),
    /// Portcullis made the file: remove it.
    Remove,
}

/// The undo of `path`, if `setup` changed it.
pub fn undo_of(path: &Path) -> Result<Option<Undo>, ConfigError> {
    if let Some(text) = read(&backup_path(path))? {
        return Ok(Some(Undo::Restore(text)));
    }
    Ok(created_mark(path).exists().then_some(Undo::Remove))
}

/// Carries out `undo` and removes the backup or mark.
pub fn carry_out(path: &Path, undo: &Undo) -> Result<(), ConfigError> {
    match undo {
        Undo::Restore(text) => {
            let mode = std::fs::metadata(path).map(|m| m.permissions().mode() & 0o777).unwrap_or(0o600);
            write_atomic(path, text.as_bytes(), mode)?;
            let backup = backup_path(path);
            std::fs::remove_file(&backup).map_err(|e| ConfigError::io(&backup, e))
        }
        Undo::Remove => {
            match std::fs::remove_file(path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(ConfigError::io(path, e)),
                _ => {}
            }
            let mark = created_mark(path);
            std::fs::remove_file(&mark).map_err(|e| ConfigError::io(&mark, e))
        }
    }
}

/// The unified diff of `before` (`None`: no file) and `after` (`None`: removed), named `shown`.
pub fn unified_diff(shown: &str, before: Option<&str>, after: Option<&str>) -> String {
    let old_name = if before.is_some() { shown.to_owned() } else { "/dev/null".into() };
    let new_name = if after.is_some() { shown.to_owned() } else { "/dev/null".into() };
    let lines = line_diff(before.unwrap_or(""), after.unwrap_or(""));
    let mut out = format!("--- {old_name}\n+++ {new_name}\n");
    for hunk in lines.split(|l| matches!(l, DiffLine::Skipped { .. })).filter(|h| !h.is_empty()) {
        out.push_str(&hunk_header(hunk));
        for line in hunk {
            match line {
                DiffLine::Same { text, .. } => out.push_str(&format!(" {text}\n")),
                DiffLine::Removed { text, .. } => out.push_str(&format!("-{text}\n")),
                DiffLine::Added { text, .. } => out.push_str(&format!("+{text}\n")),
                DiffLine::Truncated { count } => out.push_str(&format!("… {count} more lines\n")),
                DiffLine::Skipped { .. } => {}
            }
        }
    }
    out
}

/// `@@ -start,count +start,count @@` of one hunk (a side with no lines starts at the line before).
fn hunk_header(hunk: &[DiffLine]) -> String {
    let (mut old_count, mut new_count) = (0u32, 0u32);
    let (mut old_start, mut new_start) = (None, None);
    for line in hunk {
        match line {
            DiffLine::Same { old, new, .. } => {
                old_start.get_or_insert(*old);
                new_start.get_or_insert(*new);
                old_count += 1;
                new_count += 1;
            }
            DiffLine::Removed { old, .. } => {
                old_start.get_or_insert(*old);
                old_count += 1;
            }
            DiffLine::Added { new, .. } => {
                new_start.get_or_insert(*new);
                new_count += 1;
            }
            DiffLine::Skipped { .. } | DiffLine::Truncated { .. } => {}
        }
    }
    // A side without lines: the line before the other side's first one.
    let other = |start: Option<u32>| start.map(|s| s.saturating_sub(1)).unwrap_or(0);
    let old_start = old_start.unwrap_or_else(|| other(new_start));
    let new_start = new_start.unwrap_or_else(|| other(Some(old_start)));
    format!("@@ -{old_start},{old_count} +{new_start},{new_count} @@\n")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_new_file_is_all_added() {
        let diff = unified_diff("x.json", None, Some("{\n}\n"));
        assert_eq!(diff, "--- /dev/null\n+++ x.json\n@@ -0,0 +1,2 @@\n+{\n+}\n");
    }

    #[test]
    fn a_change_shows_its_context_and_line_numbers() {
        let before = "a\nb\nc\nd\ne\nf\ng\nh\n";
        let after = "a\nb\nc\nd\nE\nf\ng\nh\n";
        let diff = unified_diff("f", Some(before), Some(after));
        assert_eq!(diff, "--- f\n+++ f\n@@ -2,7 +2,7 @@\n b\n c\n d\n-e\n+E\n f\n g\n h\n");
    }

    #[test]
    fn a_removed_file_is_all_removed() {
        let diff = unified_diff("f", Some("x\n"), None);
        assert_eq!(diff, "--- f\n+++ /dev/null\n@@ -1,1 +0,0 @@\n-x\n");
    }

    #[test]
    fn backup_then_undo_restores_bytes_and_removes_made_files() {
        let dir = tempfile::tempdir().unwrap();
        let kept = dir.path().join("kept.json");
        std::fs::write(&kept, "{ \"a\": 1 }").unwrap();
        write_with_backup(&kept, Some("{ \"a\": 1 }"), "{}\n", true).unwrap();
        let mode = std::fs::metadata(&kept).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode & 0o077, 0, "a file with a secret is owner-only");
        let backup_mode = std::fs::metadata(backup_path(&kept)).unwrap().permissions().mode() & 0o777;
        assert_eq!(backup_mode, 0o600);
        carry_out(&kept, &undo_of(&kept).unwrap().unwrap()).unwrap();
        assert_eq!(std::fs::read_to_string(&kept).unwrap(), "{ \"a\": 1 }");
        assert!(!backup_path(&kept).exists());

        let made = dir.path().join("sub/made.toml");
        write_with_backup(&made, None, "x = 1\n", false).unwrap();
        assert_eq!(undo_of(&made).unwrap(), Some(Undo::Remove));
        carry_out(&made, &Undo::Remove).unwrap();
        assert!(!made.exists() && !created_mark(&made).exists());
    }
}
