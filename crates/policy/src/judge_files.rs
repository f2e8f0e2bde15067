//! How the files a program's operands and options name are judged: each is a read or a write checked
//! exactly as a redirection or the read/write tools are (deny globs, protected places, roots), after the
//! expansions bash would make where they are certain (tilde, braces, a glob matched against the files
//! there now); a path only known at run time is never allowed without an operator.

use crate::document::{Access, Decision};
use crate::evaluation::{EvalContext, Evaluation};
use crate::paths::{expand_tilde, glob_component, glob_matches_path, resolve_in};
use crate::policy::Policy;
use crate::shell::{FileOperand, FileRole, SimpleCommand};
use std::path::{Component, Path, PathBuf};

/// A pattern matching more files than this is not expanded: the command needs an operator.
pub const MAX_PATTERN_MATCHES: usize = 256;
/// Files (after expansion) and listed folders one evaluation judges: a command naming more (`cat * * *
/// ...` repeated) needs an operator, and neither the evaluation nor the call's records grow with it.
pub const MAX_FILES_PER_EVALUATION: usize = 4096;
/// Brace alternatives expanded per word (`{a,b}{c,d}` is four).
const MAX_BRACE_WORDS: usize = 64;

impl Policy {
    /// Judges one file a command names, from the folder `ctx` (canonical), into `eval` (the command's
    /// part), each expanded path recorded in `accesses` with its verdict.
    pub(crate) fn judge_file(
        &self,
        file: &FileOperand,
        ctx: &EvalContext,
        eval: &mut Evaluation,
        budget: &mut FileBudget,
    ) {
        let access = match file.role {
            FileRole::Write => Access::Write,
            FileRole::Read | FileRole::RunsCode => Access::Read,
        };
        let via = file.via.as_str();
        if file.dynamic {
            eval.judge_access(&file.path, access, file.recursive, via, |one| {
                one.raise(
                    self.unknown,
                    format!("`{via}` names {:?}, a path known only when the command runs", file.path),
                    None,
                );
            });
            return;
        }
        let paths = match expand(&file.path, ctx) {
            Ok(paths) => paths,
            Err(why) => {
                eval.judge_access(&file.path, access, file.recursive, via, |one| {
                    one.raise(Decision::Prompt, format!("`{via}` names {:?}: {why}", file.path), None);
                });
                return;
            }
        };
        if !budget.spend(paths.len(), eval) {
            return;
        }
        for path in paths {
            // `rm link`, `mv link x`: the link itself is removed or replaced, wherever it points.
            if access == Access::Write
                && let Some(link) = link_itself(&path, ctx)
            {
                let shown = link.display().to_string();
                eval.judge_access(&shown, access, false, &format!("{via} (the link itself)"), |one| {
                    self.judge_resolved(&shown, &link, access, ctx, one);
                });
            }
            eval.judge_access(&path, access, file.recursive, via, |one| {
                self.judge_path(&path, access, ctx, one);
                if file.recursive {
                    self.judge_tree_below(&path, access, ctx, one);
                }
                if file.recursive && file.follows_links {
                    self.judge_links_below(&path, access, via, ctx, one);
                }
                if file.role == FileRole::RunsCode {
                    self.judge_code_folder(&path, via, ctx, one);
                }
            });
        }
    }

    /// Bash lists a folder to expand a pattern in any word of a command (`echo ~/.ssh/*` lists
    /// `~/.ssh`): each folder listed is judged as a read of it.
    pub(crate) fn judge_listings(
        &self,
        command: &SimpleCommand,
        ctx: &EvalContext,
        eval: &mut Evaluation,
        budget: &mut FileBudget,
    ) {
        let mut seen: Vec<PathBuf> = Vec::new();
        for word in &command.patterns {
            let folders = match listed_folders(word, ctx) {
                Ok(folders) => folders,
                Err(why) => {
                    eval.judge_access(word, Access::Read, false, "pattern", |one| {
                        one.raise(Decision::Prompt, format!("the pattern {word:?}: {why}"), None);
                    });
                    continue;
                }
            };
            for folder in folders {
                if seen.contains(&folder) {
                    continue;
                }
                if !budget.spend(1, eval) {
                    return;
                }
                let shown = folder.display().to_string();
                eval.judge_access(&shown, Access::Read, false, &format!("listed for {word}"), |one| {
                    self.judge_path(&shown, Access::Read, ctx, one);
                });
                seen.push(folder);
            }
        }
    }

    /// A whole tree read or written: a file below it that a deny glob names makes it a prompt, naming
    /// the file; so does a tree too large to look through.
    fn judge_tree_below(&self, raw: &str, access: Access, ctx: &EvalContext, eval: &mut Evaluation) {
        if self.deny.is_empty() {
            return;
        }
        let Ok(path) = resolve_in(raw, &ctx.cwd, ctx.home.as_deref()) else { return };
        let verb = if access == Access::Write { "writes" } else { "reads" };
        // An anchored glob reaches below the tree when its fixed part is inside it.
        let anchored = self.deny.iter().filter(|g| g.starts_with('/')).find(|glob| {
            let fixed: PathBuf =
                Path::new(glob.as_str()).components().take_while(|c| !is_pattern_component(c)).collect();
            fixed.starts_with(&path) && fixed != path
        });
        if let Some(glob) = anchored {
            eval.raise(
                Decision::Prompt,
                format!("{verb} the whole tree {}, where the deny glob {glob:?} reaches", path.display()),
                None,
            );
            return;
        }
        let floating: Vec<&String> = self.deny.iter().filter(|g| !g.starts_with('/')).collect();
        match find_below(&path, &floating) {
            Below::Clean => {}
            Below::Denied(file, glob) => eval.raise(
                Decision::Prompt,
                format!(
                    "{verb} the whole tree {}, which holds {} (deny glob {glob:?})",
                    path.display(),
                    file.display()
                ),
                None,
            ),
            Below::TooLarge => eval.raise(
                Decision::Prompt,
                format!(
                    "{verb} the whole tree {}, too large ({MAX_TREE_ENTRIES}+ entries) to check for files \
                     the deny globs name",
                    path.display()
                ),
                None,
            ),
        }
    }

    /// Code in a folder outside every root runs (`make -C`, `git -C`, `cargo --manifest-path`): what it
    /// holds was never seen by the operator.
    fn judge_code_folder(&self, raw: &str, via: &str, ctx: &EvalContext, eval: &mut Evaluation) {
        let Ok(path) = resolve_in(raw, &ctx.cwd, ctx.home.as_deref()) else { return };
        if !self.inside_roots(&path, Access::Read) {
            eval.raise(
                Decision::Prompt,
                format!("`{via}` runs code from {}, outside every root", path.display()),
                None,
            );
        }
    }
}

/// Entries looked at below a tree read or written as a whole before giving up (and prompting).
pub const MAX_TREE_ENTRIES: usize = 20_000;

/// What one evaluation may still judge of [`MAX_FILES_PER_EVALUATION`].
pub(crate) struct FileBudget {
    left: usize,
    exceeded: bool,
}

impl FileBudget {
    pub(crate) fn new() -> Self {
        FileBudget { left: MAX_FILES_PER_EVALUATION, exceeded: false }
    }

    /// Takes `n` files; when they do not fit, the command prompts (said once: the strictest decision
    /// of any part is the evaluation's) and nothing more is judged.
    fn spend(&mut self, n: usize, eval: &mut Evaluation) -> bool {
        if !self.exceeded && n <= self.left {
            self.left -= n;
            return true;
        }
        if !self.exceeded {
            self.exceeded = true;
            eval.raise(
                Decision::Prompt,
                format!("the command names more than {MAX_FILES_PER_EVALUATION} files; an operator decides"),
                None,
            );
        }
        false
    }
}

/// The link a written path names, when its last component is a symbolic link: its folder resolved,
/// the link not followed.
fn link_itself(raw: &str, ctx: &EvalContext) -> Option<PathBuf> {
    let expanded = expand_tilde(raw, &ctx.cwd, ctx.home.as_deref()).ok()?;
    let path = if expanded.is_absolute() { expanded } else { ctx.cwd.join(expanded) };
    if !matches!(crate::snapshot::look_once(&path).ok()?, portcullis_harness::paths::Found::Link(_)) {
        return None;
    }
    let folder = path.parent()?.canonicalize().ok()?;
    Some(folder.join(path.file_name()?))
}

/// The folders bash lists to expand the patterns of a word (`../outside/*.txt` lists `../outside`).
fn listed_folders(word: &str, ctx: &EvalContext) -> Result<Vec<PathBuf>, String> {
    let mut listed = Vec::new();
    for alternative in expand_braces(word)? {
        if alternative.contains(['*', '?', '[']) {
            match_pattern(&alternative, ctx, &mut listed)?;
        }
    }
    Ok(listed)
}

impl Policy {
    /// A walk that follows symbolic links reads (or writes) what each link below the tree points to:
    /// every target is judged as the path it resolves to (`grep -R x .` with `./k -> ~/.ssh` reads
    /// `~/.ssh`), and a folder reached through a link is walked too. A tree too large to look through
    /// prompts.
    fn judge_links_below(
        &self,
        raw: &str,
        access: Access,
        via: &str,
        ctx: &EvalContext,
        eval: &mut Evaluation,
    ) {
        let Ok(root) = resolve_in(raw, &ctx.cwd, ctx.home.as_deref()) else { return };
        let mut stack = vec![root];
        let mut walked: Vec<PathBuf> = Vec::new();
        let mut seen = 0usize;
        while let Some(folder) = stack.pop() {
            if walked.iter().any(|w| w == &folder) {
                continue;
            }
            walked.push(folder.clone());
            let Ok(entries) = std::fs::read_dir(&folder) else { continue };
            for entry in entries.flatten() {
                seen += 1;
                if seen > MAX_TREE_ENTRIES {
                    eval.raise(
                        Decision::Prompt,
                        format!("`{via}` follows links below {raw:?}, a tree of more than {MAX_TREE_ENTRIES} entries"),
                        None,
                    );
                    return;
                }
                let path = entry.path();
                let Ok(kind) = entry.file_type() else { continue };
                if kind.is_dir() {
                    stack.push(path);
                    continue;
                }
                if !kind.is_symlink() {
                    continue;
                }
                // A dangling link reads nothing; a link that cannot be resolved for another reason prompts.
                let target = match path.canonicalize() {
                    Ok(target) => target,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                    Err(e) => {
                        eval.raise(
                            Decision::Prompt,
                            format!("{} cannot be followed: {e}", path.display()),
                            None,
                        );
                        continue;
                    }
                };
                let shown = target.display().to_string();
                let how = format!("{via} (follows {})", path.display());
                eval.judge_access(&shown, access, target.is_dir(), &how, |one| {
                    self.judge_resolved(&shown, &target, access, ctx, one);
                });
                if target.is_dir() {
                    stack.push(target);
                }
            }
        }
    }
}

/// What a walk below a tree found.
enum Below {
    Clean,
    Denied(PathBuf, String),
    TooLarge,
}

/// Walks below `root` looking for a path a deny glob names.
fn find_below(root: &Path, globs: &[&String]) -> Below {
    let mut first = None;
    let walked = walk_denied(root, globs, &[], &mut 0, MAX_TREE_ENTRIES, |path, glob| {
        first = Some((path, glob.clone()));
        std::ops::ControlFlow::Break(())
    });
    match (walked, first) {
        (Err(TooLarge), _) => Below::TooLarge,
        (Ok(()), Some((path, glob))) => Below::Denied(path, glob),
        (Ok(()), None) => Below::Clean,
    }
}

/// A walk looked at more entries than it may.
pub(crate) struct TooLarge;

/// Walks below `root` (symlinks not followed, as `grep -r`, `rg`, `cp -r` and `rm -r` do), counting
/// the entries looked at in `seen` (more than `max` is [`TooLarge`]), and hands each path a deny glob
/// names to `found` with the glob, not looking inside it; `found` breaks to end the walk. The places in
/// `skip` (hidden already: empty inside) are not looked at.
pub(crate) fn walk_denied(
    root: &Path,
    globs: &[&String],
    skip: &[PathBuf],
    seen: &mut usize,
    max: usize,
    mut found: impl FnMut(PathBuf, &String) -> std::ops::ControlFlow<()>,
) -> Result<(), TooLarge> {
    let mut stack = vec![root.to_path_buf()];
    while let Some(folder) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&folder) else { continue };
        for entry in entries.flatten() {
            *seen += 1;
            if *seen > max {
                return Err(TooLarge);
            }
            let path = entry.path();
            if skip.contains(&path) {
                continue;
            }
            if let Some(glob) = globs.iter().find(|g| glob_matches_path(g, &path)) {
                if found(path, glob).is_break() {
                    return Ok(());
                }
            } else if entry.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(path);
            }
        }
    }
    Ok(())
}

fn is_pattern_component(component: &Component<'_>) -> bool {
    component.as_os_str().to_str().is_some_and(|c| c.contains(['*', '?', '[']))
}

/// The paths a word names after the expansions bash makes: braces, then each pattern matched against
/// the files there now (a pattern that matches nothing stays as written, as bash leaves it). Words are
/// taken as unquoted: a quoted `*` expanded here is judged more strictly, never less.
pub(crate) fn expand(word: &str, ctx: &EvalContext) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for alternative in expand_braces(word)? {
        if !alternative.contains(['*', '?', '[']) {
            out.push(alternative);
            continue;
        }
        let matches = match_pattern(&alternative, ctx, &mut Vec::new())?;
        out.push(alternative);
        out.extend(matches.into_iter().map(|p| p.display().to_string()));
        if out.len() > MAX_PATTERN_MATCHES {
            return Err(format!("the pattern matches more than {MAX_PATTERN_MATCHES} files"));
        }
    }
    Ok(out)
}

/// `a{b,c}d` is `abd acd`; nested and repeated groups expand in turn. A group without a comma (or a
/// `{1..3}` range) is kept as written: it names one file, inside the folder the rest of the word names.
fn expand_braces(word: &str) -> Result<Vec<String>, String> {
    let mut done = Vec::new();
    let mut todo = vec![word.to_owned()];
    while let Some(next) = todo.pop() {
        match first_group(&next) {
            None => done.push(next),
            Some((open, close)) => {
                let (head, inner, tail) = (&next[..open], &next[open + 1..close], &next[close + 1..]);
                for alternative in split_top_level(inner) {
                    todo.push(format!("{head}{alternative}{tail}"));
                }
            }
        }
        if done.len() + todo.len() > MAX_BRACE_WORDS {
            return Err(format!("its braces expand to more than {MAX_BRACE_WORDS} words"));
        }
    }
    Ok(done)
}

/// The first `{...}` group holding a comma at its own level.
fn first_group(word: &str) -> Option<(usize, usize)> {
    let bytes = word.as_bytes();
    let mut start = 0;
    while let Some(open) = word.get(start..)?.find('{').map(|o| o + start) {
        let mut depth = 0usize;
        let mut comma = false;
        for (at, b) in bytes.iter().enumerate().skip(open) {
            match b {
                b'{' => depth += 1,
                b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        if comma {
                            return Some((open, at));
                        }
                        break;
                    }
                }
                b',' if depth == 1 => comma = true,
                _ => {}
            }
        }
        start = open + 1;
    }
    None
}

fn split_top_level(inner: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut depth = 0usize;
    let mut from = 0;
    for (at, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                parts.push(&inner[from..at]);
                from = at + 1;
            }
            _ => {}
        }
    }
    parts.push(&inner[from..]);
    parts
}

/// The files a pattern matches now, from the working folder; `[...]` classes are taken as any one
/// character and dot files match too, so the set is never smaller than bash's.
fn match_pattern(
    pattern: &str,
    ctx: &EvalContext,
    listed: &mut Vec<PathBuf>,
) -> Result<Vec<PathBuf>, String> {
    let expanded = expand_tilde(pattern, &ctx.cwd, ctx.home.as_deref()).map_err(|e| e.to_string())?;
    let absolute = if expanded.is_absolute() { expanded } else { ctx.cwd.join(expanded) };
    let mut found = vec![PathBuf::from("/")];
    for component in absolute.components().skip(1) {
        let Some(text) = component.as_os_str().to_str() else { return Err("a path is not UTF-8".into()) };
        if !text.contains(['*', '?', '[']) {
            found.iter_mut().for_each(|f| f.push(component));
            continue;
        }
        let simple = simplify_classes(text);
        let mut next = Vec::new();
        for folder in &found {
            listed.push(folder.clone());
            let Ok(entries) = std::fs::read_dir(folder) else { continue };
            for entry in entries.flatten() {
                let name = entry.file_name();
                if name.to_str().is_some_and(|n| glob_component(&simple, n)) {
                    next.push(folder.join(name));
                    if next.len() > MAX_PATTERN_MATCHES {
                        return Err(format!("the pattern matches more than {MAX_PATTERN_MATCHES} files"));
                    }
                }
            }
        }
        found = next;
    }
    Ok(found)
}

/// `[abc]` and `[!a-z]` become `?`.
fn simplify_classes(component: &str) -> String {
    let mut out = String::new();
    let mut chars = component.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '[' {
            let rest: String = chars.clone().collect();
            if let Some(close) = rest.get(1..).and_then(|r| r.find(']')).map(|c| c + 1) {
                for _ in 0..=close {
                    chars.next();
                }
                out.push('?');
                continue;
            }
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn braces_expand_as_bash() {
        let rows: &[(&str, &[&str])] = &[
            ("a{b,c}d", &["abd", "acd"]),
            ("/etc/{passwd,shadow}", &["/etc/passwd", "/etc/shadow"]),
            ("x{1..3}", &["x{1..3}"]),
            ("{a,{b,c}}", &["a", "b", "c"]),
            ("plain", &["plain"]),
        ];
        for (word, expected) in rows {
            let mut got = expand_braces(word).unwrap();
            got.sort();
            let mut want: Vec<String> = expected.iter().map(|s| (*s).to_owned()).collect();
            want.sort();
            assert_eq!(got, want, "{word}");
        }
        assert!(expand_braces("{a,b}{c,d}{e,f}{g,h}{i,j}{k,l}{m,n}").is_err());
    }

    #[test]
    fn classes_become_one_character() {
        assert_eq!(simplify_classes("id_[rd]sa"), "id_?sa");
        assert_eq!(simplify_classes("[!a]x"), "?x");
        assert_eq!(simplify_classes("a[b"), "a[b");
    }

    #[test]
    fn patterns_match_files_there_now() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "").unwrap();
        std::fs::write(dir.path().join(".hidden.txt"), "").unwrap();
        std::fs::write(dir.path().join("b.rs"), "").unwrap();
        let ctx = EvalContext { cwd: dir.path().canonicalize().unwrap(), home: None };
        let mut got = expand("*.txt", &ctx).unwrap();
        got.sort();
        assert_eq!(got.len(), 3, "{got:?}"); // the pattern itself, a.txt and .hidden.txt
        assert!(got.iter().any(|p| p.ends_with("/a.txt")));
        assert!(got.iter().any(|p| p.ends_with("/.hidden.txt")));
        assert_eq!(expand("none*", &ctx).unwrap(), vec!["none*".to_owned()]);
    }
}
