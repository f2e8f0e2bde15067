//! The agent identity a request's bearer token names. The access guard (`http.rs`) puts it in the
//! request's extensions; idempotency keys are scoped by it and stateless clients keyed by it. It is a
//! leaf of its own so that those readers, which the HTTP service is built on, need not name the HTTP
//! module.

use std::sync::Arc;

/// The agent identity a request's token names, put in its extensions beside the guard's
/// `Caller::Agent`: the name of a named agent token, or [`DEFAULT_AGENT`] for the gateway token.
/// Effects (idempotency keys) are scoped by it, so one agent cannot reach another's results.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentName(pub Arc<str>);

/// The identity of the gateway token's holder.
pub const DEFAULT_AGENT: &str = "default";
