//! The policy author's loop through the operator API: load the policy that applies in a folder and
//! evaluate one call or command with its evidence; run every rule example and test case; lint the
//! rules (never-matching, shadowed, voided, redundant). Policies that do not load are refused with
//! the policy's code and, in `details`, the file, line and column.

use super::error::ApiError;
pub use super::judge::probe_sandbox;
use super::judge::{Judge, run_policy_tests};
use super::policy_files::{located, parse_for};
use portcullis_policy::discovery::layers_for;
use portcullis_policy::lint::lint;
use portcullis_policy::{EvalContext, Policy};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::{Path, PathBuf};

pub use portcullis_policy::lint::{LintFinding, LintKind, RelatedRule, Severity};
pub use portcullis_policy::{
    Access, CallVerdict, Decision, Evaluation, ExampleOutcome, MatchedRule, PathVerdict, TestOutcome,
};

/// Quotes a word so bash reads it back as the same word (`it's` → `'it'\''s'`); plain words stay.
pub use portcullis_harness::shell_words::word as quote_shell_word;

/// The policy that applies in a folder, loaded and checked (its rule examples hold).
pub struct LoadedPolicy {
    policy: Policy,
    sources: Vec<String>,
    cwd: PathBuf,
}

impl LoadedPolicy {
    /// The policy of `files` (else the user's and the project's found from `cwd`, else the built-in
    /// default), for calls made in `cwd`.
    pub fn load(files: &[PathBuf], cwd: &Path) -> Result<LoadedPolicy, ApiError> {
        let layers = layers_for(files, cwd).map_err(located)?;
        let sources = layers.iter().map(|l| l.source.clone()).collect();
        let policy = Policy::from_layers(layers).map_err(located)?;
        Ok(LoadedPolicy { policy, sources, cwd: cwd.to_path_buf() })
    }

    /// The policy's files in layer order (or the built-in default's name).
    pub fn sources(&self) -> &[String] {
        &self.sources
    }

    /// Where "." points in the layers that name relative roots.
    pub fn relative_roots(&self) -> Vec<RelativeRoots> {
        relative_roots(&self.policy)
    }

    /// Evaluates a shell script as run in the folder: the decision, the commands and paths seen, the
    /// matched rules with their files, the deciding rule and why.
    pub fn check_command(&self, script: &str) -> Evaluation {
        self.policy.evaluate_command(script, &EvalContext::new(&self.cwd))
    }

    /// The walls the command `evaluation` judged would run inside, on a machine that can enforce
    /// `support` (see [`probe_sandbox`]), as a live call gets them: a contained command's with its
    /// containment, or its decision raised to a prompt where it cannot be contained here.
    pub fn sandbox_profile(
        &self,
        evaluation: &mut Evaluation,
        support: &portcullis_harness::SandboxSupport,
    ) -> portcullis_harness::SandboxProfile {
        portcullis_policy::judgement::command_walls(
            &self.policy,
            evaluation,
            &EvalContext::new(&self.cwd),
            support,
        )
    }

    /// Whether the policy forbids commands it cannot confine (`sandbox.mode: required`).
    pub fn sandbox_required(&self) -> bool {
        self.policy.sandbox_mode() == portcullis_policy::document::SandboxMode::Required
    }

    /// Evaluates one command given as its words (argv), each quoted so the shell reads it back whole.
    pub fn check_argv(&self, argv: &[String]) -> Evaluation {
        let script = argv.iter().map(|w| quote_shell_word(w)).collect::<Vec<_>>().join(" ");
        self.check_command(&script)
    }

    /// Judges a tool call as a live call is judged (the tool describes its action, the pipeline judges
    /// it; nothing runs): blocked before the policy, or the policy's evaluation.
    pub async fn check_call(&self, tool: &str, arguments: Value) -> Result<CallVerdict, ApiError> {
        let policy = Policy::from_layers_unchecked(self.policy.layers().to_vec()).map_err(located)?;
        // Judged as on this machine, as a live call here would be (sandbox.mode: required included).
        let mut judge = Judge::new(policy, &self.cwd, probe_sandbox().await)?;
        let judgement = judge.judge(tool, arguments, &self.cwd).await;
        Ok(judgement.into_verdict())
    }
}

/// Every rule example and test case of a policy, and how each went.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PolicyTestReport {
    pub examples: Vec<ExampleOutcome>,
    pub tests: Vec<TestOutcome>,
    /// Examples and test cases that failed.
    pub failed: usize,
    /// The policy's files in layer order.
    pub policies: Vec<String>,
}

/// Runs every rule example and test case of the policy of `files` (else the one that applies in
/// `cwd`), `~` being this user's home. Failing examples are reported, not refused.
pub async fn test_policy(files: &[PathBuf], cwd: &Path) -> Result<PolicyTestReport, ApiError> {
    let policy = unchecked(files, cwd)?;
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let examples = policy.example_outcomes();
    let tests = run_policy_tests(&policy, home).await?;
    let failed = examples.iter().filter(|e| !e.passed).count() + tests.iter().filter(|t| !t.passed).count();
    Ok(PolicyTestReport { examples, tests, failed, policies: sources_of(&policy) })
}

/// What lint found in a policy.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PolicyLint {
    pub findings: Vec<LintFinding>,
    /// Findings of severity warning (the rest are notes).
    pub warnings: usize,
    /// Command rules linted, over every layer.
    pub rules: usize,
    /// The policy's files in layer order.
    pub policies: Vec<String>,
}

/// Lints the policy of `files` (else the one that applies in `cwd`), every layer together (a rule of
/// one layer may shadow another's).
pub fn lint_policy(files: &[PathBuf], cwd: &Path) -> Result<PolicyLint, ApiError> {
    Ok(lint_of(&unchecked(files, cwd)?))
}

/// Lints a draft of the policy file `path` applied to `project` without saving it, on its own (not
/// layered with the others). A draft that does not parse is refused with its line and column in
/// `details`.
pub fn lint_draft(path: &Path, text: &str, project: &Path) -> Result<PolicyLint, ApiError> {
    let layer = parse_for(path, text, project)?;
    Ok(lint_of(&Policy::from_layers_unchecked(vec![layer]).map_err(located)?))
}

/// The layers of `files` (else those found for `cwd`) as a policy whose rule examples may fail.
fn unchecked(files: &[PathBuf], cwd: &Path) -> Result<Policy, ApiError> {
    Policy::from_layers_unchecked(layers_for(files, cwd).map_err(located)?).map_err(located)
}

/// Where "." (and every relative root) points in one policy layer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RelativeRoots {
    /// The layer's source (its file, or the built-in default's name).
    pub policy: String,
    /// The folder its "." is.
    pub folder: String,
}

/// Where "." points in each layer of `policy` that names relative roots (see
/// [`portcullis_policy::discovery::roots_anchor`] for the rule).
pub fn relative_roots(policy: &Policy) -> Vec<RelativeRoots> {
    (portcullis_policy::discovery::relative_root_anchors(policy.layers()).into_iter())
        .map(|(policy, folder)| RelativeRoots { policy, folder: folder.display().to_string() })
        .collect()
}

fn sources_of(policy: &Policy) -> Vec<String> {
    policy.layers().iter().map(|l| l.source.clone()).collect()
}

pub(super) fn lint_of(policy: &Policy) -> PolicyLint {
    let findings = lint(policy);
    let warnings = findings.iter().filter(|f| f.severity == Severity::Warning).count();
    let rules = policy.layers().iter().map(|l| l.document.commands.rules.len()).sum();
    PolicyLint { findings, warnings, rules, policies: sources_of(policy) }
}

#[cfg(test)]
mod tests {
    use super::quote_shell_word;

    #[test]
    fn words_are_quoted_only_when_they_need_it() {
        assert_eq!(quote_shell_word("git"), "git");
        assert_eq!(quote_shell_word("a b"), "'a b'");
        assert_eq!(quote_shell_word(""), "''");
        assert_eq!(quote_shell_word("it's"), "'it'\\''s'");
    }
}
