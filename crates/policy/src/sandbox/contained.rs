//! The walls of a contained command: one the judge allowed without asking although part of it cannot be
//! read statically (interpreter code, sourced files, words computed at run time). It runs under the
//! strictest reading of the policy instead of a prediction of what it does: the programs whose rules
//! prompt or forbid are masked, the files the deny globs name below its trees are hidden, no host is
//! asked for, and its deletions are held where a deleting program's rule asks. Where that reading cannot
//! be built, the command is asked, with the reason.

use crate::document::{Decision, PatternElement};
use crate::evaluation::{EvalContext, Evaluation};
use crate::judge_files::{TooLarge, walk_denied};
use crate::paths::glob_matches_path;
use crate::policy::Policy;
use portcullis_harness::{Containment, MaskedProgram, SandboxProfile};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Entries looked at below a contained command's trees for files the deny globs name, before giving up
/// (and asking): every one must be found to be hidden.
pub const MAX_HIDE_ENTRIES: usize = 250_000;

/// Folders programs are run from by name, and those that hold a second copy of one (git's own folder has
/// its own `git`, which `/usr/lib/git-core/git push` would run past a mask on `/usr/bin/git`): a masked
/// program is covered in each that holds it.
pub const PROGRAM_FOLDERS: &[&str] = &[
    "/usr/local/sbin",
    "/usr/local/bin",
    "/usr/sbin",
    "/usr/bin",
    "/sbin",
    "/bin",
    "/usr/games",
    "/usr/lib/git-core",
    "/usr/libexec/git-core",
];

/// The same in the home folder (toolchains' programs and shims).
pub const HOME_PROGRAM_FOLDERS: &[&str] = &[
    ".cargo/bin",
    ".local/bin",
    ".pyenv/shims",
    ".pyenv/bin",
    ".rbenv/shims",
    ".bun/bin",
    ".deno/bin",
    ".volta/bin",
    "go/bin",
];

/// Programs that delete the files they name: where a rule of one of them prompts or forbids, a
/// contained command's deletions of files that existed are held for the operator.
pub const DELETING_PROGRAMS: &[&str] = &["rm", "rmdir", "unlink", "shred", "find"];

/// Shells are never masked: a contained command is shell code already, run by one of them, so another
/// gives it nothing it lacks (and masking the one it runs under would stop it from starting).
pub const SHELLS_NOT_MASKED: &[&str] = &["bash", "sh", "dash"];

/// What the rules make of a contained command, before any file is looked at: the programs to mask (each
/// with the rule that masks it) and the rule that holds deletions.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ContainedRules {
    pub masked: BTreeMap<String, String>,
    pub deletions_held_by: Option<String>,
}

impl Policy {
    /// The rules' part of containing `evaluation`'s command, or why it cannot be contained (then it is
    /// asked): a default that prompts (every program no rule names would have to be masked), or a
    /// program the command itself runs that a rule masks.
    pub fn contained_rules(&self, evaluation: &Evaluation) -> Result<ContainedRules, String> {
        let default = self.default_decision();
        if default > Decision::Contain {
            return Err(format!(
                "it cannot run contained: the policy's default for programs no rule names is {}, and \
                 contained code could run any of them (commands.default allow or contain lets it run contained)",
                default.as_str()
            ));
        }
        let mut out = ContainedRules::default();
        for rule in self.rules.iter().filter(|r| r.decision > Decision::Contain) {
            let by = format!("rule `{}` ({}) says {}", rule.id, rule.source, rule.decision.as_str());
            let names: Vec<&str> = match rule.pattern.first() {
                Some(PatternElement::Token(t)) => vec![t.as_str()],
                Some(PatternElement::AnyOf(list)) => list.iter().map(String::as_str).collect(),
                None => Vec::new(),
            };
            for name in names {
                let name = crate::shell::basename_of(name).to_owned();
                if SHELLS_NOT_MASKED.contains(&name.as_str()) {
                    continue;
                }
                if out.deletions_held_by.is_none() && DELETING_PROGRAMS.contains(&name.as_str()) {
                    out.deletions_held_by = Some(by.clone());
                }
                out.masked.entry(name).or_insert_with(|| by.clone());
            }
        }
        for argv in &evaluation.commands {
            let Some(program) = argv.first().map(|p| crate::shell::basename_of(p)) else { continue };
            if let Some(by) = out.masked.get(program) {
                return Err(format!(
                    "it cannot run contained: it runs `{program}`, which contained code may not run \
                     ({by} for some of its uses)"
                ));
            }
        }
        Ok(out)
    }

    /// The containment of `evaluation`'s command inside `profile` (its trees built already), or why it
    /// cannot be contained: [`Policy::contained_rules`], then the files to hide.
    pub fn containment(
        &self,
        evaluation: &Evaluation,
        profile: &SandboxProfile,
        ctx: &EvalContext,
    ) -> Result<Containment, String> {
        let rules = self.contained_rules(evaluation)?;
        let mut folders: Vec<PathBuf> = PROGRAM_FOLDERS.iter().map(PathBuf::from).collect();
        if let Some(home) = &ctx.home {
            folders.extend(HOME_PROGRAM_FOLDERS.iter().map(|f| home.join(f)));
        }
        if let Some(path) = std::env::var_os("PATH") {
            folders.extend(std::env::split_paths(&path).filter(|p| p.is_absolute()));
        }
        let visible = |p: &Path| {
            profile.system.iter().chain(&profile.read).chain(&profile.write).any(|t| p.starts_with(t))
                && !profile.hidden.iter().any(|h| p.starts_with(h))
        };
        let masked = rules
            .masked
            .into_iter()
            .filter_map(|(program, by)| {
                let mut paths: Vec<PathBuf> = folders
                    .iter()
                    .map(|f| f.join(&program))
                    .filter(|p| p.is_file())
                    .filter_map(|p| std::fs::canonicalize(p).ok())
                    .filter(|p| visible(p))
                    .collect();
                paths.sort();
                paths.dedup();
                (!paths.is_empty()).then_some(MaskedProgram { program, paths, by })
            })
            .collect();
        let globs: Vec<&String> = self.deny.iter().collect();
        let mut hidden_by_globs = Vec::new();
        let mut seen = 0usize;
        for tree in profile.write.iter().chain(&profile.read).filter(|t| !is_toolchain(t, ctx)) {
            if let Some(glob) = globs.iter().find(|g| glob_matches_path(g, tree)) {
                return Err(format!(
                    "it cannot run contained: the deny glob {glob:?} names the whole tree {}",
                    tree.display()
                ));
            }
            hide_below(tree, &globs, &profile.hidden, &mut seen, &mut hidden_by_globs)?;
        }
        let unread = evaluation
            .parts
            .iter()
            .filter(|p| p.decision == Decision::Contain)
            .filter_map(|p| p.reason.clone())
            .collect();
        Ok(Containment {
            unread,
            masked,
            hidden_by_globs,
            deny_globs: self.deny.clone(),
            deletions_held_by: rules.deletions_held_by,
        })
    }
}

/// A toolchain tree of the home folder (read by every confined command; not searched).
fn is_toolchain(tree: &Path, ctx: &EvalContext) -> bool {
    ctx.home
        .as_ref()
        .is_some_and(|home| super::HOME_TOOLCHAINS.iter().any(|(rel, _)| tree.starts_with(home.join(rel))))
}

/// Adds every entry below `tree` that a glob names to `hidden` (not looking inside it), counting the
/// entries looked at in `seen`; too many is an error (what was not looked at cannot be hidden). Places
/// hidden already (`skip`: secrets, the reserved `.portcullis`) are empty inside: not looked into.
fn hide_below(
    tree: &Path,
    globs: &[&String],
    skip: &[PathBuf],
    seen: &mut usize,
    hidden: &mut Vec<PathBuf>,
) -> Result<(), String> {
    let walked = walk_denied(tree, globs, skip, seen, MAX_HIDE_ENTRIES, |path, _| {
        hidden.push(path);
        std::ops::ControlFlow::Continue(())
    });
    walked.map_err(|TooLarge| {
        format!(
            "it cannot run contained: its trees hold more than {MAX_HIDE_ENTRIES} entries, so the files \
             the deny globs name cannot all be found to hide them"
        )
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::PolicyLayer;

    fn policy(project: &Path, commands: &str) -> Policy {
        let text = format!(
            r#"{{ "commands": {commands}, "paths": {{ "roots": [ {{ "path": ".", "access": "write" }} ] }} }}"#
        );
        Policy::from_layers(vec![PolicyLayer::parse("p.json", &text, project.to_path_buf()).unwrap()])
            .unwrap()
    }

    #[test]
    fn rules_that_prompt_or_forbid_mask_their_programs_and_a_deleting_one_holds_deletions() {
        let dir = tempfile::tempdir().unwrap();
        let p = policy(
            dir.path(),
            r#"{ "default": "allow", "rules": [
                { "id": "push", "pattern": ["git", "push"], "decision": "prompt" },
                { "id": "net", "pattern": [["curl", "wget"]], "decision": "forbidden" },
                { "id": "rm", "pattern": ["rm", "-rf"], "decision": "prompt" },
                { "id": "ls", "pattern": ["ls"], "decision": "allow" } ] }"#,
        );
        let rules = p.contained_rules(&Evaluation::new()).unwrap();
        // (program, masked by)
        let rows = [
            ("git", Some("rule `push` (p.json) says prompt")),
            ("curl", Some("rule `net` (p.json) says forbidden")),
            ("wget", Some("rule `net` (p.json) says forbidden")),
            ("rm", Some("rule `rm` (p.json) says prompt")),
            ("ls", None),
            ("python3", None),
        ];
        for (program, by) in rows {
            assert_eq!(rules.masked.get(program).map(String::as_str), by, "{program}");
        }
        assert_eq!(rules.deletions_held_by.as_deref(), Some("rule `rm` (p.json) says prompt"));
    }

    #[test]
    fn a_prompting_default_or_a_masked_program_the_command_runs_cannot_be_contained() {
        let dir = tempfile::tempdir().unwrap();
        let prompting = policy(dir.path(), r#"{ "default": "prompt" }"#);
        let err = prompting.contained_rules(&Evaluation::new()).unwrap_err();
        assert!(err.contains("default for programs no rule names is prompt"), "{err}");
        let git = policy(
            dir.path(),
            r#"{ "default": "allow", "rules": [ { "id": "push", "pattern": ["git", "push"], "decision": "prompt" } ] }"#,
        );
        let mut evaluation = Evaluation::new();
        evaluation.commands.push(vec!["/usr/bin/git".into(), "log".into()]);
        let err = git.contained_rules(&evaluation).unwrap_err();
        assert!(err.contains("runs `git`") && err.contains("rule `push`"), "{err}");
    }

    #[test]
    fn files_the_deny_globs_name_are_found_below_the_trees_without_looking_inside_them() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        for f in ["a/.env", "a/b/key.pem", "a/b/ok.txt", ".ssh/id/deep", "src/main.rs", "skipped/.env"] {
            std::fs::create_dir_all(root.join(f).parent().unwrap()).unwrap();
            std::fs::write(root.join(f), "x").unwrap();
        }
        let globs: Vec<String> =
            crate::document::DEFAULT_DENY_GLOBS.iter().map(|g| (*g).to_owned()).collect();
        let globs: Vec<&String> = globs.iter().collect();
        let (mut seen, mut hidden) = (0, Vec::new());
        hide_below(&root, &globs, &[root.join("skipped")], &mut seen, &mut hidden).unwrap();
        hidden.sort();
        assert_eq!(hidden, vec![root.join(".ssh"), root.join("a/.env"), root.join("a/b/key.pem")]);
    }
}
