//! Stage zero: how a [`Dispatcher`] is assembled (its seams and bounds, with their defaults). Split from
//! `dispatch.rs` so the pipeline's own module holds only the pipeline.

use super::{DEFAULT_APPROVAL_TIMEOUT, DEFAULT_CANCEL_GRACE, Dispatcher, Shared};
use crate::events::EventBus;
use crate::execution::{Approvals, ExecutionPolicy};
use crate::guardrail::Guardrail;
use crate::ledger::Ledger;
use crate::middleware::Middleware;
use crate::permission::{AllowAllPermissions, PermissionCheck};
use crate::redaction::Redactor;
use crate::registry::ToolRegistry;
use crate::schema::SchemaValidator;
use crate::validation::ToolValidator;
use std::sync::{Arc, RwLock};
use std::time::Duration;

/// Builds a [`Dispatcher`]. Defaults: default schema bounds, no host validators, guardrails or
/// middleware, every permission granted, no execution policy (allow, decided by default), no approver
/// (an "ask" is denied), no ledger, a fresh event bus, the default redactor (patterns + secret keys).
pub struct DispatcherBuilder {
    shared: Shared,
}

impl DispatcherBuilder {
    pub fn schema_validator(mut self, schema: SchemaValidator) -> Self {
        self.shared.schema = schema;
        self
    }

    pub fn validator(mut self, validator: Arc<dyn ToolValidator>) -> Self {
        self.shared.validators.push(validator);
        self
    }

    pub fn guardrail(mut self, guardrail: Arc<dyn Guardrail>) -> Self {
        self.shared.guardrails.push(guardrail);
        self
    }

    /// Middleware run in the order added at `tool_call`, in reverse at `tool_result`.
    pub fn middleware(mut self, middleware: Arc<dyn Middleware>) -> Self {
        self.shared.middleware.push(middleware);
        self
    }

    pub fn permissions(mut self, permissions: Arc<dyn PermissionCheck>) -> Self {
        self.shared.permissions = permissions;
        self
    }

    pub fn policy(mut self, policy: Arc<dyn ExecutionPolicy>) -> Self {
        self.shared.policy = Some(policy);
        self
    }

    pub fn approvals(mut self, approvals: Arc<dyn Approvals>) -> Self {
        self.shared.approvals = Some(approvals);
        self
    }

    pub fn ledger(mut self, ledger: Arc<dyn Ledger>) -> Self {
        self.shared.ledger = Some(ledger);
        self
    }

    pub fn events(mut self, events: EventBus) -> Self {
        self.shared.events = events;
        self
    }

    pub fn redactor(mut self, redactor: Redactor) -> Self {
        self.shared.redactor = redactor;
        self
    }

    pub fn cancel_grace(mut self, grace: Duration) -> Self {
        self.shared.cancel_grace = grace;
        self
    }

    /// Longest wait for an approver's answer; then the call is denied, recorded as
    /// [`DecidedBy::ApprovalTimeout`]. `None` waits as long as the approver takes. Default 120 s.
    pub fn approval_timeout(mut self, limit: Option<Duration>) -> Self {
        self.shared.approval_timeout = limit;
        self
    }

    pub fn build(self) -> Dispatcher {
        Dispatcher { shared: Arc::new(self.shared) }
    }
}

impl Dispatcher {
    pub fn builder(registry: ToolRegistry) -> DispatcherBuilder {
        DispatcherBuilder {
            shared: Shared {
                registry: RwLock::new(Arc::new(registry)),
                schema: SchemaValidator::default(),
                validators: Vec::new(),
                guardrails: Vec::new(),
                middleware: Vec::new(),
                permissions: Arc::new(AllowAllPermissions),
                policy: None,
                approvals: None,
                ledger: None,
                events: EventBus::default(),
                redactor: Redactor::default(),
                cancel_grace: DEFAULT_CANCEL_GRACE,
                approval_timeout: Some(DEFAULT_APPROVAL_TIMEOUT),
            },
        }
    }
}
