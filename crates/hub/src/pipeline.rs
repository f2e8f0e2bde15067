//! The one assembly of the tool-call pipeline. Every front end that runs calls — the hub for agents,
//! the Claude Code hook per request, `portcullis call` — builds its dispatcher here, so what the
//! pipeline is given (the live policy, the approvals and their bound, the redactor, the ledger) cannot
//! drift apart between them.

use portcullis_harness::{Approvals, Dispatcher, Redactor, ToolRegistry};
use portcullis_ledger::SqliteLedger;
use portcullis_policy::LivePolicy;
use std::sync::Arc;
use std::time::Duration;

/// What a pipeline is made of, besides its tools.
pub struct Pipeline {
    pub policy: Arc<LivePolicy>,
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
