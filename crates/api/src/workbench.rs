//! The policy workbench through the operator API: the hub's policy layer by layer as files to edit, a
//! draft of one of them checked as it is typed (where it does not load, which rule examples fail and
//! why), linted and tried against a command or call with the other layers around it, diffed against
//! the file on disk, and saved atomically — only to one of the hub's own policy files, and only if the
//! file did not change on disk since the editor read it. Nothing here is reachable over HTTP: drafts
//! and saves are the desktop operator's, never an agent's.

use super::OperatorApi;
use super::error::{ApiError, ErrorCode};
use super::judge::{Judge, run_policy_tests};
use super::line_diff::{DiffLine, line_diff};
use super::policy_check::{PolicyLint, lint_of};
use super::policy_files::{located, parse_for, save_policy, summary_of, version_of};
use super::types::PolicySummary;
/// How one of the policy's test cases went under a draft (the policy's own report, as front ends see it).
pub use portcullis_policy::TestOutcome;
use portcullis_policy::discovery::{DEFAULT_POLICY, DEFAULT_POLICY_SOURCE};
use portcullis_policy::{CallVerdict, EvalContext, ExampleCommands, ExampleOutcome, Policy, PolicyLayer};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

/// Where a layer comes from.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LayerKind {
    /// The user's policy file (the only layer that may widen what the others allow).
    User,
    /// The project's `.portcullis/policy.json`.
    Project,
    /// A file named on the command line (`--policy`).
    Named,
    /// The built-in default (in force when no file applies; not editable).
    BuiltIn,
}

/// One layer of the hub's policy, as the workbench edits it.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LayerFile {
    /// The file's path (the name drafts, saves and evaluations use), or `built-in default policy`.
    pub source: String,
    pub kind: LayerKind,
    /// Its place in the layering, first to last; `None` for a file not in force yet (to be created).
    pub layer: Option<u32>,
    /// The file's text on disk (for a file to be created: the text it starts from).
    pub text: String,
    /// The version of the text on disk (a save names it); `None` when the file does not exist.
    pub version: Option<String>,
    pub editable: bool,
    /// The text on disk is the one in force (false: it changed and did not load, or is not loaded yet).
    pub in_force: bool,
}

/// The hub's policy, layer by layer.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PolicyLayers {
    pub project: String,
    pub layers: Vec<LayerFile>,
}

/// Why a draft does not load, and where.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DraftProblem {
    pub code: String,
    pub message: String,
    /// 1-based; 0 when unknown.
    pub line: u32,
    pub column: u32,
    pub rule: Option<String>,
}

/// A draft checked as it is typed.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DraftCheck {
    /// The version of the text checked: a window drops answers to texts it no longer shows.
    pub version: String,
    /// Why the draft would not load (a syntax error, an invalid field, a failing rule example).
    pub problem: Option<DraftProblem>,
    /// Every rule example of the draft, failing ones with where and why.
    pub examples: Vec<ExampleOutcome>,
    pub summary: Option<PolicySummary>,
}

/// What to try a draft on.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum TrialInput {
    /// A shell command, as the `shell` tool would run it in the project.
    Command { script: String },
    /// A whole tool call, judged as a live call is (the tool describes its action; nothing runs).
    Call { tool: String, arguments: Value },
}

/// A draft's verdict on a trial input, with every layer's name (a matched rule names its layer's file).
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DraftTrial {
    pub verdict: CallVerdict,
    /// The layers judged with, in order (the draft in its file's place).
    pub layers: Vec<String>,
}

/// A draft against the file on disk.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DraftDiff {
    pub diff: Vec<DiffLine>,
    /// The version on disk now (`None`: no file yet).
    pub version_on_disk: Option<String>,
}

impl OperatorApi {
    /// The hub's policy layer by layer, each with its file's text and version; when no project file
    /// exists, the project file that would be created (starting from the built-in default's text,
    /// since once it exists it replaces the built-in default).
    pub fn policy_layers(&self) -> Result<PolicyLayers, ApiError> {
        let policy = self.hub.live_policy().current();
        let mut layers: Vec<LayerFile> = Vec::new();
        let user = self.user_policy_file();
        let named = !self.hub.named_policy_files().is_empty();
        for (index, layer) in policy.layers().iter().enumerate() {
            let in_force_text = layer.text.clone().unwrap_or_default();
            let layer_index = u32::try_from(index).ok();
            if layer.source == DEFAULT_POLICY_SOURCE {
                layers.push(LayerFile {
                    source: layer.source.clone(),
                    kind: LayerKind::BuiltIn,
                    layer: layer_index,
                    version: Some(version_of(&in_force_text)),
                    text: in_force_text,
                    editable: false,
                    in_force: true,
                });
                continue;
            }
            let kind = match () {
                _ if named => LayerKind::Named,
                _ if user.as_deref() == Some(layer.source.as_str()) => LayerKind::User,
                _ => LayerKind::Project,
            };
            let on_disk = read_optional(Path::new(&layer.source))?;
            layers.push(LayerFile {
                source: layer.source.clone(),
                kind,
                layer: layer_index,
                in_force: on_disk.as_deref() == Some(in_force_text.as_str()),
                version: on_disk.as_deref().map(version_of),
                text: on_disk.unwrap_or_default(),
                editable: true,
            });
        }
        if let Some(file) = self.project_file_to_create(&policy) {
            let on_disk = read_optional(&file)?;
            layers.push(LayerFile {
                source: file.display().to_string(),
                kind: LayerKind::Project,
                layer: None,
                version: on_disk.as_deref().map(version_of),
                text: on_disk.unwrap_or_else(|| DEFAULT_POLICY.to_owned()),
                editable: true,
                in_force: false,
            });
        }
        Ok(PolicyLayers { project: self.hub.project().display().to_string(), layers })
    }

    /// Checks a draft of the policy file `file` as it is typed: where it does not load, and every rule
    /// example with whether it holds (a failing one says which word left the pattern). `parsed` keeps
    /// the examples' commands between checks.
    pub fn check_policy_draft(
        &self,
        file: &str,
        text: &str,
        parsed: &mut ExampleCommands,
    ) -> Result<DraftCheck, ApiError> {
        let path = self.draft_file(file)?;
        let mut check =
            DraftCheck { version: version_of(text), problem: None, examples: Vec::new(), summary: None };
        let layer = match parse_for(&path, text, self.hub.project()) {
            Ok(layer) => layer,
            Err(e) => {
                check.problem = Some(problem(&e));
                return Ok(check);
            }
        };
        check.summary = Some(summary_of(&layer));
        match Policy::from_layers_unchecked(vec![layer]) {
            Ok(policy) => {
                check.examples = policy.example_outcomes_with(parsed);
                if let Some(failed) = check.examples.iter().find(|e| !e.passed) {
                    check.problem = Some(DraftProblem {
                        code: "policy_rule".into(),
                        message: format!(
                            "rule {:?}: example {:?} {} ({})",
                            failed.rule,
                            failed.example,
                            if failed.should_match {
                                "should match but does not"
                            } else {
                                "should not match but does"
                            },
                            failed.why.as_deref().unwrap_or_default()
                        ),
                        line: u32::try_from(failed.line).unwrap_or(0),
                        column: u32::try_from(failed.column).unwrap_or(0),
                        rule: Some(failed.rule.clone()),
                    });
                }
            }
            Err(e) => check.problem = Some(problem(&located(e))),
        }
        Ok(check)
    }

    /// Lints the draft of `file` with the hub's other layers around it (a rule of one layer may shadow
    /// another's).
    pub fn lint_policy_draft(&self, file: &str, text: &str) -> Result<PolicyLint, ApiError> {
        let policy = Policy::from_layers_unchecked(self.layers_with_draft(file, text)?).map_err(located)?;
        Ok(lint_of(&policy))
    }

    /// What the hub's policy with the draft of `file` in its place decides for `input` in the project:
    /// the whole trace (sub-commands, wrappers, redirections, paths, every matching rule, the deciding
    /// one and its file).
    pub async fn try_policy_draft(
        &self,
        file: &str,
        text: &str,
        input: TrialInput,
    ) -> Result<DraftTrial, ApiError> {
        let layers = self.layers_with_draft(file, text)?;
        let names = layers.iter().map(|l| l.source.clone()).collect();
        let policy = Policy::from_layers_unchecked(layers).map_err(located)?;
        let project = self.hub.project();
        let verdict = match input {
            TrialInput::Command { script } => {
                let home = std::env::var_os("HOME").map(PathBuf::from);
                CallVerdict::Evaluated(
                    policy.evaluate_command(&script, &EvalContext { cwd: project.to_path_buf(), home }),
                )
            }
            TrialInput::Call { tool, arguments } => {
                let support = self.hub.live_policy().sandbox_support().clone();
                let mut judge = Judge::new(policy, project, support)?;
                let judgement = judge.judge(&tool, arguments, project).await;
                judgement.into_verdict()
            }
        };
        Ok(DraftTrial { verdict, layers: names })
    }

    /// Every test case of the hub's policy with the draft of `file` in its place, judged as live calls
    /// are (nothing runs), `~` being this user's home.
    pub async fn test_policy_draft(&self, file: &str, text: &str) -> Result<Vec<TestOutcome>, ApiError> {
        let policy = Policy::from_layers_unchecked(self.layers_with_draft(file, text)?).map_err(located)?;
        run_policy_tests(&policy, std::env::var_os("HOME").map(PathBuf::from)).await
    }

    /// The draft of `file` against the file on disk, line by line.
    pub fn diff_policy_draft(&self, file: &str, text: &str) -> Result<DraftDiff, ApiError> {
        let path = self.draft_file(file)?;
        let on_disk = read_optional(&path)?;
        Ok(DraftDiff {
            diff: line_diff(on_disk.as_deref().unwrap_or_default(), text),
            version_on_disk: on_disk.as_deref().map(version_of),
        })
    }

    /// Saves the draft as `file` (one of the hub's policy files), atomically, if it loads and the file
    /// on disk is still `expected_version` (`None`: a file to create). The hub's watcher reloads it.
    /// Returns the new version.
    pub fn save_policy_file(
        &self,
        file: &str,
        text: &str,
        expected_version: Option<&str>,
    ) -> Result<String, ApiError> {
        let path = self.draft_file(file)?;
        // The whole policy must load with the draft in place (a user layer may not be widened by a
        // project file, examples must hold ...), not only the draft alone.
        Policy::from_layers(self.layers_with_draft(file, text)?).map_err(located)?;
        if let Some(folder) = path.parent()
            && !folder.exists()
        {
            std::fs::create_dir_all(folder).map_err(|e| {
                ApiError::new(
                    ErrorCode::BadArgument,
                    format!("cannot create {}: {e}", folder.display()),
                    json!({ "file": file }),
                )
            })?;
        }
        save_policy(&path, text, expected_version, self.hub.project())
    }

    /// `file` if it is one of the files the workbench edits (the hub's policy files, or the project
    /// file to create); anything else is refused.
    fn draft_file(&self, file: &str) -> Result<PathBuf, ApiError> {
        // Asked on every keystroke: decided from the layers in force, no file read.
        let policy = self.hub.live_policy().current();
        let in_force = policy.layers().iter().any(|l| l.source == file && l.source != DEFAULT_POLICY_SOURCE);
        let to_create = self.project_file_to_create(&policy).is_some_and(|f| f.as_os_str() == file);
        if in_force || to_create {
            Ok(PathBuf::from(file))
        } else {
            Err(ApiError::new(
                ErrorCode::BadArgument,
                format!("{file} is not one of this hub's policy files"),
                json!({ "field": "file", "file": file }),
            ))
        }
    }

    /// The user's policy file of this hub, if it exists.
    fn user_policy_file(&self) -> Option<String> {
        let file = self.hub.user_config()?.join("policy.json");
        file.is_file().then(|| file.display().to_string())
    }

    /// The project's policy file when none is in force (and no files were named at start): the file the
    /// workbench offers to create.
    fn project_file_to_create(&self, policy: &Policy) -> Option<PathBuf> {
        let user = self.user_policy_file();
        let project_in_force = policy
            .layers()
            .iter()
            .any(|l| l.source != DEFAULT_POLICY_SOURCE && user.as_deref() != Some(l.source.as_str()));
        (self.hub.named_policy_files().is_empty() && !project_in_force)
            .then(|| self.hub.project().join(".portcullis").join("policy.json"))
    }

    /// The hub's layers with the draft of `file` in its place (a project file to create takes the
    /// built-in default's place, or follows the user's file).
    pub(crate) fn layers_with_draft(&self, file: &str, text: &str) -> Result<Vec<PolicyLayer>, ApiError> {
        let path = self.draft_file(file)?;
        let draft = parse_for(&path, text, self.hub.project())?;
        let mut layers: Vec<PolicyLayer> = self.hub.live_policy().current().layers().to_vec();
        match layers.iter().position(|l| l.source == file) {
            Some(index) => layers[index] = draft,
            None => {
                layers.retain(|l| l.source != DEFAULT_POLICY_SOURCE);
                layers.push(draft);
            }
        }
        Ok(layers)
    }
}

fn read_optional(path: &Path) -> Result<Option<String>, ApiError> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(ApiError::new(
            ErrorCode::BadArgument,
            format!("cannot read {}: {e}", path.display()),
            json!({ "file": path }),
        )),
    }
}

/// A located API error as the draft's problem.
fn problem(e: &ApiError) -> DraftProblem {
    let number = |key: &str| {
        e.details.get(key).and_then(Value::as_u64).and_then(|n| u32::try_from(n).ok()).unwrap_or(0)
    };
    DraftProblem {
        code: e.code.as_str().to_owned(),
        message: e.message.clone(),
        line: number("line"),
        column: number("column"),
        rule: e.details.get("rule").and_then(Value::as_str).map(str::to_owned),
    }
}
