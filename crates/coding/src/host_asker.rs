//! The operator, asked about a host a confined command's rule does not name (the rule says
//! `"other_hosts": "prompt"`): the egress proxy holds the connection while the question waits in the
//! approvals inbox, for the call the command runs for. One question per host and port for the command
//! (npm opens several connections at once: the operator is asked once); the answer holds for the rest
//! of the command. Whatever the answer, the proxy records the connection with who decided.

use portcullis_harness::{
    ApprovalAnswer, DecidedBy, OperatorAsk, OperatorOutcome, PolicyVerdict, RuleRef, host_action,
};
use portcullis_sandbox::egress::{HostAnswer, HostAsker};
use serde_json::json;
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use tokio::sync::Mutex;

#[derive(Debug)]
pub struct OperatorHostAsker {
    asks: OperatorAsk,
    /// The rule that asks (and that "always" adds the host to).
    rule: RuleRef,
    /// "rule `npm` (…) allows registry.npmjs.org", for the question's words.
    allowed: String,
    /// The command, shown with the question (agent text).
    command: String,
    answers: Mutex<HashMap<(String, u16), HostAnswer>>,
}

impl OperatorHostAsker {
    pub fn new(asks: OperatorAsk, rule: RuleRef, allowed: String, command: String) -> Self {
        OperatorHostAsker { asks, rule, allowed, command, answers: Mutex::new(HashMap::new()) }
    }

    async fn answer(&self, host: String, port: u16) -> HostAnswer {
        // Held while the operator is asked: the command's other connections wait for the answer.
        let mut answers = self.answers.lock().await;
        if let Some(answer) = answers.get(&(host.clone(), port)) {
            return answer.clone();
        }
        let reason = format!("the command asks for {host}:{port}, and {} (not it)", self.allowed);
        let mut verdict = PolicyVerdict::ask(
            DecidedBy::Rule { rule_id: self.rule.id.clone(), source: self.rule.source.clone() },
            reason,
        );
        verdict.matched_rules = vec![self.rule.clone()];
        let shown = json!({ "command": self.command, "host": host, "port": port });
        let answer = match self.asks.ask(host_action(&host, port), shown, verdict).await {
            ApprovalAnswer::Allow { decided_by } => Ok(allowed_words(&decided_by)),
            ApprovalAnswer::Deny { reason, .. } => {
                Err(format!("network to {host}:{port} refused: {reason}; {}", self.allowed))
            }
        };
        answers.insert((host, port), answer.clone());
        answer
    }
}

impl HostAsker for OperatorHostAsker {
    fn ask(&self, host: String, port: u16) -> Pin<Box<dyn Future<Output = HostAnswer> + Send + '_>> {
        Box::pin(self.answer(host, port))
    }
}

/// Who allowed a host, in words for the record.
fn allowed_words(decided_by: &DecidedBy) -> String {
    match decided_by {
        DecidedBy::Operator { outcome, operator, .. } => {
            let how = match outcome {
                OperatorOutcome::ApprovedOnce => "for this command",
                OperatorOutcome::ApprovedForSession => "for this session",
                OperatorOutcome::ApprovedAlways => "always (added to the rule)",
                OperatorOutcome::Denied => "denied",
            };
            format!(
                "allowed by the operator{} {how}",
                operator.as_deref().map(|o| format!(" ({o})")).unwrap_or_default()
            )
        }
        DecidedBy::SessionGrant { grant_id, .. } => format!("allowed by the session's grant {grant_id}"),
        other => format!("allowed ({other:?})"),
    }
}
