//! Approvals and session grants through the operator API: what waits for an answer, answering it, and
//! the "allow for this session" answers in force.

use super::error::{ApiError, ErrorCode};
use super::types::{AlwaysOffer, AlwaysRule, Answer, Approval, Choice, SessionGrant};
use super::{Operator, OperatorApi};
use portcullis_harness::Receipt;
use portcullis_hub::{PendingApproval, Reply};
use portcullis_policy::ApprovalChoice;
use serde_json::json;

impl OperatorApi {
    /// The calls waiting for an answer, oldest first.
    pub fn pending_approvals(&self) -> Vec<Approval> {
        let live = self.hub.live_policy();
        let broker = self.hub.broker();
        broker.pending().into_iter().map(|p| evaluated(p, live, broker.redactor())).collect()
    }

    /// How many calls wait for an answer (what a window title or a tray shows), cheaply.
    pub fn pending_count(&self) -> usize {
        self.hub.broker().pending_count()
    }

    /// Answers approval `id` as `operator`; returns the answer's receipt. The first answer wins: a
    /// later one, or one after the approval timed out or was withdrawn, is `approval_answered` and
    /// changes nothing. An answer whose `arguments_sha256` is not the waiting call's is
    /// `receipt_mismatch`: it approves nothing and the call still waits.
    pub fn answer_approval(
        &self,
        id: u64,
        answer: &Answer,
        operator: &Operator,
    ) -> Result<Receipt, ApiError> {
        let choice = match answer.answer {
            Choice::Once => ApprovalChoice::Once,
            Choice::Session => ApprovalChoice::Session,
            Choice::Always => ApprovalChoice::Always,
            Choice::Deny => ApprovalChoice::Deny,
        };
        let reply = Reply {
            choice,
            arguments_sha256: &answer.arguments_sha256,
            operator: operator.name(),
            channel: operator.channel().as_str(),
            note: answer.note.as_deref(),
            scope: answer.scope.as_deref(),
        };
        Ok(self.hub.broker().answer(id, reply)?)
    }

    /// The session grants in force.
    pub fn session_grants(&self) -> Vec<SessionGrant> {
        self.hub
            .broker()
            .session_grants()
            .list()
            .into_iter()
            .map(|g| SessionGrant {
                id: g.id,
                session_id: g.session_id,
                tool: g.tool_name,
                action: g.action,
                granted_at: g.granted_at,
                receipt: g.receipt,
            })
            .collect()
    }

    /// Revokes session grant `id`: the next such call is asked again.
    pub fn revoke_session_grant(&self, id: &str) -> Result<(), ApiError> {
        if self.hub.broker().session_grants().revoke(id) {
            Ok(())
        } else {
            Err(ApiError::new(ErrorCode::GrantUnknown, format!("no session grant {id}"), json!({ "id": id })))
        }
    }
}

/// The approval with the policy's full evaluation of its action as the policy stands now.
pub(super) fn evaluated(
    p: PendingApproval,
    live: &portcullis_policy::LivePolicy,
    redactor: Option<&portcullis_harness::Redactor>,
) -> Approval {
    // A running command's question about a host is not a call the policy judges: its rule asked.
    if portcullis_harness::asks_for_host(&p.action) {
        return approval_of(p);
    }
    let evaluation = live.evaluation(&p.tool, &p.action, p.action.cwd.as_deref());
    let file_change = super::file_change::file_change(&p.tool, &p.arguments, &p.action, redactor);
    Approval { evaluation: Some(evaluation), file_change, ..approval_of(p) }
}

fn approval_of(p: PendingApproval) -> Approval {
    Approval {
        id: p.id,
        session_id: p.session_id,
        call_id: p.call_id,
        tool: p.tool,
        arguments: p.arguments,
        arguments_sha256: p.arguments_sha256,
        policy_version: p.policy_version,
        action: p.action,
        reason: p.reason,
        matched_rules: p.matched_rules,
        requested_at: p.requested_at,
        deadline: p.deadline,
        hub: None,
        always: match p.always {
            portcullis_hub::AlwaysOffer::Yes { file, creates, amendment } => AlwaysOffer::Yes {
                file,
                creates,
                rules: amendment
                    .rules
                    .iter()
                    .map(|r| AlwaysRule {
                        id: r.id.clone(),
                        example: r.examples.first().cloned().unwrap_or_default(),
                        words: r.pattern.iter().map(pattern_word).collect(),
                    })
                    .collect(),
                read_roots: amendment.read_roots.iter().map(|r| r.path.clone()).collect(),
                amendment: serde_json::to_value(&amendment).unwrap_or_default(),
            },
            portcullis_hub::AlwaysOffer::No { why } => AlwaysOffer::No { why },
        },
        evaluation: None,
        file_change: None,
    }
}

/// A word of an offered rule's pattern ("always" writes single words, never lists of alternatives).
pub(super) fn pattern_word(element: &portcullis_policy::document::PatternElement) -> String {
    match element {
        portcullis_policy::document::PatternElement::Token(word) => word.clone(),
        portcullis_policy::document::PatternElement::AnyOf(words) => words.join("|"),
    }
}
