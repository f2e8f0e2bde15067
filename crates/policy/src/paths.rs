//! Paths as a policy sees them: `~` expanded, relative paths joined to the cwd, then canonical through
//! the harness's resolver (a new file in new folders resolves; a symlink inside a root that points
//! outside is outside), and deny globs.

use portcullis_harness::paths::{PathError, canonicalize_lenient_under_with, canonicalize_lenient_with};
use std::path::{Component, Path, PathBuf};

/// Resolves a path as the kernel would when it is opened: `~` expanded, relative paths joined to the
/// cwd, then the harness's canonical resolver (the one the tools describe their actions with).
pub fn resolve(raw: &str, cwd: &Path, home: Option<&Path>) -> Result<PathBuf, PathError> {
    let expanded = expand_tilde(raw, cwd, home)?;
    let absolute = if expanded.is_absolute() { expanded } else { cwd.join(expanded) };
    canonicalize_lenient_with(&absolute, &mut crate::snapshot::look_once)
}

/// Like [`resolve`] from a working directory that is already canonical (an evaluation canonicalizes its
/// cwd once, then resolves every word of the command against it).
pub fn resolve_in(raw: &str, canonical_cwd: &Path, home: Option<&Path>) -> Result<PathBuf, PathError> {
    let expanded = expand_tilde(raw, canonical_cwd, home)?;
    canonicalize_lenient_under_with(canonical_cwd, &expanded, &mut crate::snapshot::look_once)
}

/// Tilde expansion as bash does it at the start of a word: `~` and `~/x` are the home folder, `~+` the
/// working directory, `~name` that user's home (from `/etc/passwd`). What is only known when the command
/// runs (`~-` is `$OLDPWD`, `~+N`/`~-N` the directory stack) or names no known user is an error, so it is
/// never taken for a relative path.
pub(crate) fn expand_tilde(raw: &str, cwd: &Path, home: Option<&Path>) -> Result<PathBuf, PathError> {
    let Some(rest) = raw.strip_prefix('~') else { return Ok(PathBuf::from(raw)) };
    let (prefix, tail) = match rest.split_once('/') {
        Some((prefix, tail)) => (prefix, tail),
        None => (rest, ""),
    };
    let unknown = |why: &str| PathError::Io {
        path: PathBuf::from(raw),
        source: std::io::Error::other(format!("the tilde form ~{prefix} {why}")),
    };
    let base = match prefix {
        "" => {
            home.map(Path::to_path_buf).ok_or_else(|| unknown("needs the home folder, which is not known"))?
        }
        "+" => cwd.to_path_buf(),
        "-" => return Err(unknown("is $OLDPWD, only known when the command runs")),
        p if p.starts_with('+') || p.starts_with('-') => {
            return Err(unknown("is the directory stack, only known when the command runs"));
        }
        user => user_home(user).ok_or_else(|| unknown("names no user of this machine"))?,
    };
    Ok(if tail.is_empty() { base } else { base.join(tail) })
}

/// A user's home folder from `/etc/passwd`.
fn user_home(user: &str) -> Option<PathBuf> {
    let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
    passwd.lines().find_map(|line| {
        let fields: Vec<&str> = line.split(':').collect();
        (fields.len() >= 7 && fields[0] == user && !fields[5].is_empty()).then(|| PathBuf::from(fields[5]))
    })
}

/// Glob match: `*` and `?` within one component, `**` across components. A pattern without `/` is
/// matched against every component of the path (so `.ssh` matches `/home/a/.ssh/id_rsa`); a relative
/// pattern with `/` may start at any depth; an absolute one is anchored at `/`.
pub fn glob_matches_path(pattern: &str, path: &Path) -> bool {
    if !pattern.contains('/') {
        return path.components().any(|c| match c {
            Component::Normal(name) => name.to_str().is_some_and(|n| glob_component(pattern, n)),
            _ => false,
        });
    }
    let Some(text) = path.to_str() else { return false };
    // A relative pattern with a slash (`secrets/**`) may start at any depth.
    let anchored = if pattern.starts_with('/') { pattern.to_owned() } else { format!("**/{pattern}") };
    let pattern_parts: Vec<&str> = anchored.split('/').filter(|p| !p.is_empty()).collect();
    let text_parts: Vec<&str> = text.split('/').filter(|p| !p.is_empty()).collect();
    glob_parts(&pattern_parts, &text_parts)
}

/// The first of `globs` that matches `path` (as [`glob_matches_path`]), the path's components split
/// once for all the globs without a `/` (every path a command names meets every deny glob).
pub fn first_glob_match<'a>(globs: &'a [String], path: &Path) -> Option<&'a String> {
    let mut names: Option<Vec<&str>> = None;
    globs.iter().find(|glob| {
        if glob.contains('/') {
            return glob_matches_path(glob, path);
        }
        let names = names.get_or_insert_with(|| {
            path.components()
                .filter_map(|c| match c {
                    Component::Normal(name) => name.to_str(),
                    _ => None,
                })
                .collect()
        });
        names.iter().any(|n| glob_component(glob, n))
    })
}

fn glob_parts(pattern: &[&str], text: &[&str]) -> bool {
    match pattern.split_first() {
        None => text.is_empty(),
        Some((&"**", rest)) => (0..=text.len()).any(|skip| glob_parts(rest, &text[skip..])),
        Some((first, rest)) => match text.split_first() {
            Some((t, text_rest)) => glob_component(first, t) && glob_parts(rest, text_rest),
            None => false,
        },
    }
}

/// `*` any run, `?` one character, within one component. Matched on bytes when both sides are ASCII
/// (every protected and deny glob, and nearly every path), on characters otherwise: no allocation on the
/// common path, since every path a command names is matched against every glob.
pub(crate) fn glob_component(pattern: &str, text: &str) -> bool {
    if pattern.is_ascii() && text.is_ascii() {
        return wildcard(pattern.as_bytes(), text.as_bytes(), b'*', b'?');
    }
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    wildcard(&p, &t, '*', '?')
}

/// The greedy `*`/`?` matcher with one backtrack point (linear in practice).
fn wildcard<T: Copy + PartialEq>(p: &[T], t: &[T], any_run: T, any_one: T) -> bool {
    let (mut pi, mut ti) = (0usize, 0usize);
    let (mut star, mut mark) = (None::<usize>, 0usize);
    while let Some(&tc) = t.get(ti) {
        match p.get(pi) {
            Some(&pc) if pc == any_one || pc == tc => {
                pi += 1;
                ti += 1;
                continue;
            }
            Some(&pc) if pc == any_run => {
                star = Some(pi);
                mark = ti;
                pi += 1;
                continue;
            }
            _ => {}
        }
        let Some(s) = star else { return false };
        pi = s + 1;
        mark += 1;
        ti = mark;
    }
    while p.get(pi) == Some(&any_run) {
        pi += 1;
    }
    pi == p.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        assert!(glob_matches_path(".ssh", Path::new("/home/a/.ssh/id_rsa")));
        assert!(glob_matches_path(".env*", Path::new("/p/.env.local")));
        assert!(!glob_matches_path(".env*", Path::new("/p/env")));
        assert!(glob_matches_path("*.pem", Path::new("/p/certs/server.pem")));
        assert!(glob_matches_path("/etc/**", Path::new("/etc/ssh/sshd_config")));
        assert!(glob_matches_path("/p/**/secret?.txt", Path::new("/p/a/b/secret1.txt")));
        assert!(!glob_matches_path("/p/**/secret?.txt", Path::new("/q/a/secret1.txt")));
    }

    #[test]
    fn first_glob_match_agrees_with_each_glob_alone() {
        let globs: Vec<String> =
            [".ssh", ".env*", "*.pem", "/etc/**", "/p/**/secret?.txt", "é*", "a*b?c", "*"]
                .iter()
                .map(|g| (*g).to_owned())
                .collect();
        let paths = [
            "/home/a/.ssh/id_rsa",
            "/p/.env.local",
            "/p/env",
            "/p/certs/server.pem",
            "/etc/ssh/sshd_config",
            "/p/a/b/secret1.txt",
            "/q/a/secret1.txt",
            "/q/éclair",
            "/x/aXXbYc/z",
            "/",
            "/..",
            "relative/name",
        ];
        for path in paths {
            let path = Path::new(path);
            // Every suffix of the list, so each glob is once the first that may match.
            for start in 0..globs.len() {
                let list = &globs[start..];
                let expected = list.iter().find(|g| glob_matches_path(g, path));
                assert_eq!(first_glob_match(list, path), expected, "{path:?} from {start}");
            }
        }
    }

    #[test]
    fn component_wildcards_match_on_bytes_as_on_characters() {
        // One row per (pattern, text, expected); the ASCII rows run on bytes, the others on characters.
        let rows: &[(&str, &str, bool)] = &[
            ("*", "", true),
            ("?", "", false),
            ("a*", "abc", true),
            ("*c", "abc", true),
            ("a?c", "abc", true),
            ("a?c", "ac", false),
            ("*.pem", "server.pem", true),
            ("*.pem", "server.pem.bak", false),
            ("a*b*c", "aXbYbZc", true),
            ("é?", "éa", true),
            ("?", "é", true),
            ("é*", "e", false),
            ("lit*", "lit*", true),
        ];
        for (pattern, text, expected) in rows {
            assert_eq!(glob_component(pattern, text), *expected, "{pattern} ~ {text}");
            let (p, t): (Vec<char>, Vec<char>) = (pattern.chars().collect(), text.chars().collect());
            assert_eq!(wildcard(&p, &t, '*', '?'), *expected, "chars: {pattern} ~ {text}");
        }
    }

    #[test]
    fn resolution_collapses_and_expands() {
        let cwd = Path::new("/definitely/not/here");
        assert_eq!(resolve("a/../b/./c", cwd, None).unwrap(), PathBuf::from("/definitely/not/here/b/c"));
        assert_eq!(
            resolve("~/.ssh/x", cwd, Some(Path::new("/home/u"))).unwrap(),
            PathBuf::from("/home/u/.ssh/x")
        );
        assert_eq!(resolve("../../..", cwd, None).unwrap(), PathBuf::from("/"));
    }

    #[test]
    fn tilde_forms_expand_as_bash_or_fail() {
        let cwd = Path::new("/definitely/not/here");
        let home = Some(Path::new("/home/u"));
        // One row per form: what it expands to, or None for an error (never a relative path).
        let rows: &[(&str, Option<&str>)] = &[
            ("~", Some("/home/u")),
            ("~/a", Some("/home/u/a")),
            ("~+", Some("/definitely/not/here")),
            ("~+/../x", Some("/definitely/not/x")),
            ("~root/.bashrc", Some("/root/.bashrc")),
            ("~-", None),
            ("~-/x", None),
            ("~+1/x", None),
            ("~no-such-user-here/x", None),
            ("a~b", Some("/definitely/not/here/a~b")),
        ];
        for (raw, expected) in rows {
            let got = resolve(raw, cwd, home).ok();
            assert_eq!(got, expected.map(PathBuf::from), "{raw}");
        }
        assert!(resolve("~/x", cwd, None).is_err(), "no home: no guess");
    }
}
