//! Files an agent's tools must not touch on their own. Policy layers and tool manifests would let an
//! agent loosen its own policy; files whose content allowed tools execute (`.git/hooks`, `.git/config`,
//! editor and agent settings) would let it run code through an allowed `git status`; the hub's
//! credentials and state (tokens, runtime file, ledger) and other processes' memory and environment
//! would hand it the operator's powers or the hub's secrets. Writing the first two needs an operator's
//! explicit approval that says what the file is; the last is never read or written by a tool.

use crate::document::{Access, Decision};
use crate::paths::glob_matches_path;
use std::path::{Component, Path, PathBuf};

pub use portcullis_harness::ProtectedKind;

/// What the policy makes of a kind of protected place.
pub trait KindRules {
    /// The decision for accessing a place of this kind, if stricter than the roots alone.
    fn decision(self, access: Access) -> Option<Decision>;
    /// Why, as the operator reads it in the prompt.
    fn why(self) -> &'static str;
}

impl KindRules for ProtectedKind {
    fn decision(self, access: Access) -> Option<Decision> {
        match (self, access) {
            (ProtectedKind::HubSecret, _) => Some(Decision::Forbidden),
            (ProtectedKind::Policy | ProtectedKind::Executed, Access::Write) => Some(Decision::Prompt),
            (ProtectedKind::Policy | ProtectedKind::Executed, Access::Read) => None,
        }
    }

    fn why(self) -> &'static str {
        match self {
            ProtectedKind::Policy => {
                "changing a policy or tool manifest needs an operator's explicit approval"
            }
            ProtectedKind::Executed => {
                "allowed programs execute what this file holds (git hooks and config, editor or agent settings); changing it needs an operator's explicit approval"
            }
            ProtectedKind::HubSecret => {
                "the hub's credentials, state and process memory are never read or written by a tool"
            }
        }
    }
}

/// A protected place found for a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtectedHit {
    pub kind: ProtectedKind,
    /// What the place is ("the project's .portcullis folder", "the hub's ledger"...).
    pub what: String,
}

impl ProtectedHit {
    /// This place as the decider of a call touching it at `path`.
    pub fn at(&self, path: String) -> crate::evaluation::DecidingPlace {
        crate::evaluation::DecidingPlace { kind: self.kind, place: self.what.clone(), path }
    }
}

/// Path components that mark a protected place wherever they appear, and what they are.
const COMPONENTS: &[(&str, ProtectedKind, &str)] = &[
    (".portcullis", ProtectedKind::Policy, "a Portcullis policy folder"),
    (".git", ProtectedKind::Executed, "a git repository's metadata (hooks and config run code)"),
    (".claude", ProtectedKind::Executed, "Claude Code settings (hooks and commands run code)"),
    (".husky", ProtectedKind::Executed, "git hooks managed by husky"),
    (".githooks", ProtectedKind::Executed, "a git hooks folder"),
    (".hg", ProtectedKind::Executed, "a Mercurial repository's metadata (hgrc hooks run code)"),
];

/// File names (with the folder they must sit in, if any) that mark a protected place.
const FILES: &[(Option<&str>, &str, ProtectedKind, &str)] = &[
    (Some(".vscode"), "tasks.json", ProtectedKind::Executed, "VS Code tasks (run by the editor)"),
    (
        Some(".vscode"),
        "settings.json",
        ProtectedKind::Executed,
        "VS Code settings (can name programs the editor runs)",
    ),
    (None, ".envrc", ProtectedKind::Executed, "a direnv file (run by the shell on entering the folder)"),
    (None, ".gitmodules", ProtectedKind::Executed, "git submodule settings (can name commands git runs)"),
];

/// Globs under `/proc` and `/dev` (as deny globs match) that mark another process's or the machine's
/// memory and environment.
const SYSTEM_GLOBS: &[(&str, &str)] = &[
    ("/proc/*/environ", "a process's environment"),
    ("/proc/*/task/*/environ", "a process's environment"),
    ("/proc/*/mem", "a process's memory"),
    ("/proc/*/task/*/mem", "a process's memory"),
    ("/proc/kcore", "the machine's memory"),
    ("/dev/mem", "the machine's memory"),
];

/// One concrete protected place.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Zone {
    path: PathBuf,
    kind: ProtectedKind,
    what: String,
    /// Also every path whose text starts with this one (a ledger's `-wal`, `-shm`, `.journal` files).
    prefix: bool,
}

/// Every protected place a policy knows.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProtectedPaths {
    zones: Vec<Zone>,
}

impl ProtectedPaths {
    /// The user's places: the Portcullis config folder (its policy and tools are policy; every other file
    /// in it — the agent token, the operator credential, the runtime file — is a hub secret) and the data
    /// folder holding the default ledger.
    pub fn for_user() -> Self {
        let mut protected = ProtectedPaths::default();
        if let Some(config) = crate::folders::user_config_dir() {
            protected.add(config.join("policy.json"), ProtectedKind::Policy, "the user's policy");
            protected.add(config.join("tools"), ProtectedKind::Policy, "the user's tool manifests");
            protected.add(
                &config,
                ProtectedKind::HubSecret,
                "the Portcullis config folder (tokens, operator credential, runtime file)",
            );
        }
        if let Some(data) = crate::folders::user_data_dir() {
            protected.add(data, ProtectedKind::HubSecret, "the hub's data folder (ledger)");
        }
        protected
    }

    /// Protects `path` (resolved now; a missing tail is fine).
    pub fn add(&mut self, path: impl AsRef<Path>, kind: ProtectedKind, what: &str) {
        self.push(path.as_ref(), kind, what, false);
    }

    /// Protects a file and every sibling whose name starts with its name (a SQLite file's `-wal`, `-shm`).
    pub fn add_with_siblings(&mut self, path: impl AsRef<Path>, kind: ProtectedKind, what: &str) {
        self.push(path.as_ref(), kind, what, true);
    }

    /// Also every place `other` protects (a policy re-anchored keeps the hub's places).
    pub fn absorb(&mut self, other: &ProtectedPaths) {
        for zone in &other.zones {
            if !self.zones.contains(zone) {
                self.zones.push(zone.clone());
            }
        }
    }

    fn push(&mut self, path: &Path, kind: ProtectedKind, what: &str, prefix: bool) {
        let path =
            portcullis_harness::paths::canonicalize_lenient(path).unwrap_or_else(|_| path.to_path_buf());
        let zone = Zone { path, kind, what: what.to_owned(), prefix };
        if !self.zones.contains(&zone) {
            self.zones.push(zone);
        }
    }

    /// The protected place `path` (canonical) lies in, the most specific first: a concrete zone, then a
    /// marking component or glob.
    pub fn find(&self, path: &Path) -> Option<ProtectedHit> {
        let clean = is_clean(path);
        let zone = self
            .zones
            .iter()
            .filter(|z| {
                let inside = if clean { inside_clean(path, &z.path) } else { path.starts_with(&z.path) };
                inside || (z.prefix && starts_with_text(path, &z.path))
            })
            .max_by_key(|z| z.path.as_os_str().len());
        if let Some(zone) = zone {
            return Some(ProtectedHit { kind: zone.kind, what: zone.what.clone() });
        }
        let named = path.components().find_map(|c| match c {
            Component::Normal(name) => COMPONENTS.iter().find(|(n, _, _)| name == *n),
            _ => None,
        });
        if let Some((_, kind, what)) = named {
            return Some(ProtectedHit { kind: *kind, what: (*what).to_owned() });
        }
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        let parent = path.parent().and_then(Path::file_name).and_then(|n| n.to_str());
        if let Some((_, _, kind, what)) = FILES
            .iter()
            .find(|(folder, file, _, _)| *file == name && folder.is_none_or(|f| Some(f) == parent))
        {
            return Some(ProtectedHit { kind: *kind, what: (*what).to_owned() });
        }
        if let Some(what) = crate::executed::find(path) {
            return Some(ProtectedHit { kind: ProtectedKind::Executed, what });
        }
        if !(path.starts_with("/proc") || path.starts_with("/dev")) {
            return None;
        }
        SYSTEM_GLOBS
            .iter()
            .find(|(glob, _)| glob_matches_path(glob, path))
            .map(|(_, what)| ProtectedHit { kind: ProtectedKind::HubSecret, what: (*what).to_owned() })
    }

    /// Every concrete protected place: its path, its kind, and whether files beside it whose names
    /// start with its name (a SQLite file's `-wal`, `-shm`) belong to it.
    pub fn places(&self) -> impl Iterator<Item = (&Path, ProtectedKind, bool)> {
        self.zones.iter().map(|z| (z.path.as_path(), z.kind, z.prefix))
    }

    /// The strictest protected place strictly below `dir` (a program moving, copying or deleting `dir`
    /// acts on it too). Only concrete places are known; marking components are found by `find`.
    pub fn below(&self, dir: &Path) -> Option<ProtectedHit> {
        self.zones
            .iter()
            .filter(|z| z.path != dir && z.path.starts_with(dir))
            .max_by_key(|z| z.kind == ProtectedKind::HubSecret)
            .map(|z| ProtectedHit { kind: z.kind, what: z.what.clone() })
    }
}

/// True when a path component holds pattern characters bash expands (`*`, `?`, `[...]`, `{a,b}`).
pub fn is_pattern(component: &str) -> bool {
    component.contains(['*', '?', '[', '{'])
}

/// Whether a pattern component may expand to `name`, as bash's pathname and brace expansion would
/// (`*`, `?`, `[a-z]`, `[!x]`, `{a,b}`; a `{1..9}` range is taken as `*`). As in bash without `dotglob`
/// (which `shopt` and `GLOBIGNORE` turn on; the analyzer reports both as opaque), a leading `.` is only
/// matched by a pattern that starts with one.
fn may_match(pattern: &str, name: &str) -> bool {
    if !is_pattern(pattern) {
        return pattern == name;
    }
    brace_alternatives(pattern).iter().any(|alternative| {
        (!name.starts_with('.') || alternative.starts_with('.'))
            && glob_match(&alternative.chars().collect::<Vec<_>>(), &name.chars().collect::<Vec<_>>())
    })
}

/// The words a brace expression stands for (`a{b,c}d` → `abd`, `acd`; nested ones expanded in turn;
/// `{x..y}` → `*`). Bounded: past 64 alternatives the rest is `*`.
fn brace_alternatives(pattern: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut pending = vec![pattern.to_owned()];
    while let Some(word) = pending.pop() {
        if out.len() + pending.len() > 64 {
            out.push("*".to_owned());
            break;
        }
        let Some(open) = word.find('{') else {
            out.push(word);
            continue;
        };
        let mut depth = 0usize;
        let mut close = None;
        let mut commas = Vec::new();
        for (i, c) in word.char_indices().skip_while(|(i, _)| *i < open) {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        close = Some(i);
                        break;
                    }
                }
                ',' if depth == 1 => commas.push(i),
                _ => {}
            }
        }
        let Some(close) = close else {
            out.push(word.replace('{', ""));
            continue;
        };
        // Checked before the alternatives are made: a word of thousands of commas and a long tail
        // made a gigabyte of alternatives only to drop them.
        if out.len() + pending.len() + commas.len() + 1 > 64 {
            out.push("*".to_owned());
            break;
        }
        let (head, body, tail) = (&word[..open], &word[open + 1..close], &word[close + 1..]);
        if commas.is_empty() {
            let middle = if body.contains("..") { "*" } else { body };
            pending.push(format!("{head}{middle}{tail}"));
            continue;
        }
        let mut start = open + 1;
        for at in commas.into_iter().chain([close]) {
            pending.push(format!("{head}{}{tail}", &word[start..at]));
            start = at + 1;
        }
    }
    out
}

/// One element of a component pattern: `*`, `?`, a bracket expression, or a literal character.
enum Glob {
    Star,
    Any,
    /// `[...]`: its set (ranges `a-z` included) and whether it is negated (`[!...]`, `[^...]`).
    Class {
        set: Vec<char>,
        negated: bool,
    },
    Literal(char),
}

impl Glob {
    /// Whether this element (not `*`) matches the character `c`.
    fn matches(&self, c: char) -> bool {
        match self {
            Glob::Star | Glob::Any => true,
            Glob::Literal(l) => *l == c,
            Glob::Class { set, negated } => {
                let mut hit = false;
                let mut i = 0;
                while i < set.len() {
                    if i + 2 < set.len() && set[i + 1] == '-' {
                        hit |= (set[i]..=set[i + 2]).contains(&c);
                        i += 3;
                    } else {
                        hit |= set[i] == c;
                        i += 1;
                    }
                }
                hit != *negated
            }
        }
    }
}

/// A component pattern's elements. A `[` without a closing `]` is a literal `[`; a `]` right after
/// `[` (or `[!`) belongs to the set.
fn glob_elements(pattern: &[char]) -> Vec<Glob> {
    let mut elements = Vec::new();
    let mut at = 0;
    while let Some(&c) = pattern.get(at) {
        at += 1;
        match c {
            '*' => elements.push(Glob::Star),
            '?' => elements.push(Glob::Any),
            '[' => {
                let rest = &pattern[at..];
                let Some(end) = rest.iter().skip(1).position(|c| *c == ']').map(|p| p + 1) else {
                    elements.push(Glob::Literal('['));
                    continue;
                };
                let (negated, set) = match rest[..end].split_first() {
                    Some(('!' | '^', set)) => (true, set),
                    _ => (false, &rest[..end]),
                };
                elements.push(Glob::Class { set: set.to_vec(), negated });
                at += end + 1;
            }
            c => elements.push(Glob::Literal(c)),
        }
    }
    elements
}

/// `*`, `?` and bracket expressions over one component. Linear backtracking (only to the last `*`):
/// at most pattern × name steps, where trying every split at every `*` took exponential time on a
/// pattern of many stars (a command of 44 bytes hung an evaluation; found by the `shell_analyzer` fuzz
/// target, input in `fuzz/regressions/shell_analyzer/`).
fn glob_match(pattern: &[char], name: &[char]) -> bool {
    let elements = glob_elements(pattern);
    let (mut p, mut n) = (0usize, 0usize);
    // The element after the last `*` seen, and the name position that `*` stopped at.
    let mut star: Option<(usize, usize)> = None;
    while n < name.len() {
        match elements.get(p) {
            Some(Glob::Star) => {
                p += 1;
                star = Some((p, n));
            }
            Some(element) if element.matches(name[n]) => {
                p += 1;
                n += 1;
            }
            _ => match star {
                Some((after, stopped)) => {
                    star = Some((after, stopped + 1));
                    p = after;
                    n = stopped + 1;
                }
                None => return false,
            },
        }
    }
    elements[p..].iter().all(|e| matches!(e, Glob::Star))
}

impl ProtectedPaths {
    /// The protected place a path with pattern components (`~/.config/portcul*/op*`, `.port{cullis,x}`)
    /// may expand to, into or above: bash expands them when the command runs, so the pattern is judged
    /// by everything it could match. `pattern` is absolute, its literal prefix canonical.
    pub fn pattern_hit(&self, pattern: &Path) -> Option<ProtectedHit> {
        let parts: Vec<String> = pattern
            .components()
            .filter_map(|c| match c {
                Component::Normal(n) => Some(n.to_string_lossy().into_owned()),
                _ => None,
            })
            .collect();
        if matches!(parts.first().map(String::as_str), Some("proc" | "dev")) {
            return Some(ProtectedHit {
                kind: ProtectedKind::HubSecret,
                what: "a pattern under /proc or /dev (other processes' environment and memory)".into(),
            });
        }
        let strictest = self
            .zones
            .iter()
            .filter(|zone| {
                let names: Vec<String> = zone
                    .path
                    .components()
                    .filter_map(|c| match c {
                        Component::Normal(n) => Some(n.to_string_lossy().into_owned()),
                        _ => None,
                    })
                    .collect();
                parts.iter().zip(&names).all(|(p, n)| may_match(p, n))
            })
            .max_by_key(|zone| zone.kind == ProtectedKind::HubSecret);
        if let Some(zone) = strictest {
            return Some(ProtectedHit { kind: zone.kind, what: zone.what.clone() });
        }
        let named = parts.iter().filter(|p| is_pattern(p)).find_map(|p| {
            COMPONENTS.iter().find(|(name, _, _)| may_match(p, name)).map(|(_, k, w)| (*k, *w))
        });
        let file = || {
            let (last, folder) = (parts.last()?, parts.len().checked_sub(2).and_then(|i| parts.get(i)));
            FILES
                .iter()
                .find(|(in_folder, name, _, _)| {
                    may_match(last, name) && in_folder.is_none_or(|f| folder.is_some_and(|p| may_match(p, f)))
                })
                .map(|(_, _, k, w)| (*k, *w))
        };
        named.or_else(file).map(|(kind, what)| ProtectedHit { kind, what: what.to_owned() })
    }
}

/// Whether `path`'s text is its components joined by single `/` (absolute, no `//`, `.` or trailing
/// `/`): then a place holds it when the place's text is a prefix ending at a `/`, with no component
/// walk (every path a command names meets every zone). A path the resolver made is always clean.
fn is_clean(path: &Path) -> bool {
    let bytes = path.as_os_str().as_encoded_bytes();
    bytes.first() == Some(&b'/')
        && (bytes.len() == 1
            || (bytes.last() != Some(&b'/')
                && !bytes.windows(2).any(|w| w == b"//")
                && !bytes.split(|b| *b == b'/').any(|c| c == b".")))
}

/// `Path::starts_with` for a clean `path` (see [`is_clean`]); `zone` is clean too (made by the
/// resolver), or compared by components.
fn inside_clean(path: &Path, zone: &Path) -> bool {
    if !is_clean(zone) {
        return path.starts_with(zone);
    }
    let (path, zone) = (path.as_os_str().as_encoded_bytes(), zone.as_os_str().as_encoded_bytes());
    path.starts_with(zone)
        && (zone == b"/" || path.len() == zone.len() || path.get(zone.len()) == Some(&b'/'))
}

fn starts_with_text(path: &Path, prefix: &Path) -> bool {
    path.as_os_str().as_encoded_bytes().starts_with(prefix.as_os_str().as_encoded_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn places() -> ProtectedPaths {
        let mut p = ProtectedPaths::default();
        p.add("/home/u/.config/portcullis/policy.json", ProtectedKind::Policy, "the user's policy");
        p.add("/home/u/.config/portcullis", ProtectedKind::HubSecret, "config");
        p.add_with_siblings("/data/ledger.db", ProtectedKind::HubSecret, "ledger");
        p
    }

    #[test]
    fn each_place_is_found_with_its_kind() {
        let p = places();
        let kind = |path: &str| p.find(Path::new(path)).map(|h| h.kind);
        // One row per rule: concrete zones (most specific wins), siblings, components, globs.
        let rows: &[(&str, Option<ProtectedKind>)] = &[
            ("/home/u/.config/portcullis/policy.json", Some(ProtectedKind::Policy)),
            ("/home/u/.config/portcullis/token", Some(ProtectedKind::HubSecret)),
            // The key that signs the ledger's checkpoints, and its public half (an agent that could read
            // the key could re-sign a rewritten ledger).
            ("/home/u/.config/portcullis/ledger-key", Some(ProtectedKind::HubSecret)),
            ("/home/u/.config/portcullis/ledger-key.pub", Some(ProtectedKind::HubSecret)),
            ("/home/u/.config/portcullis", Some(ProtectedKind::HubSecret)),
            ("/home/u/.config/other", None),
            ("/data/ledger.db", Some(ProtectedKind::HubSecret)),
            ("/data/ledger.db-wal", Some(ProtectedKind::HubSecret)),
            ("/data/ledger.db.journal", Some(ProtectedKind::HubSecret)),
            ("/data/ledger.dbx", Some(ProtectedKind::HubSecret)),
            ("/data/other.db", None),
            ("/p/.portcullis/policy.json", Some(ProtectedKind::Policy)),
            ("/p/sub/.portcullis", Some(ProtectedKind::Policy)),
            ("/p/.git/hooks/pre-commit", Some(ProtectedKind::Executed)),
            ("/p/.git/config", Some(ProtectedKind::Executed)),
            ("/p/.gitignore", None),
            ("/p/.claude/settings.json", Some(ProtectedKind::Executed)),
            ("/p/.vscode/tasks.json", Some(ProtectedKind::Executed)),
            ("/p/.vscode/launch.json", Some(ProtectedKind::Executed)),
            ("/p/.vscode/extensions.json", None),
            ("/p/.mcp.json", Some(ProtectedKind::Executed)),
            ("/p/.github/workflows/ci.yml", Some(ProtectedKind::Executed)),
            ("/p/.envrc", Some(ProtectedKind::Executed)),
            ("/p/.gitmodules", Some(ProtectedKind::Executed)),
            ("/p/.husky/pre-push", Some(ProtectedKind::Executed)),
            ("/proc/4242/environ", Some(ProtectedKind::HubSecret)),
            ("/proc/4242/task/4243/environ", Some(ProtectedKind::HubSecret)),
            ("/proc/4242/mem", Some(ProtectedKind::HubSecret)),
            ("/proc/4242/status", None),
            ("/p/src/main.rs", None),
        ];
        for (path, expected) in rows {
            assert_eq!(kind(path), *expected, "{path}");
        }
    }

    #[test]
    fn patterns_are_judged_by_what_they_may_expand_to() {
        let p = places();
        let kind = |path: &str| p.pattern_hit(Path::new(path)).map(|h| h.kind);
        let rows: &[(&str, Option<ProtectedKind>)] = &[
            ("/home/u/.config/portcul*/token", Some(ProtectedKind::HubSecret)),
            ("/home/u/.config/{portcullis,x}/token", Some(ProtectedKind::HubSecret)),
            ("/home/u/.c*", Some(ProtectedKind::HubSecret)),
            ("/home/u/*/portcullis/operator-token", None),
            ("/home/u/.*/portcullis/operator-token", Some(ProtectedKind::HubSecret)),
            ("/p/*", None),
            ("/p/.*", Some(ProtectedKind::Policy)),
            ("/data/ledger.d?", Some(ProtectedKind::HubSecret)),
            ("/proc/*/env*", Some(ProtectedKind::HubSecret)),
            ("/p/.port*/policy.json", Some(ProtectedKind::Policy)),
            ("/p/.g?t/hooks/x", Some(ProtectedKind::Executed)),
            ("/p/src/*.rs", None),
            ("/home/u/src/*", None),
        ];
        for (path, expected) in rows {
            assert_eq!(kind(path), *expected, "{path}");
        }
    }

    #[test]
    fn pattern_components_match_as_bash_expands_them() {
        let rows: &[(&str, &str, bool)] = &[
            ("*", "src", true),
            ("*", ".portcullis", false),
            (".*", ".portcullis", true),
            (".port*", ".portcullis", true),
            (".portcul?is", ".portcullis", true),
            (".port[a-d]ullis", ".portcullis", true),
            (".port[!c]ullis", ".portcullis", false),
            ("[.]portcullis", ".portcullis", false),
            (".port{cullis,x}", ".portcullis", true),
            ("{a,.portcullis}", ".portcullis", true),
            ("{a,b}", ".portcullis", false),
            (".git{,hooks}", ".githooks", true),
            ("x{1..9}", "x5", true),
            ("[0-9]", "src", false),
            ("*.rs", "tasks.json", false),
        ];
        for (pattern, name, expected) in rows {
            assert_eq!(may_match(pattern, name), *expected, "{pattern} ~ {name}");
        }
    }

    /// The former matcher (every split at every `*`: exponential), as the reference of the new one.
    fn reference(pattern: &[char], name: &[char]) -> bool {
        match pattern.split_first() {
            None => name.is_empty(),
            Some(('*', rest)) => (0..=name.len()).any(|skip| reference(rest, &name[skip..])),
            Some(('?', rest)) => !name.is_empty() && reference(rest, &name[1..]),
            Some(('[', rest)) => {
                let Some(end) = rest.iter().skip(1).position(|c| *c == ']').map(|p| p + 1) else {
                    return name.first() == Some(&'[') && reference(rest, &name[1..]);
                };
                let Some((first, others)) = name.split_first() else { return false };
                let (negated, set) = match rest[..end].split_first() {
                    Some(('!' | '^', set)) => (true, set),
                    _ => (false, &rest[..end]),
                };
                let mut hit = false;
                let mut i = 0;
                while i < set.len() {
                    if i + 2 < set.len() && set[i + 1] == '-' {
                        hit |= (set[i]..=set[i + 2]).contains(first);
                        i += 3;
                    } else {
                        hit |= set[i] == *first;
                        i += 1;
                    }
                }
                hit != negated && reference(&rest[end + 1..], others)
            }
            Some((c, rest)) => name.first() == Some(c) && reference(rest, &name[1..]),
        }
    }

    #[test]
    fn component_globs_match_as_the_former_matcher_did() {
        // Every pattern of up to 3 elements over these atoms, against every name of up to 5 characters.
        let atoms = ["*", "?", "a", "b", "[ab]", "[!a]", "[a-b]", "[", "]", "[]a]"];
        let mut patterns = vec![String::new()];
        for _ in 0..3 {
            let longer: Vec<String> =
                patterns.iter().flat_map(|p| atoms.iter().map(move |a| format!("{p}{a}"))).collect();
            patterns.extend(longer);
        }
        patterns.sort();
        patterns.dedup();
        let mut names = vec![String::new()];
        for _ in 0..5 {
            let longer: Vec<String> =
                names.iter().flat_map(|n| ["a", "b", "["].map(|c| format!("{n}{c}"))).collect();
            names.extend(longer);
        }
        names.sort();
        names.dedup();
        for pattern in &patterns {
            let p: Vec<char> = pattern.chars().collect();
            for name in &names {
                let n: Vec<char> = name.chars().collect();
                assert_eq!(glob_match(&p, &n), reference(&p, &n), "{pattern} ~ {name}");
            }
        }
    }

    #[test]
    fn many_stars_and_many_alternatives_stay_cheap() {
        // `fuzz/regressions/shell_analyzer/`: a star run hung the former matcher.
        let stars: Vec<char> = format!("E{}F", "*".repeat(30)).chars().collect();
        let name: Vec<char> = "E".repeat(60).chars().collect();
        assert!(!glob_match(&stars, &name));
        let braces = format!("{{{}}}{}", ",".repeat(30_000), "x".repeat(30_000));
        assert_eq!(brace_alternatives(&braces), vec!["*".to_owned()]);
    }

    #[test]
    fn places_below_a_folder() {
        let p = places();
        assert_eq!(p.below(Path::new("/home/u")).map(|h| h.kind), Some(ProtectedKind::HubSecret));
        assert_eq!(p.below(Path::new("/data")).map(|h| h.kind), Some(ProtectedKind::HubSecret));
        assert_eq!(p.below(Path::new("/home/u/src")), None);
        assert_eq!(p.below(Path::new("/data/ledger.db")), None);
    }

    #[test]
    fn clean_paths_are_inside_as_by_components() {
        let paths = [
            "/",
            "/home",
            "/home/u",
            "/home/u2",
            "/home/u/.ssh",
            "/home//u",
            "/home/./u",
            "/home/u/",
            "rel/u",
        ];
        for path in paths {
            for zone in paths {
                let (p, z) = (Path::new(path), Path::new(zone));
                let by_bytes = if is_clean(p) { inside_clean(p, z) } else { p.starts_with(z) };
                assert_eq!(by_bytes, p.starts_with(z), "{path} in {zone}");
            }
        }
        assert!(is_clean(Path::new("/a/b")) && is_clean(Path::new("/")));
        for unclean in ["/a/", "//a", "/a/./b", "a/b", ""] {
            assert!(!is_clean(Path::new(unclean)), "{unclean}");
        }
    }

    #[test]
    fn decisions_per_kind_and_access() {
        use ProtectedKind::*;
        assert_eq!(Policy.decision(Access::Write), Some(Decision::Prompt));
        assert_eq!(Policy.decision(Access::Read), None);
        assert_eq!(Executed.decision(Access::Write), Some(Decision::Prompt));
        assert_eq!(Executed.decision(Access::Read), None);
        assert_eq!(HubSecret.decision(Access::Read), Some(Decision::Forbidden));
        assert_eq!(HubSecret.decision(Access::Write), Some(Decision::Forbidden));
    }
}
