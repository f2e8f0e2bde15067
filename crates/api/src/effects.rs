//! The operator's view of claimed effects (idempotency keys): the ones whose outcome is unknown, which
//! wait for an operator, and the decision on one (done, failed, retryable), recorded in the ledger.

use super::error::{ApiError, ErrorCode};
use super::{Operator, OperatorApi};
use portcullis_hub::MarkEffectError;
use portcullis_hub::MarkError;
use portcullis_ledger::{EffectMarkOutcome, EffectRow, EffectState, LedgerReader};
use serde_json::json;

impl OperatorApi {
    /// The claimed effects in the hub's ledger: unknown outcomes first, then the others, each part
    /// newest first; at most `limit` in all.
    pub fn effects(&self, limit: u32) -> Result<Vec<EffectRow>, ApiError> {
        let reader = LedgerReader::open(self.hub.ledger_path())?;
        let limit = limit as usize;
        let mut rows = reader.effects(&[EffectState::Unknown], limit)?;
        let others: Vec<EffectState> =
            EffectState::ALL.into_iter().filter(|s| *s != EffectState::Unknown).collect();
        rows.extend(reader.effects(&others, limit.saturating_sub(rows.len()))?);
        Ok(rows)
    }

    /// An operator's decision on an unknown outcome (see [`portcullis_hub::Hub::mark_effect`]).
    pub async fn mark_effect(
        &self,
        agent: &str,
        key: &str,
        outcome: EffectMarkOutcome,
        note: Option<String>,
        operator: &Operator,
    ) -> Result<String, ApiError> {
        let marked = self.hub.effects().mark_effect(agent, key, outcome, operator.name(), note).await;
        let call_id = marked.map_err(|refused| {
            let code = match &refused {
                MarkEffectError::Refused(MarkError::NotFound { .. }) => ErrorCode::EffectUnknown,
                MarkEffectError::Refused(MarkError::NotUnknown { .. }) => ErrorCode::EffectOutcomeKnown,
                MarkEffectError::NotRecorded(_) => ErrorCode::LedgerWriterFailed,
            };
            ApiError::new(code, refused.to_string(), json!({ "agent": agent, "key": key }))
        })?;
        tracing::info!(%agent, %key, outcome = outcome.as_str(), operator = operator.name(), "an operator marked an effect whose outcome was unknown");
        Ok(call_id)
    }
}
