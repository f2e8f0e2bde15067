//! Command-line arguments (clap derive): the `ledger` subcommands, their filters, and how the filter
//! options become the operator API's queries.

use crate::error::CliError;
use clap::{Args, Parser, Subcommand};
use portcullis_api::call_query::{CallQuery, TimeRange};
use portcullis_api::ledger::CallFilter;
use portcullis_api::types::Timestamp;
use portcullis_api::{ApiError, ErrorCode};
use std::path::PathBuf;

#[derive(Debug, Parser)]
#[command(name = "portcullis", version, about = "Portcullis: a gate for AI agents' tool calls.")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Read, search, export, check and migrate a ledger file.
    Ledger {
        #[command(subcommand)]
        command: LedgerCommand,
    },
    /// Check, test, lint and replay tool policies.
    Policy {
        #[command(subcommand)]
        command: PolicyCommand,
    },
    /// Run one tool call (shell, read, write, edit) through the whole pipeline: grants, schema, policy,
    /// approval on this terminal, ledger.
    Call(CallArgs),
    /// Run the hub: the MCP gateway for agents on 127.0.0.1 (Streamable HTTP, bearer token) and the
    /// operator API, with policy hot reload, until SIGINT/SIGTERM.
    Serve(ServeArgs),
    /// An MCP server on stdin/stdout for clients that only spawn stdio servers: relays to the running
    /// hub, or runs an embedded headless hub when none runs (and says so on stderr).
    Mcp(McpArgs),
    /// Answer an agent's hook (reads the hook input on stdin, prints the answer on stdout).
    Hook {
        #[command(subcommand)]
        agent: HookAgent,
    },
    /// Run a Claude Code `Bash` command the hook allowed, in the running hub's sandbox: redeems the
    /// one-time ticket the hook put in its place, prints the command's output as it comes and exits
    /// with its status (the hook writes this command; people do not).
    Run(RunArgs),
    /// The kernel sandbox commands run in.
    Sandbox {
        #[command(subcommand)]
        command: SandboxCommand,
    },
    /// Call any command of the operator's command table on the hub this user runs (what the desktop
    /// app and the browser call), with the operator's token: its answer as JSON, or a stream's updates
    /// as JSON lines until it ends (Ctrl-C stops it). `--list` lists the commands.
    Api(ApiArgs),
    /// The operator's own business with the running hub.
    Operator {
        #[command(subcommand)]
        command: OperatorCommand,
    },
    /// Hook an agent up to Portcullis: merges its entries into the agent's own files (keeping every
    /// other key), shows each file's diff first, keeps a backup, and `--undo` puts the backups back.
    Setup(SetupArgs),
    /// Put back what a confined command's changes replaced when they were committed (byte for byte,
    /// from the record the hub keeps beside its ledger): shows what it would do, and does it with
    /// `--yes`. Refused, naming the paths, when any of them changed since.
    Undo(UndoArgs),
    /// The changes confined commands made in this project that were held for you (executed config, a
    /// repository look-alike, a file changed meanwhile): list them, keep them or discard them.
    Held(HeldArgs),
    /// Check a set-up end to end (binary on PATH, hub running, gateway answering with the token, each
    /// agent file's entries), one line per check with the fix; exit 1 when something is missing.
    Doctor(DoctorArgs),
}

/// The agents `setup` and `doctor` know.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum AgentName {
    Claude,
    Codex,
}

#[derive(Debug, Args)]
pub struct SetupArgs {
    pub agent: AgentName,
    /// The project's files (in the current folder): `.mcp.json` and `.claude/settings.json` for Claude
    /// Code (no token: the MCP server is the stdio relay), `.codex/config.toml` for Codex.
    #[arg(long, conflicts_with = "user")]
    pub project: bool,
    /// This user's files (the default): `~/.claude.json` and `~/.claude/settings.json`, or
    /// `~/.codex/config.toml`.
    #[arg(long)]
    pub user: bool,
    /// Write without asking (needed when stdin is not a terminal).
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// Put back the files as they were before `setup` (their backups), removing the ones it made.
    #[arg(long)]
    pub undo: bool,
    /// Show the diffs only; write nothing.
    #[arg(long)]
    pub dry_run: bool,
}

#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Check this agent's files only (default: both agents).
    pub agent: Option<AgentName>,
}

#[derive(Debug, Subcommand)]
pub enum OperatorCommand {
    /// Print a one-time link that logs an operator in to the hub's browser console (works once, for
    /// ten minutes; answers given there are recorded as `NAME (browser)`).
    Link(LinkArgs),
    /// Make a token for a named agent (its own identity: its idempotency keys and their results are
    /// its alone) in the config folder's `agents/`; the hub admits it from its next start. Prints the
    /// token's file.
    AddAgent(AddAgentArgs),
}

#[derive(Debug, Args)]
pub struct AddAgentArgs {
    /// The agent's name: 1 to 64 of a-z 0-9 . _ - (not `default`, the gateway token's holder).
    pub name: String,
}

#[derive(Debug, Args)]
pub struct LinkArgs {
    /// Who logs in with it (default: this user's name).
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// Print the link's JSON (url, operator, expires_at_ms) instead of the URL alone.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ApiArgs {
    /// List the commands and their arguments.
    #[arg(long, conflicts_with = "command")]
    pub list: bool,
    /// The command (`pending_approvals`, `answer_approval`, `follow_events`...).
    #[arg(value_name = "COMMAND", required_unless_present = "list")]
    pub command: Option<String>,
    /// Its arguments as one JSON object (camelCase keys, as `--list` shows them).
    #[arg(value_name = "ARGUMENTS", default_value = "{}")]
    pub arguments: String,
}

#[derive(Debug, Subcommand)]
pub enum SandboxCommand {
    /// Print the sandbox a shell command would run in: what it may read and write, what is hidden or
    /// kept read-only, whether it has network, its resource limits, and whether this machine can
    /// enforce it.
    Explain(SandboxExplainArgs),
}

#[derive(Debug, Args)]
pub struct SandboxExplainArgs {
    #[command(flatten)]
    pub files: PolicyFiles,
    /// Print the profile as JSON.
    #[arg(long)]
    pub json: bool,
    /// The shell command: one word is a whole script; several words are one command's argv.
    #[arg(last = true, value_name = "COMMAND", required = true)]
    pub command: Vec<String>,
}

#[derive(Debug, Subcommand)]
pub enum HookAgent {
    /// Claude Code's PreToolUse hook: allow / deny / ask, from the running hub (whose operator may be
    /// asked) or, when none runs, from the policies themselves. Any failure answers deny.
    Claude(HookArgs),
}

#[derive(Debug, Args)]
pub struct HookArgs {
    /// Seconds to wait for an operator's answer (keep it under the hook's timeout in settings.json).
    #[arg(long, value_name = "SECONDS", default_value_t = 50)]
    pub wait: u64,
    /// Without a running hub: policy files (default: the user's and the project's).
    #[arg(long = "policy", value_name = "FILE")]
    pub policies: Vec<PathBuf>,
    /// Without a running hub: the ledger the decision is recorded in (default: the user's).
    #[arg(long, value_name = "FILE")]
    pub db: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct HeldArgs {
    /// `list` (the default), `keep` or `discard`.
    #[arg(value_parser = ["list", "keep", "discard"], default_value = "list")]
    pub action: String,
    /// The call whose held changes to keep or discard.
    pub call: Option<String>,
    /// Its session, when calls of several sessions have that id.
    #[arg(long, value_name = "SESSION")]
    pub session: Option<String>,
    /// The project (default: the current folder).
    #[arg(long, value_name = "DIR")]
    pub project: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct UndoArgs {
    /// The call's id (`portcullis ledger query` lists them).
    pub call: String,
    /// Its session, when calls of several sessions have that id.
    #[arg(long, value_name = "SESSION")]
    pub session: Option<String>,
    /// The ledger whose hub kept the record (default: the hub's).
    #[arg(long, value_name = "FILE")]
    pub db: Option<PathBuf>,
    /// Carry it out (else only show it).
    #[arg(long)]
    pub yes: bool,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The one-time ticket the hook's answer holds.
    #[arg(long, value_name = "TICKET")]
    pub ticket: String,
    /// Where to write the folder the command ended in (Claude Code's shell follows it).
    #[arg(long, value_name = "FILE")]
    pub folder_to: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct McpArgs {
    /// Embedded hub only: the project folder (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub project: Option<PathBuf>,
    /// Embedded hub only: policy files (default: the user's and the project's).
    #[arg(long = "policy", value_name = "FILE")]
    pub policies: Vec<PathBuf>,
    /// Embedded hub only: the ledger file (default: ~/.local/share/portcullis/ledger.db).
    #[arg(long, value_name = "FILE")]
    pub db: Option<PathBuf>,
    /// Run the embedded hub even when a hub is running.
    #[arg(long)]
    pub embedded: bool,
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// The project folder: the coding tools' root and where `.portcullis/policy.json` is found
    /// (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub project: Option<PathBuf>,
    /// Policy files (repeatable; default: the user's and the project's, else the built-in default).
    #[arg(long = "policy", value_name = "FILE")]
    pub policies: Vec<PathBuf>,
    /// The ledger file (default: ~/.local/share/portcullis/ledger.db).
    #[arg(long, value_name = "FILE")]
    pub db: Option<PathBuf>,
    /// The port on 127.0.0.1 (0 picks a free one).
    #[arg(long, default_value_t = 7391)]
    pub port: u16,
    /// Listen on another address (needs --allow-remote unless it is loopback).
    #[arg(long, value_name = "IP")]
    pub listen: Option<std::net::IpAddr>,
    /// Allow a non-loopback --listen address.
    #[arg(long)]
    pub allow_remote: bool,
    /// A browser Origin allowed to call the gateway (repeatable; none by default).
    #[arg(long = "allow-origin", value_name = "ORIGIN")]
    pub allow_origins: Vec<String>,
    /// A Host name (any port) or host:port the gateway answers to besides the loopback names and the
    /// listen address (repeatable; only with --allow-remote). Every other Host is refused (DNS
    /// rebinding).
    #[arg(long = "allow-host", value_name = "HOST")]
    pub allow_hosts: Vec<String>,
    /// Seconds a connection gets to send a request's headers (idle keep-alive connections included)
    /// before it is closed; a request's body gets as long.
    #[arg(long, value_name = "SECONDS", default_value_t = 20, value_parser = clap::value_parser!(u64).range(1..))]
    pub header_read_timeout: u64,
    /// Open connections at most (further ones wait until one closes); lowered to stay under the
    /// open-file limit.
    #[arg(long, value_name = "N", default_value_t = 256, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_connections: u64,
    /// MCP sessions the agents' token may hold open at once; an `initialize` beyond is refused with a
    /// JSON-RPC error.
    #[arg(long, value_name = "N", default_value_t = 64, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_sessions: u64,
    /// Seconds an MCP session may go without a request before it is closed.
    #[arg(long, value_name = "SECONDS", default_value_t = 600, value_parser = clap::value_parser!(u64).range(1..))]
    pub session_idle: u64,
    /// Who answers prompts here: the terminal (default when there is one) or nobody (answers come
    /// through the API; unanswered prompts time out and are denied).
    #[arg(long, value_enum)]
    pub approver: Option<ServeApprover>,
    /// Seconds calls in flight get to finish at shutdown.
    #[arg(long, value_name = "SECONDS", default_value_t = 10)]
    pub shutdown_grace: u64,
    /// A folder of tool manifests (repeatable; default: ~/.config/portcullis/tools and
    /// <project>/.portcullis/tools).
    #[arg(long = "manifests", value_name = "DIR")]
    pub manifest_dirs: Vec<PathBuf>,
    /// Above this many tools, agents see only `search_tools` and find the others by keywords.
    #[arg(long, value_name = "N", default_value_t = 64)]
    pub search_tools_above: usize,
    /// Guard one upstream server: agents see only the tools, resources and prompts of the server with
    /// this id (declared in a policy), under the server's own names; the built-in tools are not served.
    #[arg(long, value_name = "SERVER_ID")]
    pub single_upstream: Option<String>,
    /// A hosts file for the egress proxy of commands whose rules name hosts (`127.0.0.2 registry.test`
    /// per line): those names resolve there, and no other name resolves. For a private mirror, or tests
    /// whose servers listen on loopback (default: the system's resolver, which never yields this
    /// machine's or a link-local address).
    #[arg(long, value_name = "FILE")]
    pub egress_hosts: Option<PathBuf>,
    /// Also copy every record the ledger commits to FILE, one JSON line each (fed from the ledger's
    /// tail, never on a call's path; it catches up after a restart). Repeatable.
    #[arg(long, value_name = "FILE")]
    pub copy_records_to: Vec<PathBuf>,
    /// Ship every ledger record, approval, session, refusal, tool-definition change and effect mark to the team
    /// ledger at this PostgreSQL URL (`postgres://user@host:port/db?sslmode=verify-full&sslrootcert=CA`),
    /// off the call's path, at least once, resuming where it stopped. No password in the URL: it comes
    /// from --ship-password-file or $PGPASSWORD. Default: the user's team-ledger.json, if any.
    #[arg(long, value_name = "URL")]
    pub ship: Option<String>,
    /// An owner-only file whose first line is the team ledger's password.
    #[arg(long, value_name = "FILE", requires = "ship")]
    pub ship_password_file: Option<PathBuf>,
    /// Export every call as OpenTelemetry spans (and approvals and refusals as log records) to this
    /// OTLP/HTTP collector, e.g. http://127.0.0.1:4318 (traces to /v1/traces, logs to /v1/logs); off
    /// the call's path, resuming where it stopped. Default: $OTEL_EXPORTER_OTLP_ENDPOINT, if set.
    /// Headers (a collector's token) come from $OTEL_EXPORTER_OTLP_HEADERS.
    #[arg(long, value_name = "URL")]
    pub otlp: Option<String>,
    /// Also export the calls' arguments and results (the ledger's redacted values) over OTLP.
    #[arg(long)]
    pub otlp_include_content: bool,
    /// Seconds an idempotency key (SEP-3182) is kept: a retry within it gets the first call's answer;
    /// after it the key is free. A key whose call's outcome is unknown is kept until an operator marks
    /// it.
    #[arg(long, value_name = "SECONDS", default_value_t = 24 * 60 * 60, value_parser = clap::value_parser!(u64).range(1..))]
    pub effect_window: u64,
    /// Serve no browser console (`/`, `/login`): approvals then go through the terminal, the app and
    /// the API only.
    #[arg(long)]
    pub no_console: bool,
    /// Seconds a browser console login lasts (it also ends after two idle hours, or at logout).
    #[arg(long, value_name = "SECONDS", default_value_t = 12 * 60 * 60, value_parser = clap::value_parser!(u64).range(1..))]
    pub console_session: u64,
    /// Serve TLS with this certificate chain (PEM; with --tls-key). Required, or --tls-self-signed, for
    /// a --listen address beyond this machine.
    #[arg(long, value_name = "FILE", requires = "tls_key", conflicts_with = "tls_self_signed")]
    pub tls_cert: Option<PathBuf>,
    /// The private key (PEM) of --tls-cert.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Serve TLS with a self-signed certificate for the hub's names, made once and kept in the config
    /// folder; its SHA-256 fingerprint is printed to check in the browser.
    #[arg(long)]
    pub tls_self_signed: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ServeApprover {
    Terminal,
    None,
}

#[derive(Debug, Subcommand)]
pub enum PolicyCommand {
    /// Evaluate one call or shell command and print the decision with its evidence (exit 0 whenever it
    /// evaluated, 2 on bad input).
    Check(PolicyCheckArgs),
    /// Run every rule example and every test case; print each failure (exit 1 on any failure).
    Test(PolicyTestArgs),
    /// Report rules that can never match, rules stricter rules shadow, allow rules they void, and
    /// redundant rules (exit 1 on any warning).
    Lint(PolicyTestArgs),
    /// Re-evaluate every recorded call of a ledger and list the calls whose decision would change.
    Replay(PolicyReplayArgs),
}

/// Which policies: the files named (user first, then project), else those found for the working
/// directory and the user, else the built-in default.
#[derive(Debug, Args)]
pub struct PolicyFiles {
    /// A policy file (repeatable; later files layer over earlier ones, the strictest decision wins).
    #[arg(long = "policy", value_name = "FILE")]
    pub policies: Vec<PathBuf>,
    /// The working directory calls are evaluated from (default: the current one).
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
}

impl PolicyFiles {
    /// The working directory of a policy command: `--cwd` (which must exist) or the current one.
    pub fn working_dir(&self) -> Result<PathBuf, CliError> {
        let cwd = match &self.cwd {
            Some(dir) => dir.clone(),
            None => std::env::current_dir()
                .map_err(|e| CliError::BadArgument(format!("the current directory is unreadable: {e}")))?,
        };
        std::fs::canonicalize(&cwd)
            .ok()
            .filter(|c| c.is_dir())
            .ok_or_else(|| CliError::BadArgument(format!("--cwd {}: not a directory", cwd.display())))
    }
}

#[derive(Debug, Args)]
pub struct PolicyCheckArgs {
    #[command(flatten)]
    pub files: PolicyFiles,
    /// Print the evaluation as JSON.
    #[arg(long)]
    pub json: bool,
    /// A tool call as JSON: {"name": "shell", "arguments": {"command": "..."}}.
    #[arg(long, value_name = "JSON", conflicts_with = "command")]
    pub call: Option<String>,
    /// A shell command: one word is a whole script (`-- 'make && rm -rf x'`); several words are one
    /// command's argv, as your shell split them.
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

#[derive(Debug, Args)]
pub struct PolicyTestArgs {
    #[command(flatten)]
    pub files: PolicyFiles,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct PolicyReplayArgs {
    #[command(flatten)]
    pub db: DbArg,
    #[command(flatten)]
    pub files: PolicyFiles,
    /// Exit 1 when any decision would change.
    #[arg(long)]
    pub fail_on_change: bool,
    /// JSON Lines: one object per change, then the summary.
    #[arg(long)]
    pub json: bool,
}

/// Who answers approval prompts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ApproverKind {
    /// Ask on the terminal (/dev/tty): once, session, always (appends a rule), deny.
    Terminal,
    /// Deny every prompt (CI, scripts).
    Deny,
}

#[derive(Debug, Args)]
pub struct CallArgs {
    /// The tool: shell, read, write or edit.
    #[arg(value_name = "TOOL")]
    pub tool: String,
    /// The arguments as a JSON object (e.g. '{"command": "ls"}').
    #[arg(value_name = "ARGUMENTS_JSON", default_value = "{}")]
    pub arguments: String,
    #[command(flatten)]
    pub files: PolicyFiles,
    /// Record the call in this ledger file.
    #[arg(long, value_name = "FILE")]
    pub db: Option<PathBuf>,
    /// Who answers prompts (default: terminal when there is one, else deny).
    #[arg(long, value_enum)]
    pub approver: Option<ApproverKind>,
    /// The policy file "always" appends rules to (default: the last policy file loaded).
    #[arg(long, value_name = "FILE")]
    pub always_file: Option<PathBuf>,
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Subcommand)]
pub enum LedgerCommand {
    /// List calls, newest first, one page at a time.
    Query(QueryArgs),
    /// Show one call's whole timeline: every record and its approvals.
    Show(ShowArgs),
    /// Counts by tool, status, reason and decider; durations per tool; calls over time.
    Stats(StatsArgs),
    /// Write every record of the selected calls as JSON Lines or CSV.
    Export(ExportArgs),
    /// List agent sessions, newest first, with how each ended: closed, or cut (its hub stopped without
    /// closing it).
    Sessions(ListingArgs),
    /// List requests the hub refused (no or a wrong token, the wrong credential, a foreign Origin or
    /// Host), newest first; identical ones within a minute are one row with a count.
    Refusals(ListingArgs),
    /// Check that the file is a healthy ledger (exit 0 when healthy, 1 otherwise).
    Check(CheckArgs),
    /// Verify the ledger's hash chain and its signed checkpoints (or an export's, with --export), naming
    /// the first record that breaks (exit 0 when it holds, 1 otherwise).
    Verify(VerifyArgs),
    /// Open the ledger for writing once, migrating an older schema, and close it.
    Migrate(MigrateArgs),
}

#[derive(Debug, Args)]
pub struct DbArg {
    /// The ledger file (default: the hub's, `$PORTCULLIS_DATA_DIR/ledger.db`, else
    /// `~/.local/share/portcullis/ledger.db`), or a team ledger's `postgres://user@host/db` URL (its
    /// password from --db-password-file or $PGPASSWORD).
    #[arg(long, value_name = "FILE|URL")]
    pub db: Option<PathBuf>,
    /// An owner-only file whose first line is the team ledger's password.
    #[arg(long, value_name = "FILE")]
    pub db_password_file: Option<PathBuf>,
}

impl DbArg {
    /// The ledger named: a team ledger's URL, a file, else the file the hub writes by default.
    pub fn address(&self) -> Result<portcullis_api::ledger::LedgerAddress, crate::error::CliError> {
        use portcullis_api::ledger::LedgerAddress;
        let address = LedgerAddress::of(&self.file()?, self.db_password_file.as_deref());
        if self.db_password_file.is_some() && matches!(address, LedgerAddress::File(_)) {
            return Err(crate::error::CliError::BadArgument(
                "--db-password-file goes with a team ledger (--db postgres://…)".into(),
            ));
        }
        Ok(address)
    }

    /// The file named, else the ledger the hub writes by default.
    pub fn file(&self) -> Result<PathBuf, crate::error::CliError> {
        match &self.db {
            Some(db) => Ok(db.clone()),
            None => portcullis_api::start::default_ledger_path()
                .map_err(|e| crate::error::CliError::BadArgument(format!("--db not given and {e}"))),
        }
    }
}

/// Which calls a command is about. Repeated options (or comma-separated values) mean "any of these".
#[derive(Debug, Args)]
pub struct FilterArgs {
    /// Only calls of this tool (repeatable).
    #[arg(long = "tool", value_name = "TOOL")]
    pub tools: Vec<String>,
    /// finished, error, blocked, interrupted or running (repeatable; default: every ended call).
    #[arg(long = "status", value_name = "STATUS", value_delimiter = ',')]
    pub statuses: Vec<String>,
    /// Blocked reason: guardrail_blocked, unknown_tool, tool_denied, invalid_arguments,
    /// permission_denied, validation_failed, execution_denied (repeatable).
    #[arg(long = "reason", value_name = "REASON", value_delimiter = ',')]
    pub reasons: Vec<String>,
    /// What decided: default, rule, protected_place, operator, session_grant, approval_timeout,
    /// grants, guardrail, permission, registry, validator (repeatable).
    #[arg(long = "decided-by", value_name = "KIND", value_delimiter = ',')]
    pub decided_by: Vec<String>,
    /// Only calls decided by this rule id.
    #[arg(long, value_name = "ID")]
    pub rule: Option<String>,
    /// What the policy said before any approval: allow, prompt, forbidden (repeatable).
    #[arg(long = "policy-decision", value_name = "DECISION", value_delimiter = ',')]
    pub policy_decisions: Vec<String>,
    /// Only calls of these agents (the client each call came from; repeatable).
    #[arg(long = "agent", value_name = "NAME")]
    pub agents: Vec<String>,
    #[arg(long, value_name = "SESSION")]
    pub session: Option<String>,
    #[arg(long, value_name = "RUN")]
    pub run: Option<String>,
    /// From this time on: RFC 3339, a date (2026-11-30) or an age (90s, 15m, 2h, 7d).
    #[arg(long, value_name = "TIME")]
    pub since: Option<String>,
    /// Before this time (same forms as --since).
    #[arg(long, value_name = "TIME")]
    pub until: Option<String>,
    /// Words that must all appear in the tool name, arguments, output or error.
    #[arg(long, value_name = "TEXT")]
    pub search: Option<String>,
    /// A team ledger's calls from this host only (repeatable).
    #[arg(long = "host", value_name = "HOST")]
    pub hosts: Vec<String>,
    /// A team ledger's calls of hubs run by this OS user only (repeatable).
    #[arg(long = "user", value_name = "USER")]
    pub users: Vec<String>,
    /// A team ledger's calls from this hub only (its ledger id; repeatable).
    #[arg(long = "hub", value_name = "LEDGER_ID")]
    pub hubs: Vec<String>,
    /// What a confined command's changes came to (the most serious): held, discarded, kept
    /// (repeatable).
    #[arg(long = "changes", value_name = "OUTCOME", value_delimiter = ',')]
    pub changes: Vec<String>,
    /// Only calls that ran contained.
    #[arg(long)]
    pub contained: bool,
}

#[derive(Debug, Args)]
pub struct QueryArgs {
    #[command(flatten)]
    pub db: DbArg,
    #[command(flatten)]
    pub filter: FilterArgs,
    /// Calls per page.
    #[arg(long, value_name = "N", default_value_t = 50, value_parser = clap::value_parser!(u16).range(1..=1000))]
    pub limit: u16,
    /// Continue after this cursor (the `next page` cursor of the previous page).
    #[arg(long, value_name = "CURSOR")]
    pub before: Option<String>,
    /// One JSON object: {"calls": [...], "next": cursor or null}.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ShowArgs {
    #[command(flatten)]
    pub db: DbArg,
    /// The call id.
    #[arg(value_name = "CALL_ID")]
    pub call_id: String,
    /// The session, when the call id occurs in several.
    #[arg(long, value_name = "SESSION")]
    pub session: Option<String>,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct StatsArgs {
    #[command(flatten)]
    pub db: DbArg,
    #[command(flatten)]
    pub filter: FilterArgs,
    /// Width of the histogram's time buckets: 90s, 15m, 1h, 7d (default: about 60 buckets).
    #[arg(long, value_name = "AGE")]
    pub bucket: Option<String>,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ExportArgs {
    #[command(flatten)]
    pub db: DbArg,
    #[command(flatten)]
    pub filter: FilterArgs,
    /// jsonl or csv.
    #[arg(long, value_name = "FORMAT")]
    pub format: String,
    /// Write to this file (created owner-only) instead of stdout.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
}

/// The options of `ledger sessions` and `ledger refusals`: a time range (when a session started, when a
/// refusal was first seen), a limit, JSON.
#[derive(Debug, Args)]
pub struct ListingArgs {
    #[command(flatten)]
    pub db: DbArg,
    /// From this time on: RFC 3339, a date or an age (90s, 15m, 2h, 7d).
    #[arg(long, value_name = "TIME")]
    pub since: Option<String>,
    /// Before this time (same forms as --since).
    #[arg(long, value_name = "TIME")]
    pub until: Option<String>,
    /// Rows listed at most.
    #[arg(long, value_name = "N", default_value_t = 50, value_parser = clap::value_parser!(u16).range(1..=10000))]
    pub limit: u16,
    /// One JSON object: {"sessions": [...]} or {"refusals": [...]}.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    #[command(flatten)]
    pub db: DbArg,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct VerifyArgs {
    #[command(flatten)]
    pub db: DbArg,
    /// Verify this JSON Lines export (`ledger export --format jsonl`) instead of a ledger file.
    #[arg(long, value_name = "FILE")]
    pub export: Option<PathBuf>,
    /// The public key to verify against: a file holding its hex (`ledger-key.pub`), or the hex itself
    /// (default: the key in the hub's config folder). With --export, once per hub whose records it
    /// holds (a team ledger's export): each hub's ledger is verified against the keys given.
    #[arg(long, value_name = "PUB")]
    pub key: Vec<String>,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct MigrateArgs {
    #[command(flatten)]
    pub db: DbArg,
}

/// An operator API error about an option's value, said as the option: `--since: cannot read time ...`.
pub fn option_error(e: ApiError) -> CliError {
    match (e.code, e.field()) {
        (ErrorCode::BadTime, Some(field)) => CliError::BadTime(format!("--{field}: {}", e.message)),
        _ => CliError::Api(e),
    }
}

impl FilterArgs {
    /// The ledger filter these options describe; `now` anchors ages such as `2h`.
    pub fn to_filter(&self, now: Timestamp) -> Result<CallFilter, CliError> {
        let query = CallQuery {
            tools: self.tools.clone(),
            statuses: self.statuses.clone(),
            reasons: self.reasons.clone(),
            decided_by: self.decided_by.clone(),
            rule: self.rule.clone(),
            policy_decisions: self.policy_decisions.clone(),
            agents: self.agents.clone(),
            session: self.session.clone(),
            run: self.run.clone(),
            since: self.since.clone(),
            until: self.until.clone(),
            search: self.search.clone(),
            hosts: self.hosts.clone(),
            users: self.users.clone(),
            hubs: self.hubs.clone(),
            changes: self.changes.clone(),
            contained: self.contained.then_some(true),
        };
        query.filter(now).map_err(option_error)
    }
}

impl ListingArgs {
    /// The `--since` and `--until` of the listing.
    pub fn range(&self) -> TimeRange {
        TimeRange { since: self.since.clone(), until: self.until.clone() }
    }
}
