//! An agent whose call waits for an operator is told so, and for how long it may wait: a note when the
//! approval is asked, then one every few seconds until it is settled. The gateway sends them as MCP
//! progress, so a client that resets its request timeout on progress (the SDK's
//! `resetTimeoutOnProgress`) keeps waiting for the operator instead of giving up at its own timeout.

use crate::broker::BrokerEvent;
use portcullis_harness::Timestamp;
use portcullis_mcp::gateway::WaitNotes;
use std::time::Duration;
use tokio::sync::broadcast::{self, error::RecvError};
use tokio_util::task::AbortOnDropHandle;

/// How often a waiting call is told it still waits (well under any client's request timeout).
pub const NOTE_EVERY: Duration = Duration::from_secs(5);

/// Follows the approval asked for the call `(session_id, call_id)` and writes its notes to `notes`
/// until it is settled; stops when the handle is dropped (the call ended).
pub fn follow_approval(
    mut approvals: broadcast::Receiver<BrokerEvent>,
    session_id: String,
    call_id: String,
    notes: WaitNotes,
) -> AbortOnDropHandle<()> {
    AbortOnDropHandle::new(tokio::spawn(async move {
        let (id, deadline) = loop {
            match approvals.recv().await {
                Ok(BrokerEvent::Pending(p)) if p.session_id == session_id && p.call_id == call_id => {
                    break (p.id, p.deadline);
                }
                Ok(_) | Err(RecvError::Lagged(_)) => {}
                Err(RecvError::Closed) => return,
            }
        };
        let _ = notes.send(asked_note(seconds_left(deadline)));
        let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + NOTE_EVERY, NOTE_EVERY);
        loop {
            tokio::select! {
                event = approvals.recv() => match event {
                    Ok(BrokerEvent::Resolved { id: settled, .. }) if settled == id => return,
                    Ok(_) | Err(RecvError::Lagged(_)) => {}
                    Err(RecvError::Closed) => return,
                },
                _ = ticks.tick() => {
                    if notes.send(still_note(seconds_left(deadline))).is_err() {
                        return;
                    }
                }
            }
        }
    }))
}

fn seconds_left(deadline: Timestamp) -> u64 {
    let micros = deadline.0.saturating_sub(Timestamp::now().0);
    u64::try_from(micros).unwrap_or(0).div_ceil(1_000_000)
}

/// The note sent when the approval is asked.
pub fn asked_note(seconds: u64) -> String {
    format!(
        "waiting for an operator's approval: up to {seconds} s; without an answer by then the call is denied"
    )
}

/// The note sent while it still waits.
pub fn still_note(seconds: u64) -> String {
    format!("still waiting for an operator's approval: {seconds} s left")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::broker::PendingApproval;

    #[test]
    fn notes_say_what_the_call_waits_for_and_how_long() {
        assert_eq!(
            asked_note(120),
            "waiting for an operator's approval: up to 120 s; without an answer by then the call is denied"
        );
        assert_eq!(still_note(5), "still waiting for an operator's approval: 5 s left");
    }

    #[test]
    fn seconds_left_round_up_and_never_go_below_zero() {
        let now = Timestamp::now().0;
        assert_eq!(seconds_left(Timestamp(now - 5_000_000)), 0);
        let left = seconds_left(Timestamp(now + 2_500_000));
        assert!(left == 3 || left == 2, "{left}");
    }

    fn pending(id: u64, session: &str, call: &str) -> BrokerEvent {
        let now = Timestamp::now();
        BrokerEvent::Pending(Box::new(PendingApproval {
            id,
            session_id: session.into(),
            call_id: call.into(),
            tool: "shell".into(),
            arguments: serde_json::json!({}),
            arguments_sha256: portcullis_harness::arguments_digest(&serde_json::json!({})),
            policy_version: None,
            action: portcullis_harness::ExecutionAction::none(),
            reason: None,
            matched_rules: vec![],
            requested_at: now,
            deadline: Timestamp(now.0 + 30_000_000),
            always: crate::broker::AlwaysOffer::No { why: "test".into() },
        }))
    }

    #[tokio::test]
    async fn only_the_calls_own_approval_is_followed_until_it_is_settled() {
        let (tx, rx) = broadcast::channel(16);
        let (notes, mut heard) = tokio::sync::mpsc::unbounded_channel();
        let follower = follow_approval(rx, "s1".into(), "c2".into(), notes);
        tx.send(pending(1, "s1", "c1")).unwrap();
        tx.send(pending(2, "s2", "c2")).unwrap();
        tx.send(pending(3, "s1", "c2")).unwrap();
        let first = heard.recv().await.unwrap();
        assert!(first.starts_with("waiting for an operator's approval: up to 30 s"), "{first}");
        tx.send(BrokerEvent::Resolved { id: 1, outcome: "once".into(), operator: None }).unwrap();
        tx.send(BrokerEvent::Resolved { id: 3, outcome: "once".into(), operator: None }).unwrap();
        // Settled: the follower ends and drops its sender.
        assert!(heard.recv().await.is_none());
        drop(follower);
    }
}
