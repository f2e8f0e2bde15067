//! A loaded policy: one or more documents layered (user, then project), checked at load (rule examples
//! must hold). It is evaluated (`evaluate`, the judges) with the strictest decision across every
//! matched rule, every sub-command and every path winning.

use crate::document::{Access, DEFAULT_DENY_GLOBS, Decision};
use crate::paths::resolve;
use crate::rule::{NetworkScope, Rule};
use portcullis_harness::paths::{canonicalize_lenient, is_inside};
use std::path::{Path, PathBuf};

// The types a policy is loaded from and answers with, still named here as well as where they live.
pub use crate::evaluation::{
    CallVerdict, DecidingPlace, EvalContext, Evaluation, MatchedRule, Part, PartKind, PathVerdict,
};
pub use crate::layer::{PolicyError, PolicyLayer};

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
    pub(crate) sandbox: crate::sandbox::rules::SandboxRules,
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
        let mut sandbox = crate::sandbox::rules::SandboxRules::default();
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
        let by_program = crate::rule::rules_by_program(&rules);
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
}
