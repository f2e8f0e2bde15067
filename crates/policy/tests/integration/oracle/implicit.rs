//! What programs do on their own, whatever their operands: the dynamic loader reads libraries, `ls -l`
//! reads the user database, git refreshes its index. The oracle accepts an event the analysis did not
//! report only when a row here names it, with the reason. A row no run needs fails the oracle, so the
//! table holds only what is really seen.

use super::trace::Kind;
use std::path::{Path, PathBuf};

pub struct Implicit {
    /// The program that does it (`*`: any); for an execution, the program that starts it. `ag>sh` is an
    /// `sh` that `ag` started.
    pub program: &'static str,
    pub kind: Kind,
    /// The path: `*` matches within a name, a trailing `/**` everything below; `{home}`, `{proj}`,
    /// `{tmp}` are the scratch places. For an execution, the program's name.
    pub pattern: &'static str,
    pub why: &'static str,
    /// What this machine's setup adds rather than the program itself (Python's site packages, ssh's
    /// configuration): a run need not meet it, so an unused row of this kind does not fail the oracle.
    pub optional: bool,
}

const fn row(program: &'static str, kind: Kind, pattern: &'static str, why: &'static str) -> Implicit {
    Implicit { program, kind, pattern, why, optional: false }
}

const fn setup(program: &'static str, kind: Kind, pattern: &'static str, why: &'static str) -> Implicit {
    Implicit { program, kind, pattern, why, optional: true }
}

pub const IMPLICIT: &[Implicit] = &[
    row("*", Kind::Read, "/etc/ld.so.cache", "the dynamic loader's library index"),
    row("*", Kind::Read, "/usr/lib/**", "shared libraries, locale and charset data, git's own helpers"),
    row("*", Kind::Read, "/etc/locale.alias", "locale aliases"),
    row("*", Kind::Read, "/proc/**", "a program's view of itself and the kernel (mounts, memory, CPUs)"),
    row("*", Kind::Read, "/sys/fs/cgroup/**", "the CPU quota (rg and sort choose their threads)"),
    row("*", Kind::Read, "/dev/null", "the null device"),
    row("*", Kind::Write, "/dev/null", "the null device"),
    row("*", Kind::Write, "/dev/tty", "bash and less ask for the terminal (there is none)"),
    row("*", Kind::Read, "/etc/nsswitch.conf", "how user and group names are looked up"),
    row("*", Kind::Read, "/etc/passwd", "user names (ls -l, stat, whoami, git's identity)"),
    row("*", Kind::Read, "/etc/group", "group names (ls -l, stat, chgrp)"),
    row("*", Kind::Read, "/usr/share/zoneinfo/**", "time zone data"),
    row("*", Kind::Read, "/usr/bin/*", "a script's interpreter reads the script it runs (which, yq)"),
    setup("*", Kind::Read, "/etc/ssl/openssl.cnf", "OpenSSL's configuration (Python, ssh)"),
    row(
        "*",
        Kind::Read,
        "/usr/libexec/coreutils/libstdbuf.so",
        "stdbuf preloads it into the program it runs",
    ),
    setup("*", Kind::Read, "/etc/hosts", "name resolution (ssh)"),
    setup("*", Kind::Read, "/etc/host.conf", "name resolution (ssh)"),
    setup("*", Kind::Read, "/etc/resolv.conf", "name resolution (ssh)"),
    setup("*", Kind::Read, "/etc/services", "port names (ssh)"),
    setup("ssh", Kind::Read, "/etc/ssh/**", "ssh's system configuration"),
    row("file", Kind::Read, "/etc/magic", "file's local magic rules"),
    row("git", Kind::Read, "{home}/.gitconfig", "git reads the user's configuration"),
    row("rg", Kind::Read, "{home}/.gitconfig", "rg honours the user's global gitignore (core.excludesFile)"),
    row(
        "git",
        Kind::Write,
        "{proj}/.git/**",
        "git refreshes its index and takes its locks inside the repository",
    ),
    row(
        "sed",
        Kind::Write,
        "{written_dir}/sed*",
        "sed -i writes a temporary file beside the file, then renames it",
    ),
    row(
        "zip",
        Kind::Write,
        "{written_dir}/zi*",
        "zip writes the new archive to a temporary file beside it, then renames it",
    ),
    row(
        "tar",
        Kind::Write,
        "/proc/self/fd/*",
        "tar sets a mode through /proc/self/fd of a file it has just written",
    ),
    row("script", Kind::Write, "/dev/ptmx", "script opens a pseudo-terminal"),
    setup("yq", Kind::Read, "/usr/bin", "Python looks for its modules (Debian's yq is a Python program)"),
    setup("yq", Kind::Read, "/usr/local/lib/python3*/**", "Python's site packages"),
    row("yq", Kind::Exec, "jq", "Debian's yq is a Python wrapper that runs jq"),
    row("*", Kind::Read, "/sys/devices/system/cpu/**", "how many CPUs there are (ag)"),
    row("ag", Kind::Exec, "sh", "ag asks git for the global excludes file: sh -c 'git config ...'"),
    row("ag>sh", Kind::Exec, "git", "ag asks git for the global excludes file: sh -c 'git config ...'"),
    row("egrep", Kind::Exec, "grep", "egrep and fgrep are scripts that run grep -E / grep -F"),
    row("fgrep", Kind::Exec, "grep", "egrep and fgrep are scripts that run grep -E / grep -F"),
    row("watch", Kind::Exec, "sh", "watch runs its command through sh -c; the analysis reads the command"),
    row("flock", Kind::Exec, "sh", "flock -c runs its command through sh -c; the analysis reads the command"),
];

impl Implicit {
    /// `places` name the scratch places; a name may come several times (`written_dir`: the folder of
    /// each file the analysis reported written), and the row matches if any of them fits.
    pub fn matches(&self, kind: Kind, by: (&str, &str), path: &Path, places: &[(&str, PathBuf)]) -> bool {
        let (parent, program) = by;
        let named = match self.program.split_once('>') {
            Some((p, c)) => p == parent && c == program,
            None => self.program == "*" || self.program == program,
        };
        if self.kind != kind || !named {
            return false;
        }
        if kind == Kind::Exec {
            return path.file_name().is_some_and(|n| n == self.pattern);
        }
        let text = path.display().to_string();
        let mut patterns = vec![self.pattern.to_owned()];
        let mut names: Vec<&str> = places.iter().map(|(n, _)| *n).collect();
        names.dedup();
        for name in names {
            let key = format!("{{{name}}}");
            patterns = patterns
                .into_iter()
                .flat_map(|pattern| {
                    if !pattern.contains(&key) {
                        return vec![pattern];
                    }
                    let values = places.iter().filter(|(n, _)| *n == name);
                    values.map(|(_, place)| pattern.replace(&key, &place.display().to_string())).collect()
                })
                .collect();
        }
        patterns.iter().filter(|p| !p.contains('{')).any(|pattern| match pattern.strip_suffix("/**") {
            Some(below) => path.ancestors().any(|a| wildcard(below, &a.display().to_string())),
            None => wildcard(pattern, &text),
        })
    }
}

/// `*` matches any run of characters other than `/`.
fn wildcard(pattern: &str, text: &str) -> bool {
    match pattern.split_once('*') {
        None => pattern == text,
        Some((head, tail)) => {
            let Some(rest) = text.strip_prefix(head) else { return false };
            (0..=rest.len())
                .take_while(|&i| !rest[..i].contains('/'))
                .filter(|&i| rest.is_char_boundary(i))
                .any(|i| wildcard(tail, &rest[i..]))
        }
    }
}

#[test]
fn rows_match_what_they_name_and_nothing_else() {
    for (i, row) in IMPLICIT.iter().enumerate() {
        let twin = IMPLICIT[..i]
            .iter()
            .any(|r| (r.program, r.kind, r.pattern) == (row.program, row.kind, row.pattern));
        assert!(!twin, "the row {} {:?} {} is there twice", row.program, row.kind, row.pattern);
    }
    let places = [("home", PathBuf::from("/s/home"))];
    let git = IMPLICIT.iter().find(|r| r.pattern == "{home}/.gitconfig").unwrap();
    assert!(git.matches(Kind::Read, ("bash", "git"), Path::new("/s/home/.gitconfig"), &places));
    assert!(!git.matches(Kind::Read, ("bash", "cat"), Path::new("/s/home/.gitconfig"), &places));
    assert!(!git.matches(Kind::Write, ("bash", "git"), Path::new("/s/home/.gitconfig"), &places));
    let scripts = IMPLICIT.iter().find(|r| r.pattern == "/usr/bin/*").unwrap();
    assert!(scripts.matches(Kind::Read, ("bash", "which"), Path::new("/usr/bin/which"), &places));
    assert!(!scripts.matches(Kind::Read, ("bash", "which"), Path::new("/usr/bin/x/y"), &places));
    let sed = IMPLICIT.iter().find(|r| r.pattern == "{written_dir}/sed*").unwrap();
    let written = [("written_dir", PathBuf::from("/a")), ("written_dir", PathBuf::from("/b"))];
    assert!(sed.matches(Kind::Write, ("bash", "sed"), Path::new("/b/sedX1"), &written));
    assert!(!sed.matches(Kind::Write, ("bash", "sed"), Path::new("/c/sedX1"), &written));
    let python = IMPLICIT.iter().find(|r| r.pattern == "/usr/local/lib/python3*/**").unwrap();
    let chained = IMPLICIT.iter().find(|r| r.program == "ag>sh").unwrap();
    assert!(chained.matches(Kind::Exec, ("ag", "sh"), Path::new("/usr/bin/git"), &places));
    assert!(!chained.matches(Kind::Exec, ("bash", "sh"), Path::new("/usr/bin/git"), &places));
    assert!(python.matches(
        Kind::Read,
        ("bash", "yq"),
        Path::new("/usr/local/lib/python3.11/x/y.py"),
        &places
    ));
    let libs = IMPLICIT.iter().find(|r| r.pattern == "/usr/lib/**").unwrap();
    assert!(libs.matches(
        Kind::Read,
        ("bash", "ls"),
        Path::new("/usr/lib/x86_64-linux-gnu/libc.so.6"),
        &places
    ));
    assert!(!libs.matches(Kind::Read, ("bash", "ls"), Path::new("/usr/libexec"), &places));
}
