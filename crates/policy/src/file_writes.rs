//! Writing a policy file without ever leaving half of one: the text goes to a temporary file beside it,
//! synced, then linked (a new file) or renamed (a replaced one) into place. The first user policy file
//! (`always_target`) and an amended one (`approval`) are both written here.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// A temporary file's name beside `path`, unique in this process and among processes.
fn temp_beside(path: &Path) -> PathBuf {
    let folder = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    folder.join(format!(
        ".{name}.{}-{}.tmp",
        std::process::id(),
        TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)
    ))
}

/// Writes `text` to a temporary file beside `path` (same permissions), syncs it, checks `path` still
/// holds `expected`, and renames over it.
pub(crate) fn write_replacing(path: &Path, text: &str, expected: &str) -> std::io::Result<()> {
    let folder = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let temp = temp_beside(path);
    let permissions = std::fs::metadata(path)?.permissions();
    let result = (|| {
        let mut file = std::fs::OpenOptions::new().write(true).create_new(true).open(&temp)?;
        file.set_permissions(permissions)?;
        file.write_all(text.as_bytes())?;
        file.sync_all()?;
        if std::fs::read_to_string(path)? != expected {
            return Err(std::io::Error::other("the file changed while the amendment was written"));
        }
        std::fs::rename(&temp, path)?;
        if let Ok(dir) = std::fs::File::open(folder) {
            let _ = dir.sync_all();
        }
        Ok(())
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    result
}

/// Creates the policy file `path` holding `text`, refusing if it exists by then: written to a temporary
/// file beside it, synced, then linked into place (a link never replaces a file), readable by its owner
/// only. A config folder made here is its owner's only too: it will hold the hub's credentials.
pub(crate) fn create_file(path: &Path, text: &str) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    let folder = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(folder)?;
    let temp = temp_beside(path);
    let result = (|| {
        use std::os::unix::fs::OpenOptionsExt;
        let mut file = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&temp)?;
        file.write_all(text.as_bytes())?;
        file.sync_all()?;
        std::fs::hard_link(&temp, path).map_err(|e| match e.kind() {
            std::io::ErrorKind::AlreadyExists => {
                std::io::Error::other("the file was created by someone else meanwhile; answer again")
            }
            _ => e,
        })?;
        if let Ok(dir) = std::fs::File::open(folder) {
            let _ = dir.sync_all();
        }
        Ok(())
    })();
    let _ = std::fs::remove_file(&temp);
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn creating_never_replaces_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config/policy.json");
        create_file(&path, "{}\n").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{}\n");
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        let e = create_file(&path, "{\"x\": 1}\n").unwrap_err();
        assert!(e.to_string().contains("created by someone else"), "{e}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{}\n");
        assert_eq!(std::fs::read_dir(path.parent().unwrap()).unwrap().count(), 1, "no temporary file left");
        let folder = std::fs::metadata(path.parent().unwrap()).unwrap().permissions().mode() & 0o777;
        assert_eq!(folder, 0o700, "a config folder made here is its owner's only");
    }
}
