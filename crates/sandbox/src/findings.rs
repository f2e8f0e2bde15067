//! What the kernel refused, read from a sandboxed command's own error output. Landlock and the
//! namespaces refuse with plain error numbers, so the signs are the messages programs print for them;
//! each line carrying one, and naming a place the profile does not grant, becomes a finding the tool
//! result, the ledger and the live view show. Knowledge as data: one row per sign.

use portcullis_harness::SandboxProfile;
use portcullis_harness::paths::canonicalize_lenient;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// What kind of wall a finding is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Wall {
    /// A read or write outside the profile (Landlock, a hidden or read-only place).
    Files,
    /// The network (no network namespace interfaces, Landlock's TCP rules).
    Network,
    /// A resource limit.
    Limit,
}

/// The messages programs print when the walls refuse, and what they mean.
pub const SIGNS: &[(&str, Wall, &str)] = &[
    (
        "Permission denied",
        Wall::Files,
        "EACCES: Landlock refuses what the profile does not grant (a file, or TCP without network)",
    ),
    ("Operation not permitted", Wall::Files, "EPERM: refused by the sandbox"),
    ("Read-only file system", Wall::Files, "EROFS: a place kept read-only inside"),
    ("Invalid cross-device link", Wall::Files, "EXDEV: Landlock refuses links and renames that widen access"),
    (
        "Network is unreachable",
        Wall::Network,
        "ENETUNREACH: the command has a network of its own, with nothing in it",
    ),
    ("Temporary failure in name resolution", Wall::Network, "no network: names cannot be looked up"),
    ("Could not resolve host", Wall::Network, "no network: names cannot be looked up"),
    ("Name or service not known", Wall::Network, "no network: names cannot be looked up"),
    ("Cannot allocate memory", Wall::Limit, "the memory limit"),
    ("cannot allocate", Wall::Limit, "the memory limit"),
    ("failed to allocate", Wall::Limit, "the memory limit"),
    ("memory exhausted", Wall::Limit, "the memory limit"),
    ("MemoryError", Wall::Limit, "the memory limit"),
    ("out of memory", Wall::Limit, "the memory limit"),
    ("File size limit exceeded", Wall::Limit, "the file size limit"),
    ("Too many open files", Wall::Limit, "the open files limit"),
    ("Resource temporarily unavailable", Wall::Limit, "the process limit (fork failed)"),
];

/// Messages that show a wall only when the place they name is hidden inside the sandbox (an empty
/// folder there, so a file in it is "not found" rather than refused).
pub const HIDDEN_SIGNS: &[(&str, &str)] =
    &[("No such file or directory", "hidden inside the sandbox (a secret or the hub's own file)")];

/// One line of a command's error output that shows a wall at work.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    pub wall: Wall,
    /// What the sign means.
    pub meaning: String,
    /// The line, as the program printed it (untrusted text: escape it where a person reads it).
    pub line: String,
    /// The place the line names, when it names one outside what the profile grants.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// How many lines said the same (same wall, meaning and place); `line` is the first.
    pub count: usize,
}

/// The most findings kept for one command.
const MAX_FINDINGS: usize = 20;
/// The longest line kept.
const MAX_LINE: usize = 300;

/// The candidate paths in a line: quoted words and words starting with `/`, `./` or `~`.
fn paths_in(line: &str) -> Vec<String> {
    let mut found = Vec::new();
    for quote in ['\'', '"', '`', '‘', '’'] {
        for (i, part) in line.split(quote).enumerate() {
            if i % 2 == 1 && !part.is_empty() && !part.contains(' ') {
                found.push(part.to_owned());
            }
        }
    }
    for word in line.split(|c: char| c.is_whitespace() || c == ':' || c == ',' || c == '(' || c == ')') {
        let word = word.trim_matches(|c| c == '\'' || c == '"' || c == '`' || c == '‘' || c == '’');
        if word.contains('/') && !word.contains("://") {
            found.push(word.to_owned());
        }
    }
    found
}

/// Whether the profile lets a command reach `path` at all for reading, and for writing.
fn granted(profile: &SandboxProfile, path: &Path) -> (bool, bool) {
    let hidden = profile.hidden.iter().any(|h| path.starts_with(h));
    let read_only = profile.read_only.iter().any(|r| path.starts_with(r));
    let write = !hidden && !read_only && profile.write.iter().any(|w| path.starts_with(w));
    let read = !hidden
        && (write
            || profile.system.iter().chain(&profile.read).chain(&profile.write).any(|r| path.starts_with(r)));
    (read, write)
}

/// The findings in `stderr` of a command run from `cwd` inside `profile`.
pub fn findings(stderr: &str, profile: &SandboxProfile, cwd: &Path) -> Vec<Finding> {
    let mut out = Vec::new();
    // Resolved as the kernel resolved it: a link inside the project may point outside.
    let full = |p: &String| {
        let joined = if p.starts_with('/') { PathBuf::from(p) } else { cwd.join(p) };
        canonicalize_lenient(&joined).unwrap_or(joined)
    };
    for line in stderr.lines() {
        if let Some((_, meaning)) = HIDDEN_SIGNS.iter().find(|(sign, _)| line.contains(sign))
            && let Some(path) =
                paths_in(line).into_iter().find(|p| profile.hidden.iter().any(|h| full(p).starts_with(h)))
        {
            push(&mut out, Wall::Files, meaning, line, Some(path));
            continue;
        }
        let Some((_, wall, meaning)) = SIGNS.iter().find(|(sign, _, _)| line.contains(sign)) else {
            continue;
        };
        let path = if *wall == Wall::Files {
            let outside = paths_in(line).into_iter().find(|p| {
                let (read, write) = granted(profile, &full(p));
                !(read && write)
            });
            match outside {
                Some(p) => Some(p),
                // A refusal naming only granted places is the file's own permissions, not the walls.
                None if !paths_in(line).is_empty() => continue,
                None => None,
            }
        } else {
            None
        };
        push(&mut out, *wall, meaning, line, path);
    }
    out
}

/// Adds a finding, or counts it again when one says the same.
fn push(out: &mut Vec<Finding>, wall: Wall, meaning: &str, line: &str, path: Option<String>) {
    if let Some(same) = out.iter_mut().find(|f| f.meaning == meaning && f.path == path) {
        same.count += 1;
        return;
    }
    if out.len() < MAX_FINDINGS {
        out.push(Finding {
            wall,
            meaning: meaning.to_owned(),
            line: line.chars().take(MAX_LINE).collect(),
            path,
            count: 1,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use portcullis_harness::{Enforcement, SandboxLimits};

    fn profile() -> SandboxProfile {
        SandboxProfile {
            enforcement: Enforcement::Confined,
            system: vec!["/usr".into()],
            read: vec![],
            write: vec!["/work/p".into()],
            hidden: vec!["/home/u/.ssh".into()],
            read_only: vec!["/work/p/.git/hooks".into()],
            network: false,
            network_reason: None,
            egress: None,
            limits: SandboxLimits::default(),
            contained: None,
            direct_writes: None,
        }
    }

    #[test]
    fn each_sign_is_found_with_the_place_it_names() {
        let cwd = Path::new("/work/p");
        let rows = [
            ("sort: open failed: /etc/x: Permission denied", Some("/etc/x")),
            ("cp: cannot create regular file '/tmp/out': Permission denied", Some("/tmp/out")),
            (
                "PermissionError: [Errno 13] Permission denied: '/home/u/.ssh/id_rsa'",
                Some("/home/u/.ssh/id_rsa"),
            ),
            ("bash: .git/hooks/pre-commit: Read-only file system", Some(".git/hooks/pre-commit")),
            (
                "ln: failed to create hard link 'x' => '/outside/f': Invalid cross-device link",
                Some("/outside/f"),
            ),
        ];
        for (line, path) in rows {
            let found = findings(line, &profile(), cwd);
            assert_eq!(found.len(), 1, "{line}");
            assert_eq!(found[0].path.as_deref(), path, "{line}");
        }
        let net = findings("curl: (7) Failed to connect: Network is unreachable", &profile(), cwd);
        assert_eq!(net[0].wall, Wall::Network);
    }

    #[test]
    fn a_missing_file_is_a_finding_only_inside_a_hidden_place() {
        let cwd = Path::new("/work/p");
        let hidden = findings("cat: /home/u/.ssh/id_rsa: No such file or directory", &profile(), cwd);
        assert_eq!(hidden[0].path.as_deref(), Some("/home/u/.ssh/id_rsa"));
        assert!(findings("cat: missing.txt: No such file or directory", &profile(), cwd).is_empty());
    }

    #[test]
    fn a_refusal_naming_only_granted_places_is_not_the_sandbox() {
        let found = findings("cat: /work/p/secret.txt: Permission denied", &profile(), Path::new("/work/p"));
        assert!(found.is_empty(), "{found:?}");
    }
}
