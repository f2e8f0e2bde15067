//! The one assembly of the tool-call pipeline. Every front end that runs calls — the hub for agents,
//! the Claude Code hook per request, `portcullis call` — builds its dispatcher here, so what the
//! pipeline is given (the live policy, the approvals and their bound, the redactor, the ledger) cannot
//! drift apart between them.

use portcullis_coding::{Limits, Workspace, register_coding_tools};
use portcullis_harness::{Approvals, Dispatcher, ExecutionPolicy, Redactor, SearchToolsTool, ToolRegistry};
use portcullis_ledger::SqliteLedger;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// What a pipeline is made of, besides its tools.
pub struct Pipeline {
    /// The live policy (a dry run's judge wraps it to keep each evaluation).
    pub policy: Arc<dyn ExecutionPolicy>,
    pub approvals: Arc<dyn Approvals>,
    /// How long the harness waits for the approvals at most: the approver's own timeout, or a backstop
    /// above it when the approver times out itself (the hub's broker).
    pub approval_bound: Duration,
    /// Secrets never reach the ledger, results or events.
    pub redactor: Redactor,
    /// Where every call is recorded (none: `portcullis call` without `--db`).
    pub ledger: Option<Arc<SqliteLedger>>,
}

/// The margin the harness's bound leaves above an approver that times out on its own.
pub const APPROVAL_BACKSTOP: Duration = Duration::from_secs(5);

impl Pipeline {
    /// The dispatcher running `registry`'s tools through this pipeline.
    pub fn assemble(self, registry: ToolRegistry) -> Dispatcher {
        let mut builder = Dispatcher::builder(registry)
            .policy(self.policy)
            .approvals(self.approvals)
            .approval_timeout(Some(self.approval_bound))
            .redactor(self.redactor);
        if let Some(ledger) = self.ledger {
            builder = builder.ledger(ledger);
        }
        builder.build()
    }
}

/// The built-in tools every pipeline starts from: the coding tools rooted at `project` within `limits`,
/// and `search_tools`. Returns the workspace with them (the hub keeps it) or what went wrong.
pub fn builtin_tools(project: &Path, limits: Limits) -> Result<(Arc<Workspace>, ToolRegistry), String> {
    builtin_tools_confined(project, limits, None, None)
}

/// [`builtin_tools`] whose shell runs confined commands through `launcher`.
pub fn builtin_tools_confined(
    project: &Path,
    limits: Limits,
    launcher: Option<portcullis_sandbox::SandboxLauncher>,
    undo_store: Option<PathBuf>,
) -> Result<(Arc<Workspace>, ToolRegistry), String> {
    let workspace =
        Workspace::new(project).map_err(|e| format!("workspace {}: {}", project.display(), e.message))?;
    let workspace =
        Arc::new(workspace.with_limits(limits).with_sandbox(launcher).with_undo_store(undo_store));
    let registry = builtin_registry(&workspace)?;
    Ok((workspace, registry))
}

/// The built-in tools over an existing workspace (the hub rebuilds its registry from them).
pub fn builtin_registry(workspace: &Arc<Workspace>) -> Result<ToolRegistry, String> {
    let mut registry = ToolRegistry::new();
    register_coding_tools(&mut registry, workspace).map_err(|e| format!("coding tools: {e}"))?;
    registry.register(Arc::new(SearchToolsTool::default())).map_err(|e| format!("search_tools: {e}"))?;
    Ok(registry)
}
