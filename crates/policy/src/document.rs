//! The policy document format (JSON): grants, command rules, path rules, approval and image settings,
//! and test cases. The JSON Schema published for editors is generated from these types.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What a rule (or the policy as a whole) says about an action. Ordered from lenient to strict.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    Allow,
    /// Run without asking, contained: under the strictest reading of the policy (no network but the
    /// hosts rules allow without asking, the programs whose rules prompt or forbid masked, the files the
    /// deny globs name hidden), and with the files it changed reviewed before they are kept. For shell
    /// commands only: what part of a command cannot be read statically gets it (`commands.unknown`),
    /// and a command rule or `commands.default` may give it.
    Contain,
    /// Ask the operator.
    Prompt,
    /// Never, whoever asks.
    Forbidden,
}

impl Decision {
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Allow => "allow",
            Decision::Contain => "contain",
            Decision::Prompt => "prompt",
            Decision::Forbidden => "forbidden",
        }
    }
}

/// A policy file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PolicyDocument {
    /// The JSON Schema of this format (for editors).
    #[serde(rename = "$schema", default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<String>,
    /// Named scopes of exact tool-name allow/deny lists.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub grants: Vec<GrantScopeDocument>,
    /// Rules for shell commands.
    #[serde(default)]
    pub commands: CommandPolicy,
    /// Where tools may read and write.
    #[serde(default)]
    pub paths: PathPolicy,
    #[serde(default)]
    pub approvals: ApprovalSettings,
    #[serde(default)]
    pub images: ImageBounds,
    /// How the kernel confines the commands tools run (Landlock, namespaces, resource limits).
    #[serde(default, skip_serializing_if = "SandboxSettings::is_empty")]
    pub sandbox: SandboxSettings,
    /// Upstream MCP servers whose tools join the registry as `mcp:<id>:<tool>`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub servers: Vec<UpstreamServer>,
    /// Calls with the decision this policy must give them; checked by `portcullis policy test`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tests: Vec<PolicyTestCase>,
}

/// An upstream MCP server: a command spoken to over stdio, or a Streamable HTTP URL.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UpstreamServer {
    /// `[A-Za-z0-9][A-Za-z0-9._-]*`; its tools are `mcp:<id>:<tool>`.
    pub id: String,
    /// stdio: the program to start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// stdio: environment values given to the server (the hub's own environment is not inherited).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub env: std::collections::BTreeMap<String, String>,
    /// stdio: names of the hub's environment variables passed through (for secrets kept out of files).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pass_env: Vec<String>,
    /// stdio: working directory (relative to the policy's project folder).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// Streamable HTTP: the endpoint (`http://` or `https://`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Streamable HTTP: header name → the environment variable holding its value (never the value itself).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub headers_from_env: std::collections::BTreeMap<String, String>,
    /// What calls to this server's tools get (default `allow`: the grants decide).
    #[serde(default = "allow")]
    pub decision: Decision,
    /// Per-tool decisions (upstream tool name → decision), over `decision`.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub tools: std::collections::BTreeMap<String, Decision>,
    /// Reading this server's resources: URI pattern → decision (`*` any run of characters, `?` one).
    /// The strictest pattern that matches decides; a URI no pattern matches gets `decision`. A resource
    /// whose reading is `forbidden` is also left out of what agents list.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub resources: std::collections::BTreeMap<String, Decision>,
    /// Getting this server's prompts: prompt name → decision, over `decision`; a `forbidden` prompt is
    /// left out of what agents list.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub prompts: std::collections::BTreeMap<String, Decision>,
    /// Relaying this server's `sampling/createMessage` to the agent whose call it serves (the agent's
    /// model completes what the server wrote); default `allow`, as the agent's own client also asks.
    #[serde(default = "allow")]
    pub sampling: Decision,
    /// Relaying this server's `elicitation/create` to the agent's user; default `allow`.
    #[serde(default = "allow")]
    pub elicitation: Decision,
    /// Relaying this server's `roots/list` (the agent's workspace folders) to the agent; default `allow`.
    #[serde(default = "allow")]
    pub roots: Decision,
    /// What a tool of this server gets once the server changes its definition (description, schema,
    /// annotations) after it was pinned, until an operator accepts the change: `hold` (default: agents
    /// neither see nor call it) or `prompt` (it stays, and every call to it asks the operator).
    #[serde(default, skip_serializing_if = "ChangedTools::is_hold")]
    pub changed_tools: ChangedTools,
    #[serde(default)]
    pub limits: UpstreamLimits,
}

fn allow() -> Decision {
    Decision::Allow
}

/// Every decision a server entry sets (its calls, tools, resources, prompts and relayed requests).
pub(crate) fn server_decisions(server: &UpstreamServer) -> impl Iterator<Item = Decision> + '_ {
    [server.decision, server.sampling, server.elicitation, server.roots]
        .into_iter()
        .chain(server.tools.values().copied())
        .chain(server.resources.values().copied())
        .chain(server.prompts.values().copied())
}

/// What a tool whose definition changed gets until an operator accepts the change.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ChangedTools {
    /// Held back: agents neither see nor call it.
    #[default]
    Hold,
    /// Served, and every call to it asks the operator.
    Prompt,
}

impl ChangedTools {
    fn is_hold(&self) -> bool {
        *self == ChangedTools::Hold
    }
}

/// Bounds on one upstream server; unset means the default, and every value is capped.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UpstreamLimits {
    /// Seconds a call may take (default 60, at most 600).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_timeout_seconds: Option<u64>,
    /// Bytes of one result (default 10,000,000, at most 32 MiB).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_bytes: Option<u64>,
    /// Tools taken from the server (default 500, at most 5,000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tools: Option<u64>,
    /// Bytes of one tool's input schema (default 256 KiB, at most 1 MiB).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema_bytes: Option<u64>,
    /// Bytes of one tool's description (default 16 KiB, at most 64 KiB).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description_bytes: Option<u64>,
    /// Pages of `tools/list` read (default 20, at most 100).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list_pages: Option<u64>,
}

/// One grant scope (the harness's exact-name filter).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GrantScopeDocument {
    pub name: String,
    /// Exact tool names; empty means no restriction from this scope.
    #[serde(default)]
    pub allow: Vec<String>,
    /// Exact tool names never permitted.
    #[serde(default)]
    pub deny: Vec<String>,
}

/// Command rules and the decision for commands no rule matches.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CommandPolicy {
    #[serde(default)]
    pub rules: Vec<CommandRule>,
    /// For commands no rule matches (`prompt` when no layer sets it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Decision>,
    /// What a command gets for the parts the judge cannot read statically (interpreter code, sourced
    /// files, words computed at run time, constructs it does not know): `contain` (the default: run
    /// contained, its changes reviewed, where this machine's kernel can) or `prompt` (ask the operator).
    /// `prompt` in any layer wins.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unknown: Option<Unknown>,
}

/// What the parts of a command the judge cannot read get.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Unknown {
    /// Run contained (see [`Decision::Contain`]).
    Contain,
    /// Ask the operator.
    Prompt,
}

/// One element of a token-prefix pattern: a literal token or a list of alternatives.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum PatternElement {
    Token(String),
    AnyOf(Vec<String>),
}

impl PatternElement {
    pub fn matches(&self, token: &str) -> bool {
        match self {
            PatternElement::Token(t) => t == token,
            PatternElement::AnyOf(list) => list.iter().any(|t| t == token),
        }
    }
}

/// Whether a command's `tokens` match `pattern`: its first tokens, or (`exact`) all of them.
pub fn pattern_matches<T: AsRef<str>>(pattern: &[PatternElement], exact: bool, tokens: &[T]) -> bool {
    let length_fits = if exact { tokens.len() == pattern.len() } else { tokens.len() >= pattern.len() };
    length_fits && pattern.iter().zip(tokens).all(|(p, t)| p.matches(t.as_ref()))
}

/// A command rule: a command whose first tokens match `pattern` gets `decision`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CommandRule {
    pub id: String,
    /// Token prefix: the program name (a path like `/bin/rm` matches `rm`) then arguments.
    pub pattern: Vec<PatternElement>,
    /// The command must be exactly `pattern`, with no further words (`git push origin main`, and not
    /// `git push origin main --force`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub exact: bool,
    pub decision: Decision,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub justification: Option<String>,
    /// The network commands this rule matches may use inside their sandbox: `true` (any host), or the
    /// hosts they may reach (`["registry.npmjs.org", "*.crates.io", "github.com:443"]`; a host without a
    /// port: 80 and 443). Without such a rule a command runs with no network.
    #[serde(default, skip_serializing_if = "NetworkGrant::is_none")]
    pub network: NetworkGrant,
    /// A host the rule's `network` does not name: refused (the default), or `prompt`: the operator is
    /// asked while the command waits, and "always" adds the host to this rule's list.
    #[serde(default, skip_serializing_if = "OtherHosts::is_refuse")]
    pub other_hosts: OtherHosts,
    /// Commands this rule matches write their roots in place, not on a copy-on-write layer reviewed
    /// when they end: for servers and watchers whose output other commands read while they run. The
    /// walls still hold (roots, hidden and read-only places), but a protected place that did not exist
    /// when it started is not held for the operator. Never for a command that runs contained.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub direct_writes: bool,
    /// Commands this rule must match (checked when the policy loads).
    #[serde(rename = "match", default, skip_serializing_if = "Vec::is_empty")]
    pub examples: Vec<String>,
    /// Commands this rule must not match (checked when the policy loads).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_match: Vec<String>,
}

/// A rule's `network`: `true` or `false`, or the hosts it names.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum NetworkGrant {
    Any(bool),
    Hosts(Vec<String>),
}

impl Default for NetworkGrant {
    fn default() -> Self {
        NetworkGrant::Any(false)
    }
}

impl NetworkGrant {
    pub fn is_none(&self) -> bool {
        *self == NetworkGrant::Any(false)
    }
}

/// What becomes of a connection to a host a rule's `network` list does not name.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OtherHosts {
    /// Refused, with the rule's hosts in the reason.
    #[default]
    Refuse,
    /// The operator is asked (once, this session, always) while the command waits.
    Prompt,
}

impl OtherHosts {
    pub fn is_refuse(&self) -> bool {
        *self == OtherHosts::Refuse
    }
}

/// Whether commands must be confined by the kernel.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SandboxMode {
    /// Confined where the kernel can; elsewhere commands run unconfined and every ledger row says so.
    Preferred,
    /// Where the kernel cannot confine commands, they are forbidden.
    Required,
}

/// The sandbox section: whether it is required, and the resource limits of one command.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SandboxSettings {
    /// `preferred` when no layer sets it; `required` in any layer wins.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<SandboxMode>,
    #[serde(default, skip_serializing_if = "SandboxLimitSettings::is_empty")]
    pub limits: SandboxLimitSettings,
}

impl SandboxSettings {
    pub fn is_empty(&self) -> bool {
        self.mode.is_none() && self.limits.is_empty()
    }
}

/// Resource limits; each unset one keeps its default, and the smallest value of all layers holds.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SandboxLimitSettings {
    /// Data memory of one process, MiB (default 4,096; 16 to 1,048,576).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_mb: Option<u32>,
    /// CPU time of one process, seconds (default 600; 1 to 86,400).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_seconds: Option<u32>,
    /// Processes of one command (default 512; 16 to 65,536). The command's PID namespace is sized a
    /// little above it, and the command is ended when it passes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub processes: Option<u32>,
    /// Largest file one process may write, MiB (default 1,024; 1 to 1,048,576).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_size_mb: Option<u32>,
    /// Open files of one process (default 4,096; 16 to 1,048,576).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_files: Option<u32>,
}

impl SandboxLimitSettings {
    pub fn is_empty(&self) -> bool {
        *self == SandboxLimitSettings::default()
    }
}

/// Access a root grants.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Access {
    Read,
    /// Read and write.
    Write,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PathRoot {
    /// Absolute, `~/...`, or relative to the policy's project folder.
    pub path: String,
    pub access: Access,
}

/// Path rules.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PathPolicy {
    #[serde(default)]
    pub roots: Vec<PathRoot>,
    /// Globs never read or written (a glob without `/` matches any path component; `*`, `?`, `**`).
    #[serde(default)]
    pub deny: Vec<String>,
    /// Whether the built-in deny globs (`.env*`, `.ssh`, `.aws`, `.gnupg`, private keys) apply.
    #[serde(default = "yes")]
    pub default_deny: bool,
    /// What a read outside every root gets (`prompt` or `forbidden`).
    #[serde(default = "prompt")]
    pub read_outside_roots: Decision,
}

impl Default for PathPolicy {
    fn default() -> Self {
        PathPolicy {
            roots: Vec::new(),
            deny: Vec::new(),
            default_deny: true,
            read_outside_roots: Decision::Prompt,
        }
    }
}

fn yes() -> bool {
    true
}

fn prompt() -> Decision {
    Decision::Prompt
}

/// The deny globs every policy has unless `default_deny` is false.
pub const DEFAULT_DENY_GLOBS: &[&str] =
    &[".env*", ".ssh", ".aws", ".gnupg", ".netrc", "id_rsa*", "id_ed25519*", "id_ecdsa*", "*.pem", "*.key"];

/// How approvals behave.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ApprovalSettings {
    /// Seconds an approval waits for the operator (default 120).
    #[serde(default = "approval_timeout")]
    pub timeout_seconds: u64,
    /// What an unanswered prompt becomes; only `forbidden` (deny) is accepted.
    #[serde(default = "forbidden")]
    pub on_timeout: Decision,
}

impl Default for ApprovalSettings {
    fn default() -> Self {
        ApprovalSettings { timeout_seconds: 120, on_timeout: Decision::Forbidden }
    }
}

fn approval_timeout() -> u64 {
    120
}

fn forbidden() -> Decision {
    Decision::Forbidden
}

/// Bounds on images the read tool returns.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ImageBounds {
    /// Largest image file read, bytes (default 10,000,000; hard cap 32 MiB).
    #[serde(default = "image_bytes")]
    pub max_bytes: u64,
    /// Images are downscaled to at most this many pixels on their longer side (default 2,048).
    #[serde(default = "image_dimension")]
    pub max_dimension: u32,
}

impl Default for ImageBounds {
    fn default() -> Self {
        ImageBounds { max_bytes: image_bytes(), max_dimension: image_dimension() }
    }
}

fn image_bytes() -> u64 {
    10_000_000
}

fn image_dimension() -> u32 {
    2048
}

/// A tool call as a test case gives it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TestCall {
    pub name: String,
    #[serde(default)]
    pub arguments: Value,
}

/// A test case: this call, from this folder, must get this decision (`allow`, `prompt`, `forbidden`, or a
/// blocked reason such as `tool_denied`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PolicyTestCase {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub call: TestCall,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    pub expect: String,
}

/// The JSON Schema of policy documents, as committed in `tool-manifests/schemas/policy.schema.json`.
pub fn policy_json_schema() -> Value {
    let schema = schemars::schema_for!(PolicyDocument);
    serde_json::to_value(schema).unwrap_or(Value::Null)
}
