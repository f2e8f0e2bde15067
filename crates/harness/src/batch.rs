//! Ordered concurrent dispatch of a batch: up to N calls in flight on tokio tasks, results in call order
//! whatever the completion order, sequential when the batch holds an exclusive tool (and an exclusive
//! tool that middleware renamed a call to still runs alone). On cancellation or failure the workers stop
//! claiming, claimed calls settle, and unclaimed calls get `tool_call_not_dispatched` — every call gets
//! exactly one result.

use crate::call::{CallError, DecidedBy, RunContext, ToolCall};
use crate::dispatch::Dispatcher;
use crate::error_code::CallErrorCode;
use crate::outcome::{CallOutcome, ToolCallResult};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use tokio::task::JoinSet;

/// Hard cap on calls in flight.
pub const MAX_TOOL_CONCURRENCY: usize = 64;

/// How a batch runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchOptions {
    /// Calls in flight at once (1..=64; default 1).
    pub tool_concurrency: usize,
    /// Stop claiming new calls once one ends in error (a failed or panicked tool). Blocked calls are
    /// answers, not failures, and do not stop the batch. Default true.
    pub stop_on_error: bool,
}

impl Default for BatchOptions {
    fn default() -> Self {
        BatchOptions { tool_concurrency: 1, stop_on_error: true }
    }
}

impl BatchOptions {
    pub fn concurrency(tool_concurrency: usize) -> Self {
        BatchOptions { tool_concurrency, ..BatchOptions::default() }
    }
}

/// What the workers of one batch share.
struct BatchState {
    pending: Vec<Mutex<Option<ToolCall>>>,
    settled: Vec<Mutex<Option<ToolCallResult>>>,
    next: AtomicUsize,
    stop: AtomicBool,
    gate: tokio::sync::RwLock<()>,
}

impl BatchState {
    /// Claims calls until there are none, the run is cancelled, or (with `stop_on_error`) one failed.
    async fn work(&self, dispatcher: &Dispatcher, run: &RunContext, stop_on_error: bool) {
        loop {
            if self.stop.load(Ordering::Acquire) || run.cancel.is_cancelled() {
                return;
            }
            let index = self.next.fetch_add(1, Ordering::AcqRel);
            let Some(slot) = self.pending.get(index) else { return };
            let Some(call) = slot.lock().ok().and_then(|mut s| s.take()) else { continue };
            let result = dispatcher.dispatch_gated(call, run, Some(&self.gate)).await;
            if stop_on_error && matches!(result.outcome, CallOutcome::Error { .. }) {
                self.stop.store(true, Ordering::Release);
            }
            if let Some(Ok(mut cell)) = self.settled.get(index).map(Mutex::lock) {
                *cell = Some(result);
            }
        }
    }
}

impl Dispatcher {
    /// Dispatches a batch; `result[i]` answers `calls[i]`. Needs a tokio runtime (workers are tasks, so
    /// tools run in parallel on a multi-thread runtime). Dropping the returned future aborts the workers.
    pub async fn dispatch_batch(
        &self,
        calls: Vec<ToolCall>,
        run: &RunContext,
        options: BatchOptions,
    ) -> Vec<ToolCallResult> {
        let total = calls.len();
        if total == 0 {
            return Vec::new();
        }
        let registry = self.registry();
        let exclusive = calls.iter().any(|c| registry.get(&c.name).is_some_and(|e| e.spec().exclusive));
        let workers =
            if exclusive { 1 } else { options.tool_concurrency.clamp(1, MAX_TOOL_CONCURRENCY).min(total) };
        let identities: Vec<(Arc<str>, String)> =
            calls.iter().map(|c| (c.id.clone(), c.name.clone())).collect();
        let state = Arc::new(BatchState {
            pending: calls.into_iter().map(|c| Mutex::new(Some(c))).collect(),
            settled: (0..total).map(|_| Mutex::new(None)).collect(),
            next: AtomicUsize::new(0),
            stop: AtomicBool::new(false),
            gate: tokio::sync::RwLock::new(()),
        });

        let mut tasks = JoinSet::new();
        for _ in 0..workers {
            let (state, dispatcher, run) = (state.clone(), self.clone(), run.clone());
            tasks.spawn(async move { state.work(&dispatcher, &run, options.stop_on_error).await });
        }
        while let Some(joined) = tasks.join_next().await {
            if let Err(e) = joined {
                // dispatch contains panics itself; a worker can only end this way if the runtime is
                // shutting down. Its claimed call is answered below as not dispatched.
                tracing::error!(error = %e, "batch worker ended abnormally");
            }
        }

        let mut results = Vec::with_capacity(total);
        for (index, (id, name)) in identities.into_iter().enumerate() {
            let settled =
                state.settled.get(index).and_then(|cell| cell.lock().ok().and_then(|mut c| c.take()));
            if let Some(result) = settled {
                results.push(result);
                continue;
            }
            let why = if run.cancel.is_cancelled() {
                "the run was cancelled"
            } else if state.stop.load(Ordering::Acquire) {
                "an earlier call failed"
            } else {
                "its batch worker ended abnormally"
            };
            let error = CallError::new(
                CallErrorCode::NotDispatched,
                format!("not dispatched: {why} before this call was claimed"),
            );
            results.push(self.not_dispatched(id, &name, run, error).await);
        }
        results
    }

    async fn not_dispatched(
        &self,
        id: Arc<str>,
        name: &str,
        run: &RunContext,
        error: CallError,
    ) -> ToolCallResult {
        let ctx = Arc::new(run.call(id));
        let tool_name = self.registry().get(name).map_or_else(|| Arc::from(name), |e| e.name.clone());
        self.shared.fail_unstarted(&ctx, tool_name, error, DecidedBy::DEFAULT, None).await
    }
}
