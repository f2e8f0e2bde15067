//! How one command and one path are judged across the layers: each layer decides on its own (its rules,
//! its default, its roots) and the strictest layer's word stands, so a project layer narrows, never
//! widens, what the user layer allows. Every path a command names is also checked against the protected
//! places (policy files, executed content, the hub's secrets).

use crate::document::{Access, Decision};
use crate::evaluation::{EvalContext, Evaluation, MatchedRule, shorten};
use crate::paths::{first_glob_match, resolve_in};
use crate::policy::Policy;
use crate::protected::{KindRules, ProtectedKind};
use crate::rule::tokens;
use crate::shell::{ShellAnalysis, SimpleCommand};
use std::path::Path;

/// Programs that only read the files their operands name (their writing options are judged by the
/// analyzer as redirections or opaque options): naming a policy file or executed content is fine for
/// them; any other program naming one needs an operator.
const READS_OPERANDS_ONLY: &[&str] = &[
    "cat",
    "head",
    "tail",
    "less",
    "more",
    "wc",
    "grep",
    "egrep",
    "fgrep",
    "rg",
    "diff",
    "cmp",
    "ls",
    "stat",
    "file",
    "jq",
    "md5sum",
    "sha1sum",
    "sha256sum",
    "sha512sum",
    "b2sum",
    "cksum",
    "nl",
    "od",
    "hexdump",
    "xxd",
    "strings",
    "realpath",
    "readlink",
    "basename",
    "dirname",
    "du",
    "tree",
    "echo",
    "printf",
    "test",
    "[",
    "true",
    "false",
    "pwd",
];

/// How a program acts on the folders its operands name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TreeRole {
    /// Deletes or re-permissions every operand tree: a folder holding any protected place.
    Alters,
    /// Moves every operand but the last (the destination) away.
    Moves,
    /// Copies or archives operand trees: a folder holding the hub's secrets would hand them over.
    Copies,
    /// Reads the content of whole trees (`rg`, `find`, `grep -r`, `diff -r`): a folder holding the hub's
    /// secrets would hand them to the agent.
    Reads,
    /// [`TreeRole::Reads`] only when given a recursive option (`-r`, `-R`, `--recursive`).
    ReadsIfRecursive,
}

/// How a copy reaches its destination folder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Into {
    /// Files land in it by name.
    Plainly,
    /// Whole trees are merged into it (`cp -r`, `rsync -a`): anything below it may be written.
    Recursively,
}

/// Programs that act on whole trees: naming a folder that holds a protected place acts on that place too.
const TREE_PROGRAMS: &[(&str, TreeRole)] = &[
    ("rm", TreeRole::Alters),
    ("rmdir", TreeRole::Alters),
    ("shred", TreeRole::Alters),
    ("chmod", TreeRole::Alters),
    ("chown", TreeRole::Alters),
    ("chgrp", TreeRole::Alters),
    ("chattr", TreeRole::Alters),
    ("mv", TreeRole::Moves),
    ("cp", TreeRole::Copies),
    ("rsync", TreeRole::Copies),
    ("scp", TreeRole::Copies),
    ("tar", TreeRole::Copies),
    ("zip", TreeRole::Copies),
    ("7z", TreeRole::Copies),
    ("cpio", TreeRole::Copies),
    ("rg", TreeRole::Reads),
    ("ag", TreeRole::Reads),
    ("ack", TreeRole::Reads),
    ("find", TreeRole::Reads),
    ("grep", TreeRole::ReadsIfRecursive),
    ("egrep", TreeRole::ReadsIfRecursive),
    ("fgrep", TreeRole::ReadsIfRecursive),
    ("diff", TreeRole::ReadsIfRecursive),
];

/// The texts in one argument that may name a path: the word, the value of `--opt=VALUE` or `KEY=VALUE`,
/// and the value attached to a short option (`-oFILE`).
/// Before a `--`, a word starting with `-` is an option, not a file: only its values are candidates.
fn operand_candidates(word: &str, options_done: bool) -> Vec<&str> {
    let option = !options_done && word.starts_with('-') && word.len() > 1;
    let mut out = if option { Vec::new() } else { vec![word] };
    if let Some((_, value)) = word.split_once('=') {
        out.push(value);
    }
    if option && !word.starts_with("--") && word.len() > 2 {
        out.extend(word.get(2..));
    }
    out.retain(|c| !c.is_empty());
    out
}

/// The folders a script's relative paths may be resolved from: where it starts, then each folder a
/// static `cd`/`pushd` reaches, composed in the order they appear (a `cd` in a branch or a subshell is
/// counted too: an over-approximation). A `cd` whose target is only known at run time (`cd -`, `popd`,
/// `cd $X`, `CDPATH`) gets the policy's `unknown` (`unknown`): what follows it cannot be placed.
pub(crate) fn working_folders(
    analysis: &ShellAnalysis,
    ctx: &EvalContext,
    unknown: Decision,
    eval: &mut Evaluation,
) -> Vec<EvalContext> {
    let mut folders = vec![ctx.clone()];
    for command in &analysis.commands {
        // `env -C DIR cmd` and the other wrappers that set a folder (`shell/working_folders.rs`).
        if let Some(folder) = &command.working_folder {
            let from = folders.last().map_or(&ctx.cwd, |f| &f.cwd);
            match resolve_in(folder, from, ctx.home.as_deref()) {
                Ok(cwd) => folders.push(EvalContext { cwd, home: ctx.home.clone() }),
                Err(_) => eval.raise(
                    unknown,
                    format!("`{}` runs in a folder that cannot be placed", shorten(&command.argv.join(" "))),
                    None,
                ),
            }
        }
        if !matches!(command.program.as_str(), "cd" | "pushd" | "popd" | "chdir") {
            continue;
        }
        let target =
            command.argv.iter().skip(1).find(|a| !(a.starts_with('-') && a.len() > 1) || a.as_str() == "--");
        let target = match (command.program.as_str(), target.map(String::as_str)) {
            ("popd", _) | (_, Some("-")) => None,
            (_, Some(t)) if command.dynamic || t.starts_with('+') => None,
            (_, Some(t)) => Some(t.to_owned()),
            (_, None) => ctx.home.as_ref().map(|h| h.display().to_string()),
        };
        let from = folders.last().map_or(&ctx.cwd, |f| &f.cwd);
        match target.and_then(|t| resolve_in(&t, from, ctx.home.as_deref()).ok()) {
            Some(cwd) => folders.push(EvalContext { cwd, home: ctx.home.clone() }),
            None => eval.raise(
                unknown,
                format!(
                    "`{}` changes to a folder known only at run time: the paths after it cannot be placed",
                    shorten(&command.argv.join(" "))
                ),
                None,
            ),
        }
    }
    folders
}

impl Policy {
    /// The strictest matching rule of each layer, else that layer's default; the strictest layer decides.
    pub(crate) fn judge_command(&self, command: &SimpleCommand, eval: &mut Evaluation) {
        let t = tokens(command);
        let mut per_layer: Vec<Option<(Decision, MatchedRule, Option<&str>)>> =
            vec![None; self.defaults.len()];
        // Only the rules filed under the program can match (see `Policy::by_program`), in rule order.
        let filed =
            t.first().and_then(|program| self.by_program.get(*program)).map_or(&[][..], Vec::as_slice);
        for rule in filed.iter().filter_map(|&at| self.rules.get(at)) {
            if !crate::document::pattern_matches(&rule.pattern, rule.exact, &t) {
                continue;
            }
            let matched = MatchedRule {
                id: rule.id.clone(),
                source: rule.source.clone(),
                line: rule.line,
                decision: rule.decision,
            };
            eval.matched_rules.push(matched.clone());
            if let Some(slot) = per_layer.get_mut(rule.layer)
                && slot.as_ref().is_none_or(|(d, _, _)| rule.decision > *d)
            {
                *slot = Some((rule.decision, matched, rule.justification.as_deref()));
            }
        }
        let shown = shorten(&command.argv.join(" "));
        let several = self.layers().len() > 1;
        for (index, slot) in per_layer.into_iter().enumerate() {
            match slot {
                Some((decision, rule, why)) => {
                    let why = why.map(|w| format!(": {w}")).unwrap_or_default();
                    eval.raise(
                        decision,
                        format!("`{shown}`: rule {} says {}{why}", rule.id, decision.as_str()),
                        Some(&rule),
                    );
                }
                None => {
                    let Some(default) = self.defaults.get(index).copied().flatten() else { continue };
                    let of = match self.layers().get(index) {
                        Some(layer) if several => format!(" ({})", layer.source),
                        _ => String::new(),
                    };
                    eval.raise(
                        default,
                        format!("`{shown}`: no rule matches; the default is {}{of}", default.as_str()),
                        None,
                    );
                }
            }
        }
        if command.dynamic {
            eval.raise(self.unknown, format!("`{shown}` has words computed at run time"), None);
        }
    }

    /// Checks every path the command's arguments may name against the protected places: the hub's
    /// secrets are never named; policy files and executed content only by programs that just read them;
    /// a folder holding a protected place is never handed to a program that moves, copies or deletes
    /// trees without an operator.
    /// `ctx.cwd` must be canonical (see [`EvalContext::canonical`]).
    pub(crate) fn judge_operands(&self, command: &SimpleCommand, ctx: &EvalContext, eval: &mut Evaluation) {
        let program = command.program.as_str();
        let reads_only = READS_OPERANDS_ONLY.contains(&program);
        let last = command.argv.len().saturating_sub(1);
        // A recursive copy into a folder may write into any protected place below it; a recursive read
        // of one reads them.
        let recursive = command.argv.iter().skip(1).any(|a| {
            matches!(a.as_str(), "--recursive" | "--archive" | "--dereference-recursive")
                || (a.starts_with('-') && !a.starts_with("--") && a.contains(['r', 'R', 'a']))
        });
        let role = match TREE_PROGRAMS.iter().find(|(p, _)| *p == program).map(|(_, r)| *r) {
            Some(TreeRole::ReadsIfRecursive) if recursive => Some(TreeRole::Reads),
            Some(TreeRole::ReadsIfRecursive) => None,
            role => role,
        };
        let mut options_done = false;
        for (index, word) in command.argv.iter().enumerate().skip(1) {
            if word == "--" && !options_done {
                options_done = true;
                continue;
            }
            // Copying a policy file or executed content elsewhere is harmless; copying onto one (the last
            // operand, or the folder `-t`/`--target-directory` names) is not.
            let destination = index == last
                || word.starts_with("--target-directory")
                || word.starts_with("-t")
                || command.argv.get(index - 1).is_some_and(|w| w == "-t" || w == "--target-directory");
            let harmless = reads_only || (role == Some(TreeRole::Copies) && !destination);
            for candidate in operand_candidates(word, options_done) {
                let (hit, shown, at) = match self.pattern_hit(candidate, ctx) {
                    Some(hit) => {
                        (hit, format!("the pattern {candidate:?}, which may expand to"), candidate.to_owned())
                    }
                    None => {
                        let Ok(path) = resolve_in(candidate, &ctx.cwd, ctx.home.as_deref()) else { continue };
                        match self.protected.find(&path) {
                            Some(hit) => (hit, format!("{}:", path.display()), path.display().to_string()),
                            None => {
                                let into = if index == last && recursive {
                                    Into::Recursively
                                } else {
                                    Into::Plainly
                                };
                                self.judge_tree(program, role, index == last, into, &path, eval);
                                continue;
                            }
                        }
                    }
                };
                let decision = match hit.kind {
                    ProtectedKind::HubSecret => Decision::Forbidden,
                    _ if harmless => continue,
                    _ => Decision::Prompt,
                };
                let reason = format!("`{program}` names {shown} {}: {}", hit.what, hit.kind.why());
                eval.raise_at(decision, reason, hit.at(at));
            }
        }
    }

    /// A program acting on whole trees, given a folder holding a protected place, acts on it too.
    fn judge_tree(
        &self,
        program: &str,
        role: Option<TreeRole>,
        last: bool,
        into: Into,
        path: &Path,
        eval: &mut Evaluation,
    ) {
        let Some(role) = role else { return };
        if role == TreeRole::Moves && last {
            return;
        }
        let Some(hit) = self.protected.below(path) else { return };
        let decision = match hit.kind {
            ProtectedKind::HubSecret => Decision::Forbidden,
            _ if role == TreeRole::Copies && into == Into::Plainly => return,
            _ if role == TreeRole::Reads => return,
            _ => Decision::Prompt,
        };
        let reason =
            format!("`{program}` acts on {}, which holds {}: {}", path.display(), hit.what, hit.kind.why());
        eval.raise_at(decision, reason, hit.at(path.display().to_string()));
    }

    /// The protected place a word with pattern characters may expand to (bash expands `*`, `?`, `[..]`
    /// and `{a,b}` in arguments and, when they match one file, in redirection targets).
    fn pattern_hit(&self, raw: &str, ctx: &EvalContext) -> Option<crate::protected::ProtectedHit> {
        // A word holding blanks was quoted (awk and sed programs, messages): bash does not expand it.
        if raw.contains(char::is_whitespace) || !crate::protected::is_pattern(raw) {
            return None;
        }
        let expanded = crate::paths::expand_tilde(raw, &ctx.cwd, ctx.home.as_deref()).ok()?;
        let absolute = if expanded.is_absolute() { expanded } else { ctx.cwd.join(expanded) };
        let mut literal = std::path::PathBuf::from("/");
        let mut rest = Vec::new();
        for component in absolute.components().skip(1) {
            let text = component.as_os_str().to_string_lossy();
            if rest.is_empty() && !crate::protected::is_pattern(&text) {
                literal.push(component);
            } else {
                rest.push(component);
            }
        }
        if rest.is_empty() {
            return None;
        }
        let mut pattern =
            portcullis_harness::paths::canonicalize_lenient_with(&literal, &mut crate::snapshot::look_once)
                .ok()?;
        pattern.extend(rest);
        self.protected.pattern_hit(&pattern)
    }

    /// A read or write of one path: deny globs, protected places, then the roots of every layer.
    /// `ctx.cwd` must be canonical (see [`EvalContext::canonical`]).
    pub(crate) fn judge_path(&self, raw: &str, access: Access, ctx: &EvalContext, eval: &mut Evaluation) {
        if access == Access::Write && matches!(raw, "/dev/null" | "/dev/stdout" | "/dev/stderr") {
            eval.paths.push(raw.to_owned());
            return;
        }
        let path = match resolve_in(raw, &ctx.cwd, ctx.home.as_deref()) {
            Ok(path) => path,
            Err(e) => {
                // What cannot be resolved cannot be proven inside a root: fail closed.
                eval.paths.push(raw.to_owned());
                eval.raise(Decision::Forbidden, format!("{raw:?} cannot be resolved: {e}"), None);
                return;
            }
        };
        self.judge_resolved(raw, &path, access, ctx, eval);
    }

    /// Judges `path`, already resolved from `raw` as written.
    pub(crate) fn judge_resolved(
        &self,
        raw: &str,
        path: &std::path::Path,
        access: Access,
        ctx: &EvalContext,
        eval: &mut Evaluation,
    ) {
        let path = path.to_path_buf();
        let shown = path.display().to_string();
        eval.paths.push(shown.clone());
        if let Some(hit) = self.pattern_hit(raw, ctx)
            && let Some(decision) = hit.kind.decision(access)
        {
            let reason = format!("the pattern {raw:?} may expand to {}: {}", hit.what, hit.kind.why());
            eval.raise_at(decision, reason, hit.at(raw.to_owned()));
        }
        if let Some(glob) = first_glob_match(&self.deny, &path) {
            eval.raise(Decision::Forbidden, format!("{shown} matches the deny glob {glob:?}"), None);
            return;
        }
        if let Some(hit) = self.protected.find(&path)
            && let Some(decision) = hit.kind.decision(access)
        {
            let verb = if access == Access::Write { "writes" } else { "reads" };
            let reason = format!("{verb} {shown} ({}): {}", hit.what, hit.kind.why());
            eval.raise_at(decision, reason, hit.at(shown.clone()));
        } else if access == Access::Write && crate::executed::repository_look_alike(&path) {
            let place = crate::evaluation::DecidingPlace {
                kind: ProtectedKind::Executed,
                place: crate::executed::LOOK_ALIKE.to_owned(),
                path: shown.clone(),
            };
            eval.raise_at(
                Decision::Prompt,
                format!(
                    "writes {shown}: {}; changing it needs an operator's explicit approval",
                    crate::executed::LOOK_ALIKE
                ),
                place,
            );
        }
        let several = self.root_sets.len() > 1;
        let outside = |need: Access| {
            self.root_sets.iter().find(|set| {
                !set.roots
                    .iter()
                    .any(|(root, a)| *a >= need && portcullis_harness::paths::is_inside(&path, root))
            })
        };
        match access {
            Access::Write => {
                if let Some(set) = outside(Access::Write) {
                    let of = if several { format!(" of {}", set.source) } else { String::new() };
                    eval.raise(Decision::Forbidden, format!("{shown} is outside every write root{of}"), None);
                }
            }
            Access::Read => {
                if let Some(set) = outside(Access::Read) {
                    let of = if several { format!(" of {}", set.source) } else { String::new() };
                    eval.raise(self.read_outside, format!("{shown} is outside every root{of}"), None);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn candidates_of_an_argument() {
        assert_eq!(operand_candidates("a.txt", false), vec!["a.txt"]);
        assert_eq!(operand_candidates("--output=/x", false), vec!["/x"]);
        assert_eq!(operand_candidates("of=/dev/sda", false), vec!["of=/dev/sda", "/dev/sda"]);
        assert_eq!(operand_candidates("-o/x", false), vec!["/x"]);
        assert!(operand_candidates("-l", false).is_empty());
        assert_eq!(operand_candidates("-", false), vec!["-"]);
        // After `--` a word starting with `-` is a file name (maybe a symlink into a protected place).
        assert_eq!(operand_candidates("-link", true), vec!["-link"]);
    }

    #[test]
    fn rules_are_filed_under_every_program_they_name_in_order() {
        let text = r#"{"commands": {"rules": [
            {"id": "a", "pattern": ["git", "status"], "decision": "allow"},
            {"id": "b", "pattern": [["git", "hg", "git"]], "decision": "prompt"},
            {"id": "c", "pattern": ["cargo"], "decision": "allow"},
            {"id": "d", "pattern": [["cargo", "npm"], "test"], "decision": "forbidden"}
        ]}}"#;
        let layer = crate::layer::PolicyLayer::parse("t.json", text, std::env::temp_dir()).unwrap();
        let policy = Policy::from_layers_unchecked(vec![layer]).unwrap();
        let filed = |program: &str| -> Vec<&str> {
            policy
                .by_program
                .get(program)
                .into_iter()
                .flatten()
                .map(|&i| policy.rules[i].id.as_str())
                .collect()
        };
        assert_eq!(filed("git"), ["a", "b"]);
        assert_eq!(filed("hg"), ["b"]);
        assert_eq!(filed("cargo"), ["c", "d"]);
        assert_eq!(filed("npm"), ["d"]);
        assert!(filed("rm").is_empty());
    }
}
