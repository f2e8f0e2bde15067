//! Ordered concurrent dispatch of a batch: up to N calls in flight, results in call order whatever the
//! completion order, sequential when the batch holds an exclusive tool. On cancellation or failure the
//! workers stop claiming, claimed calls settle, and unclaimed calls get `tool_call_not_dispatched` —
//! every call gets exactly one result.

use crate::call::{CallError, CallOutcome, DecidedBy, RunContext, ToolCall, ToolCallResult, error_codes};
use crate::dispatch::Dispatcher;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

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
        BatchOptions {
            tool_concurrency: 1,
            stop_on_error: true,
        }
    }
}

impl BatchOptions {
    pub fn concurrency(tool_concurrency: usize) -> Self {
        BatchOptions {
            tool_concurrency,
            ..BatchOptions::default()
        }
    }
}

impl Dispatcher {
    /// Dispatches a batch; `result[i]` answers `calls[i]`.
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
        let exclusive = calls
            .iter()
            .any(|c| registry.get(&c.name).is_some_and(|e| e.spec().exclusive));
        let workers = if exclusive {
            1
        } else {
            options.tool_concurrency.clamp(1, MAX_TOOL_CONCURRENCY).min(total)
        };
        let pending: Vec<Mutex<Option<ToolCall>>> = calls.into_iter().map(|c| Mutex::new(Some(c))).collect();
        let next = AtomicUsize::new(0);
        let stop = AtomicBool::new(false);
        let settled: Arc<Mutex<Vec<Option<ToolCallResult>>>> = Arc::new(Mutex::new(vec![None; total]));

        let worker = || async {
            loop {
                if stop.load(Ordering::Acquire) || run.cancel.is_cancelled() {
                    break;
                }
                let index = next.fetch_add(1, Ordering::AcqRel);
                let Some(slot) = pending.get(index) else { break };
                let Some(call) = slot.lock().ok().and_then(|mut s| s.take()) else {
                    continue;
                };
                let result = self.dispatch(call, run).await;
                if options.stop_on_error && matches!(result.outcome, CallOutcome::Error { .. }) {
                    stop.store(true, Ordering::Release);
                }
                if let Ok(mut all) = settled.lock() {
                    all[index] = Some(result);
                }
            }
        };
        futures::future::join_all((0..workers).map(|_| worker())).await;

        let settled = match settled.lock() {
            Ok(mut all) => std::mem::take(&mut *all),
            Err(poisoned) => std::mem::take(&mut *poisoned.into_inner()),
        };
        let mut results = Vec::with_capacity(total);
        for (index, result) in settled.into_iter().enumerate() {
            if let Some(result) = result {
                results.push(result);
                continue;
            }
            let call = pending
                .get(index)
                .and_then(|slot| slot.lock().ok().and_then(|mut s| s.take()));
            let Some(call) = call else { continue };
            let why = if run.cancel.is_cancelled() {
                "the run was cancelled"
            } else {
                "an earlier call failed"
            };
            let error = CallError::new(
                error_codes::NOT_DISPATCHED,
                format!("not dispatched: {why} before this call was claimed"),
            );
            results.push(self.not_dispatched(call, run, error).await);
        }
        results
    }

    async fn not_dispatched(&self, call: ToolCall, run: &RunContext, error: CallError) -> ToolCallResult {
        let ctx = Arc::new(run.call(call.id.clone()));
        let tool_name = self
            .registry()
            .get(&call.name)
            .map_or_else(|| Arc::from(call.name.as_str()), |e| e.name.clone());
        self.shared
            .fail_unstarted(&ctx, tool_name, error, DecidedBy::DEFAULT)
            .await
    }
}
