//! A loaded policy: one or more documents layered (user, then project), checked at load (rule examples
//! must hold), and evaluated: the strictest decision across every matched rule, every sub-command and
//! every path wins.

use crate::document::{Access, DEFAULT_DENY_GLOBS, Decision, PolicyDocument};
use crate::paths::resolve;
use crate::shell::{FileRole, SimpleCommand, analyze};
use portcullis_harness::paths::{canonicalize_lenient, is_inside};
use portcullis_harness::{ActionKind, ExecutionAction};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use thiserror::Error;

pub use crate::evaluation::{DecidingPlace, Evaluation, MatchedRule, Part, PartKind, PathVerdict};

/// Why a policy did not load. Every variant names the file; syntax errors give line and column.
#[derive(Debug, Error)]
pub enum PolicyError {
    #[error("{file}: cannot read: {source}")]
    Io { file: String, source: std::io::Error },
    #[error("{file}:{line}:{column}: {message}")]
    Syntax { file: String, line: usize, column: usize, message: String },
    #[error("{file}:{line}:{column}: rule `{rule}`: {message}")]
    Rule { file: String, line: usize, column: usize, rule: String, message: String },
    #[error("{file}: {message}")]
    Invalid { file: String, message: String },
}

impl PolicyError {
    pub fn code(&self) -> &'static str {
        match self {
            PolicyError::Io { .. } => "policy_unreadable",
            PolicyError::Syntax { .. } => "policy_syntax",
            PolicyError::Rule { .. } => "policy_rule",
            PolicyError::Invalid { .. } => "policy_invalid",
        }
    }
}

/// One document and where it came from.
#[derive(Debug, Clone)]
pub struct PolicyLayer {
    /// Shown in errors and in matched rules (usually the file path).
    pub source: String,
    /// Relative roots resolve against this folder.
    pub project_root: PathBuf,
    pub document: PolicyDocument,
    /// The document text, when loaded from a file (to point errors at lines).
    pub text: Option<String>,
}

impl PolicyLayer {
    /// Parses a document whose relative roots resolve against `project_root`.
    pub fn parse(source: &str, text: &str, project_root: PathBuf) -> Result<Self, PolicyError> {
        let document: PolicyDocument = serde_json::from_str(text).map_err(|e| PolicyError::Syntax {
            file: source.to_owned(),
            line: e.line(),
            column: e.column(),
            message: e.to_string().split(" at line ").next().unwrap_or_default().to_owned(),
        })?;
        Ok(PolicyLayer { source: source.to_owned(), project_root, document, text: Some(text.to_owned()) })
    }

    /// Reads a policy file applied to `project`; its relative roots point where
    /// [`crate::discovery::roots_anchor`] says.
    pub fn read(path: &Path, project: &Path) -> Result<Self, PolicyError> {
        let file = path.display().to_string();
        let text =
            std::fs::read_to_string(path).map_err(|source| PolicyError::Io { file: file.clone(), source })?;
        PolicyLayer::parse(&file, &text, crate::discovery::roots_anchor(path, project))
    }

    /// Line and column (1-based) of the member `"key": value` whose value is the string `value` (the
    /// first such member after the first `"section"` key), else of the first occurrence of the quoted
    /// value; `(0, 0)` when unknown.
    pub(crate) fn locate_member(&self, section: &str, key: &str, value: &str) -> (usize, usize) {
        let Some(text) = &self.text else { return (0, 0) };
        let quoted = serde_json::to_string(value).unwrap_or_default();
        let key = format!("\"{key}\"");
        let start = text.find(&format!("\"{section}\"")).unwrap_or(0);
        let member = text.match_indices(&quoted).map(|(at, _)| at).filter(|&at| at > start).find(|&at| {
            let before = text[..at].trim_end();
            before.strip_suffix(':').is_some_and(|b| b.trim_end().ends_with(&key))
        });
        match member {
            Some(at) => position(text, at),
            None => self.locate(&quoted),
        }
    }

    /// The line (1-based) of every member `"key": "<string>"` after the first `"section"` key, by its
    /// value (the first such member of each value), found in one pass: a policy of a thousand rules
    /// locates its rules in linear time, not a search of the whole text per rule.
    pub(crate) fn member_lines(&self, section: &str, key: &str) -> std::collections::HashMap<String, usize> {
        let mut lines = std::collections::HashMap::new();
        let Some(text) = &self.text else { return lines };
        let key = format!("\"{key}\"");
        let start = text.find(&format!("\"{section}\"")).unwrap_or(0);
        let (mut line, mut counted) = (text[..start].matches('\n').count() + 1, start);
        for (at, _) in text[start..].match_indices(&key).map(|(at, k)| (at + start, k)) {
            let rest = text[at + key.len()..].trim_start();
            let Some(rest) = rest.strip_prefix(':') else { continue };
            let rest = rest.trim_start();
            if !rest.starts_with('"') {
                continue;
            }
            let Some(value) = leading_json_string(rest) else { continue };
            line += text[counted..at].matches('\n').count();
            counted = at;
            lines.entry(value).or_insert(line);
        }
        lines
    }

    /// Line and column (1-based) of the first occurrence of `needle` in the text, if known.
    pub(crate) fn locate(&self, needle: &str) -> (usize, usize) {
        let Some(text) = &self.text else { return (0, 0) };
        let Some(at) = text.find(needle) else { return (0, 0) };
        position(text, at)
    }
}

/// The JSON string literal `text` starts with, decoded.
fn leading_json_string(text: &str) -> Option<String> {
    let mut escaped = false;
    for (i, c) in text.char_indices().skip(1) {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            '"' => return serde_json::from_str(&text[..=i]).ok(),
            _ => {}
        }
    }
    None
}

/// Line and column (1-based) of byte offset `at` of `text`.
fn position(text: &str, at: usize) -> (usize, usize) {
    let before = &text[..at];
    let line = before.matches('\n').count() + 1;
    let column = before.rfind('\n').map_or(at, |n| at - n - 1) + 1;
    (line, column)
}

/// Where an evaluation happens.
#[derive(Debug, Clone)]
pub struct EvalContext {
    pub cwd: PathBuf,
    pub home: Option<PathBuf>,
}

impl EvalContext {
    pub fn new(cwd: impl Into<PathBuf>) -> Self {
        EvalContext { cwd: cwd.into(), home: std::env::var_os("HOME").map(PathBuf::from) }
    }

    /// This context with its cwd canonical, so that every path of an evaluation is resolved from it
    /// without resolving the cwd again; `None` when the cwd cannot be resolved.
    pub(crate) fn canonical(&self) -> Option<EvalContext> {
        let cwd =
            portcullis_harness::paths::canonicalize_lenient_with(&self.cwd, &mut crate::snapshot::look_once)
                .ok()?;
        Some(EvalContext { cwd, home: self.home.clone() })
    }
}

/// The operation of a write that leaves the file executable (the coding `write` tool's `executable:
/// true`, `portcullis_coding::write::WRITE_EXECUTABLE`): at least a prompt, whatever the roots say.
pub const EXECUTABLE_WRITE: &str = "write_executable";

/// The evaluation given when the working folder itself cannot be resolved: nothing relative to it can
/// be proven inside a root.
fn unresolvable_cwd(ctx: &EvalContext) -> Evaluation {
    let mut eval = Evaluation::new();
    eval.raise(
        Decision::Forbidden,
        format!("the working folder {} cannot be resolved", ctx.cwd.display()),
        None,
    );
    eval
}

pub(crate) struct Rule {
    pub(crate) id: String,
    pub(crate) source: String,
    /// The line of `source` that declares it.
    pub(crate) line: usize,
    /// The index of the layer that holds it.
    pub(crate) layer: usize,
    pub(crate) pattern: Vec<crate::document::PatternElement>,
    pub(crate) exact: bool,
    pub(crate) decision: Decision,
    pub(crate) justification: Option<String>,
    /// The network commands it matches may use inside their sandbox.
    pub(crate) network: NetworkScope,
    /// Whether a host its list does not name is a prompt (else refused).
    pub(crate) other_hosts: crate::document::OtherHosts,
    /// Commands it matches write in place (no copy-on-write layer).
    pub(crate) direct_writes: bool,
}

/// A rule's network, read: none, any host, or the hosts it names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum NetworkScope {
    None,
    Any,
    Hosts(Vec<portcullis_harness::HostPattern>),
}

/// The path roots one layer declares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RootSet {
    /// The layer's source (or a note saying where the fallback root came from).
    pub source: String,
    pub roots: Vec<(PathBuf, Access)>,
}

/// A loaded, checked, layered policy. Layering is strictest-wins for every field: each layer judges on
/// its own (its rules, its default, its roots) and the strictest layer's word stands, so a project layer
/// narrows, never widens, what the user layer allows.
pub struct Policy {
    layers: Vec<PolicyLayer>,
    pub(crate) rules: Vec<Rule>,
    /// The indices of `rules` (in order) whose pattern's first element names each program: a command
    /// can only match rules filed under its program (every pattern starts with literal names).
    pub(crate) by_program: std::collections::HashMap<String, Vec<usize>>,
    /// Each layer's decision for commands none of its rules match; `None` = the layer abstains (only
    /// layers after the first may: the first, unset, says `prompt`).
    pub(crate) defaults: Vec<Option<Decision>>,
    /// The roots of every layer that declares some (a path must be inside one root of each set); when no
    /// layer does, the first layer's project folder.
    pub(crate) root_sets: Vec<RootSet>,
    pub(crate) deny: Vec<String>,
    pub(crate) read_outside: Decision,
    /// What the parts of a command the judge cannot read get: [`Decision::Contain`], or
    /// [`Decision::Prompt`] when a layer says `"unknown": "prompt"`.
    pub(crate) unknown: Decision,
    /// Policy files, executed content and the hub's secrets (see [`crate::protected`]).
    pub(crate) protected: crate::protected::ProtectedPaths,
    servers: Vec<ServerEntry>,
    /// The sandbox section of every layer, merged (strictest wins).
    pub(crate) sandbox: crate::sandbox::SandboxRules,
    /// The grants of every layer (built once; runs share them).
    grants: std::sync::Arc<portcullis_harness::Grants>,
    /// A content hash of the layers (see [`crate::version`]).
    version: std::sync::Arc<str>,
}

/// An upstream server as the policy declares it, with the file it came from and its resolved cwd.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerEntry {
    pub server: crate::document::UpstreamServer,
    pub source: String,
    /// The line of `source` that declares the server.
    pub line: usize,
    /// The server's working directory (its `cwd`, resolved against the policy's project folder).
    pub cwd: PathBuf,
}

/// Whether `id` is a valid upstream server id: `[A-Za-z0-9][A-Za-z0-9._-]*`, at most 128 bytes.
pub fn valid_server_id(id: &str) -> bool {
    id.len() <= 128
        && id.chars().next().is_some_and(|c| c.is_ascii_alphanumeric())
        && id.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

/// The tokens a rule pattern is matched against (for other modules of this crate).
pub(crate) fn tokens_of(command: &SimpleCommand) -> Vec<&str> {
    tokens(command)
}

/// The tokens a rule pattern is matched against: the program name, then the arguments.
pub(crate) fn tokens(command: &SimpleCommand) -> Vec<&str> {
    let mut t = vec![command.program.as_str()];
    t.extend(command.argv.iter().skip(1).map(String::as_str));
    t
}

impl Policy {
    /// Loads files in order (user first, then project), applied to `project`. Any error refuses the
    /// whole policy.
    pub fn load(files: &[PathBuf], project: &Path) -> Result<Policy, PolicyError> {
        let layers = files.iter().map(|f| PolicyLayer::read(f, project)).collect::<Result<Vec<_>, _>>()?;
        Policy::from_layers(layers)
    }

    pub fn from_layers(layers: Vec<PolicyLayer>) -> Result<Policy, PolicyError> {
        let policy = Policy::from_layers_unchecked(layers)?;
        policy.check_examples()?;
        Ok(policy)
    }

    /// Loads layers without checking rule examples, so `portcullis policy test` can report every
    /// failing example (see [`Policy::example_outcomes`]) instead of the first.
    pub fn from_layers_unchecked(layers: Vec<PolicyLayer>) -> Result<Policy, PolicyError> {
        let mut rules = Vec::new();
        let mut defaults: Vec<Option<Decision>> = Vec::new();
        let mut root_sets: Vec<RootSet> = Vec::new();
        let mut deny: Vec<String> = Vec::new();
        let mut read_outside = Decision::Prompt;
        let mut unknown = crate::document::Unknown::Contain;
        // The built-in deny globs hold unless every layer turns them off (strictest wins).
        let mut default_deny = false;
        let mut servers: Vec<ServerEntry> = Vec::new();
        let mut protected = crate::protected::ProtectedPaths::for_user();
        let mut sandbox = crate::sandbox::SandboxRules::default();
        for (index, layer) in layers.iter().enumerate() {
            let doc = &layer.document;
            sandbox
                .merge(&doc.sandbox)
                .map_err(|message| PolicyError::Invalid { file: layer.source.clone(), message })?;
            unknown = unknown.max(doc.commands.unknown.unwrap_or(crate::document::Unknown::Contain));
            for server in &doc.servers {
                // Positions are searched for only when something is wrong (loading stays linear).
                let fail = |message: String| {
                    let (line, column) = layer.locate(&format!("\"{}\"", server.id));
                    PolicyError::Syntax { file: layer.source.clone(), line, column, message }
                };
                if crate::document::server_decisions(server).any(|d| d == Decision::Contain) {
                    return Err(fail(format!(
                        "server {:?}: \"contain\" is for shell commands only (an MCP call has no walls to run in)",
                        server.id
                    )));
                }
                if !valid_server_id(&server.id) {
                    return Err(fail(format!(
                        "server id {:?}: expected [A-Za-z0-9][A-Za-z0-9._-]* (at most 128 bytes)",
                        server.id
                    )));
                }
                if let Some(other) = servers.iter().find(|s| s.server.id == server.id) {
                    return Err(fail(format!(
                        "server id {:?} is already declared in {}",
                        server.id, other.source
                    )));
                }
                match (&server.command, &server.url) {
                    (Some(_), None) => {}
                    (None, Some(url)) if url.starts_with("http://") || url.starts_with("https://") => {}
                    (None, Some(url)) => {
                        return Err(fail(format!(
                            "server {:?}: url {url:?} must be http:// or https://",
                            server.id
                        )));
                    }
                    _ => {
                        return Err(fail(format!(
                            "server {:?}: expected exactly one of \"command\" (stdio) or \"url\" (Streamable HTTP)",
                            server.id
                        )));
                    }
                }
                if server.url.is_some()
                    && (!server.args.is_empty() || !server.env.is_empty() || server.cwd.is_some())
                {
                    return Err(fail(format!(
                        "server {:?}: args, env and cwd are for stdio servers",
                        server.id
                    )));
                }
                let home = std::env::var_os("HOME").map(PathBuf::from);
                let cwd = match &server.cwd {
                    Some(c) => resolve(c, &layer.project_root, home.as_deref()).map_err(|e| {
                        fail(format!("server {:?}: cwd {c:?} cannot be resolved: {e}", server.id))
                    })?,
                    None => layer.project_root.clone(),
                };
                servers.push(ServerEntry {
                    server: server.clone(),
                    source: layer.source.clone(),
                    line: layer.locate_member("servers", "id", &server.id).0,
                    cwd,
                });
            }
            let mut seen = std::collections::HashSet::new();
            let rule_lines = layer.member_lines("commands", "id");
            for rule in &doc.commands.rules {
                let fail = |message: String| {
                    let (line, column) = layer.locate(&format!("\"{}\"", rule.id));
                    PolicyError::Rule {
                        file: layer.source.clone(),
                        line,
                        column,
                        rule: rule.id.clone(),
                        message,
                    }
                };
                if rule.id.trim().is_empty() {
                    return Err(PolicyError::Invalid {
                        file: layer.source.clone(),
                        message: "a rule has an empty id".into(),
                    });
                }
                if !seen.insert(rule.id.clone()) {
                    return Err(fail("duplicate rule id in this file".into()));
                }
                if rule.pattern.is_empty() {
                    return Err(fail("the pattern is empty; expected at least the program name".into()));
                }
                rules.push(Rule {
                    id: rule.id.clone(),
                    source: layer.source.clone(),
                    line: match rule_lines.get(&rule.id) {
                        Some(line) => *line,
                        None => layer.locate_member("commands", "id", &rule.id).0,
                    },
                    layer: index,
                    pattern: rule.pattern.clone(),
                    exact: rule.exact,
                    decision: rule.decision,
                    justification: rule.justification.clone(),
                    network: match &rule.network {
                        crate::document::NetworkGrant::Any(false) => NetworkScope::None,
                        crate::document::NetworkGrant::Any(true) => NetworkScope::Any,
                        crate::document::NetworkGrant::Hosts(hosts) => NetworkScope::Hosts(
                            (hosts.iter())
                                .map(|h| portcullis_harness::HostPattern::parse(h))
                                .collect::<Result<_, _>>()
                                .map_err(|why| fail(format!("`network`: {why}")))?,
                        ),
                    },
                    other_hosts: rule.other_hosts,
                    direct_writes: rule.direct_writes,
                });
            }
            defaults.push(match doc.commands.default {
                Some(d) => Some(d),
                None if index == 0 => Some(Decision::Prompt),
                None => None,
            });
            let source_file = Path::new(&layer.source);
            if source_file.is_absolute() {
                protected.add(source_file, crate::protected::ProtectedKind::Policy, "a policy file in force");
            }
            protected.add(
                layer.project_root.join(".portcullis"),
                crate::protected::ProtectedKind::Policy,
                "the project's .portcullis folder (policy and tool manifests)",
            );
            let mut roots = Vec::new();
            for root in &doc.paths.roots {
                let home = std::env::var_os("HOME").map(PathBuf::from);
                let path = resolve(&root.path, &layer.project_root, home.as_deref()).map_err(|e| {
                    PolicyError::Invalid {
                        file: layer.source.clone(),
                        message: format!("path root {:?} cannot be resolved: {e}", root.path),
                    }
                })?;
                roots.push((path, root.access));
            }
            if !roots.is_empty() {
                root_sets.push(RootSet { source: layer.source.clone(), roots });
            }
            deny.extend(doc.paths.deny.iter().cloned());
            if doc.paths.read_outside_roots == Decision::Contain {
                return Err(PolicyError::Invalid {
                    file: layer.source.clone(),
                    message: "paths.read_outside_roots must be \"prompt\" or \"forbidden\"".into(),
                });
            }
            read_outside = read_outside.max(doc.paths.read_outside_roots);
            default_deny |= doc.paths.default_deny;
            if doc.approvals.on_timeout != Decision::Forbidden {
                return Err(PolicyError::Invalid {
                    file: layer.source.clone(),
                    message: "approvals.on_timeout must be \"forbidden\": an unanswered prompt is denied"
                        .into(),
                });
            }
        }
        if default_deny {
            deny.extend(DEFAULT_DENY_GLOBS.iter().map(|g| (*g).to_owned()));
        }
        if root_sets.is_empty()
            && let Some(first) = layers.first()
        {
            let root = canonicalize_lenient(&first.project_root).map_err(|e| PolicyError::Invalid {
                file: first.source.clone(),
                message: format!("the project folder cannot be resolved: {e}"),
            })?;
            root_sets.push(RootSet {
                source: format!("{} (no roots declared: its project folder)", first.source),
                roots: vec![(root, Access::Write)],
            });
        }
        let by_program = crate::judge::rules_by_program(&rules);
        let policy = Policy {
            rules,
            by_program,
            defaults,
            root_sets,
            protected,
            deny,
            read_outside: if read_outside == Decision::Allow { Decision::Prompt } else { read_outside },
            unknown: match unknown {
                crate::document::Unknown::Contain => Decision::Contain,
                crate::document::Unknown::Prompt => Decision::Prompt,
            },
            servers,
            sandbox,
            grants: std::sync::Arc::new(portcullis_harness::Grants::new(
                layers
                    .iter()
                    .flat_map(|l| l.document.grants.iter())
                    .map(|g| {
                        portcullis_harness::GrantScope::new(g.name.clone())
                            .allow(g.allow.clone())
                            .deny(g.deny.clone())
                    })
                    .collect(),
            )),
            version: crate::version::of_layers(&layers),
            layers,
        };
        Ok(policy)
    }

    pub fn layers(&self) -> &[PolicyLayer] {
        &self.layers
    }

    /// The policy's version: a content hash of its layers, recorded with every call it judges.
    pub fn version(&self) -> &std::sync::Arc<str> {
        &self.version
    }

    /// The path roots of every layer that declares some (or the fallback project folder).
    pub fn root_sets(&self) -> &[RootSet] {
        &self.root_sets
    }

    /// Whether `path` (canonical) is inside a root giving `need` in every root set.
    pub fn inside_roots(&self, path: &Path, need: Access) -> bool {
        self.root_sets.iter().all(|set| set.roots.iter().any(|(root, a)| *a >= need && is_inside(path, root)))
    }

    /// The places tools must not touch on their own.
    pub fn protected(&self) -> &crate::protected::ProtectedPaths {
        &self.protected
    }

    /// This policy with more protected places (the hub's ledger, a manifests folder it was given).
    pub fn with_protected(mut self, more: impl FnOnce(&mut crate::protected::ProtectedPaths)) -> Self {
        more(&mut self.protected);
        self
    }

    /// The upstream MCP servers every layer declares.
    pub fn servers(&self) -> &[ServerEntry] {
        &self.servers
    }

    /// The decision for commands no rule matches: the strictest default a layer sets.
    pub fn default_decision(&self) -> Decision {
        self.defaults.iter().flatten().copied().max().unwrap_or(Decision::Prompt)
    }

    /// The grants of every layer, as the harness filters with them.
    pub fn grants(&self) -> &std::sync::Arc<portcullis_harness::Grants> {
        &self.grants
    }

    /// Image bounds: the strictest each layer sets.
    pub fn image_bounds(&self) -> crate::document::ImageBounds {
        let mut bounds = crate::document::ImageBounds::default();
        for layer in &self.layers {
            bounds.max_bytes = bounds.max_bytes.min(layer.document.images.max_bytes);
            bounds.max_dimension = bounds.max_dimension.min(layer.document.images.max_dimension);
        }
        bounds
    }

    /// Approval timeout: the shortest any layer sets.
    pub fn approval_timeout_seconds(&self) -> u64 {
        self.layers.iter().map(|l| l.document.approvals.timeout_seconds).min().unwrap_or(120)
    }

    /// What a part the judge cannot read gets: the policy's `unknown` ([`Decision::Contain`] unless a
    /// layer says prompt), but a prompt for what no wall of this machine can hold: a command that runs
    /// on another machine, and one that acts as the operator.
    pub(crate) fn unreadable(&self, kind: crate::shell::OpaqueKind) -> Decision {
        use crate::shell::OpaqueKind;
        match kind {
            OpaqueKind::RemoteCommand | OpaqueKind::OperatorCommand => Decision::Prompt,
            _ => self.unknown,
        }
    }

    /// Evaluates a shell command run from `ctx.cwd`.
    pub fn evaluate_command(&self, command: &str, ctx: &EvalContext) -> Evaluation {
        self.evaluate_analyzed(&Analyzed::of(command), ctx)
    }

    /// Evaluates a shell command already analyzed (several policies judging one command share its
    /// analysis: a replay judges each call by the policy in force and by a draft).
    pub fn evaluate_analyzed(&self, analyzed: &Analyzed, ctx: &EvalContext) -> Evaluation {
        crate::snapshot::within(|| self.judge_analyzed(&analyzed.command, &analyzed.analysis, ctx))
    }

    fn judge_analyzed(
        &self,
        command: &str,
        analysis: &crate::shell::ShellAnalysis,
        ctx: &EvalContext,
    ) -> Evaluation {
        let Some(ctx) = &ctx.canonical() else { return unresolvable_cwd(ctx) };
        let mut eval = Evaluation::new();
        if analysis.parse_errors {
            eval.judge_part(PartKind::Unseen, shorten(command), true, |part| {
                part.raise(
                    self.unknown,
                    "the command does not parse cleanly; it cannot be proven harmless".into(),
                    None,
                );
            });
        }
        for opaque in &analysis.opaque {
            eval.judge_part(PartKind::Unseen, shorten(&opaque.text), true, |part| {
                part.raise(
                    self.unreadable(opaque.kind),
                    format!("{:?} cannot be judged statically: {}", opaque.kind, shorten(&opaque.text)),
                    None,
                );
            });
        }
        if analysis.commands.is_empty() && analysis.opaque.is_empty() && !analysis.parse_errors {
            if analysis.expands {
                eval.judge_part(PartKind::Unseen, shorten(command), true, |part| {
                    part.raise(
                        self.unknown,
                        "bash expands values here at run time; no command is seen, but only a script without any expansion is known to run nothing".into(),
                        None,
                    );
                });
            } else {
                eval.reasons.push("no command to run".into());
            }
        }
        // `cd` moves where relative paths land: each is judged from every folder the script may be in.
        let folders = crate::judge::working_folders(analysis, ctx, self.unknown, &mut eval);
        let mut budget = crate::judge_files::FileBudget::new();
        for command in &analysis.commands {
            eval.commands.push(command.argv.clone());
            eval.judge_part(PartKind::Command, shorten(&command.argv.join(" ")), command.dynamic, |part| {
                self.judge_command(command, part);
                for here in &folders {
                    self.judge_operands(command, here, part);
                    self.judge_listings(command, here, part, &mut budget);
                    for file in &command.files {
                        self.judge_file(file, here, part, &mut budget);
                    }
                }
            });
        }
        for redirection in &analysis.redirections {
            let text = shorten(&format!("{} {}", redirection.op, redirection.target));
            eval.judge_part(PartKind::Redirection, text, redirection.dynamic, |part| {
                if redirection.dynamic {
                    let access = if redirection.write { Access::Write } else { Access::Read };
                    part.judge_access(&redirection.target, access, false, &redirection.op, |one| {
                        one.raise(
                            self.unknown,
                            format!("redirection target {:?} is computed at run time", redirection.target),
                            None,
                        );
                    });
                    return;
                }
                // Bash expands braces and patterns in the target too (more than one word is an error):
                // each expansion is judged, as a file a program names is.
                let file = crate::shell::FileOperand {
                    path: redirection.target.clone(),
                    role: if redirection.write { FileRole::Write } else { FileRole::Read },
                    recursive: false,
                    dynamic: false,
                    follows_links: false,
                    via: redirection.op.clone(),
                };
                for here in &folders {
                    self.judge_file(&file, here, part, &mut budget);
                }
            });
        }
        eval
    }

    /// Evaluates reading or writing a path (the read/write/edit tools).
    pub fn evaluate_path(&self, raw: &str, access: Access, ctx: &EvalContext) -> Evaluation {
        crate::snapshot::within(|| {
            let Some(ctx) = &ctx.canonical() else { return unresolvable_cwd(ctx) };
            let mut eval = Evaluation::new();
            eval.judge_access(raw, access, false, "path", |one| self.judge_path(raw, access, ctx, one));
            eval
        })
    }

    /// Evaluates what a tool described it would do (the harness's execution-policy seam): `execute` →
    /// its command from its cwd, `read`/`write` → each canonical path, no side effect → allow. Other
    /// kinds (network, MCP, other) have nothing to judge here; their grants let them through.
    pub fn evaluate_action(&self, action: &ExecutionAction, ctx: &EvalContext) -> Evaluation {
        self.evaluate_action_analyzed(action, ctx, None)
    }

    /// [`Policy::evaluate_action`] with the analysis of its command when the caller has it (one not of
    /// this action's command is not used).
    pub fn evaluate_action_analyzed(
        &self,
        action: &ExecutionAction,
        ctx: &EvalContext,
        analyzed: Option<&Analyzed>,
    ) -> Evaluation {
        crate::snapshot::within(|| self.judge_action(action, ctx, analyzed))
    }

    fn judge_action(
        &self,
        action: &ExecutionAction,
        ctx: &EvalContext,
        analyzed: Option<&Analyzed>,
    ) -> Evaluation {
        match action.kind {
            ActionKind::Execute => {
                let Some(command) = action.command.as_deref() else {
                    let mut eval = Evaluation::new();
                    eval.raise(
                        Decision::Forbidden,
                        "an execute action without a command cannot be judged".into(),
                        None,
                    );
                    return eval;
                };
                let fresh;
                let analyzed = match analyzed.filter(|a| a.command == command) {
                    Some(analyzed) => analyzed,
                    None => {
                        fresh = Analyzed::of(command);
                        &fresh
                    }
                };
                match &action.cwd {
                    Some(cwd) => self.evaluate_analyzed(
                        analyzed,
                        &EvalContext { cwd: cwd.clone(), home: ctx.home.clone() },
                    ),
                    None => self.evaluate_analyzed(analyzed, ctx),
                }
            }
            ActionKind::Read | ActionKind::Write => {
                let Some(ctx) = &ctx.canonical() else { return unresolvable_cwd(ctx) };
                let mut eval = Evaluation::new();
                let access = if action.kind == ActionKind::Write { Access::Write } else { Access::Read };
                if action.paths.is_empty() {
                    eval.raise(
                        Decision::Prompt,
                        format!(
                            "a {} action names no path; it cannot be proven inside a root",
                            action.operation
                        ),
                        None,
                    );
                }
                for path in &action.paths {
                    let raw = path.to_string_lossy();
                    eval.judge_access(&raw, access, false, &action.operation, |one| {
                        self.judge_path(&raw, access, ctx, one);
                    });
                }
                if action.operation == EXECUTABLE_WRITE {
                    eval.raise(
                        Decision::Prompt,
                        "the file is written executable: what it holds can then be run".into(),
                        None,
                    );
                }
                eval
            }
            ActionKind::None => {
                let mut eval = Evaluation::new();
                eval.reasons.push("no side effect".into());
                eval
            }
            ActionKind::Network | ActionKind::Mcp | ActionKind::Other => {
                let mut eval = Evaluation::new();
                eval.reasons.push(format!(
                    "a {} action has no command or path to judge; its grant allows it",
                    action.operation
                ));
                eval
            }
        }
    }
}

/// A shell command with its analysis, made once and judged by any number of policies.
#[derive(Debug, Clone)]
pub struct Analyzed {
    command: String,
    analysis: crate::shell::ShellAnalysis,
}

impl Analyzed {
    pub fn of(command: &str) -> Self {
        Analyzed { command: command.to_owned(), analysis: analyze(command) }
    }
}

/// A tool call's verdict: blocked before any policy rule (grants, missing arguments), or evaluated.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum CallVerdict {
    Blocked { reason: String, detail: String },
    Evaluated(Evaluation),
}

/// Agent text cut to 160 characters for a reason or a part. Its control and invisible characters are
/// kept as they are: every place that shows it escapes them the one way (`untrusted::visible`, the
/// window's `visible()`), so a command reads the same in its parts, its reasons and its command line.
pub(crate) fn shorten(text: &str) -> String {
    cut(text, 160)
}

/// `text` cut to `max` characters, with `…` when cut; nothing else changed (see [`shorten`]).
pub(crate) fn cut(text: &str, max: usize) -> String {
    let kept: String = text.chars().take(max).collect();
    if text.chars().count() > max { format!("{kept}…") } else { kept }
}
