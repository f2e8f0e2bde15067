//! A hub that cannot confine commands (here: started without a launcher, as on a kernel without
//! Landlock): every command's ledger row says it ran unconfined and why, and a policy that requires the
//! sandbox forbids commands there instead of running them.
// Test helpers outside #[test] fns may unwrap and panic.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::{folder, hub};
use portcullis_harness::{CallOutcome, Enforcement};
use serde_json::json;
use tokio_util::sync::CancellationToken;

const ALLOW_TOUCH: &str =
    r#""commands": { "rules": [ { "id": "touch", "pattern": ["touch"], "decision": "allow" } ] }"#;

#[tokio::test]
async fn without_walls_a_command_runs_unconfined_and_says_so() {
    let (_tmp, dir) = folder();
    let hub = hub(&dir, &format!("{{ {ALLOW_TOUCH} }}")).await;
    let support = hub.live_policy().sandbox_support().clone();
    assert!(!support.can_confine(), "a test binary is no launcher: {support:?}");
    let result = hub
        .call("s", "shell", "shell", json!({"command": "touch made"}), "test", CancellationToken::new())
        .await;
    assert!(matches!(result.outcome, CallOutcome::Finished { .. }), "{result:?}");
    assert!(dir.join("proj/made").exists());
    hub.close().await.unwrap();
    let reason = unconfined_reason(&dir, &result.call_id);
    assert!(reason.contains("without a sandbox launcher"), "{reason}");
}

/// Why the ledger says the call's command ran (or would have run) unconfined.
fn unconfined_reason(dir: &std::path::Path, call_id: &str) -> String {
    let browsed = portcullis_api::ledger_browse::BrowsedLedger::open(&dir.join("ledger.db")).unwrap();
    let details = browsed.details(call_id, None).unwrap();
    let profile = (details.iter().flat_map(|d| &d.records))
        .find_map(|step| step.record.body.action.as_ref().and_then(|a| a.sandbox.clone()))
        .expect("the ledger row keeps the profile");
    match profile.enforcement {
        Enforcement::Unconfined { reason } => reason,
        Enforcement::Confined => panic!("confined without a launcher"),
    }
}

#[tokio::test]
async fn a_policy_that_requires_the_sandbox_forbids_commands_where_it_cannot_be_built() {
    let (_tmp, dir) = folder();
    let hub = hub(&dir, &format!(r#"{{ "sandbox": {{ "mode": "required" }}, {ALLOW_TOUCH} }}"#)).await;
    let result = hub
        .call("s", "shell", "shell", json!({"command": "touch made"}), "test", CancellationToken::new())
        .await;
    let CallOutcome::Blocked { error, .. } = &result.outcome else { panic!("{result:?}") };
    assert!(error.message.contains("requires the sandbox"), "{}", error.message);
    assert!(error.message.contains("without a sandbox launcher"), "{}", error.message);
    assert!(!dir.join("proj/made").exists(), "the command ran");
    hub.close().await.unwrap();
    // The refused call's row keeps the profile that could not be built.
    assert!(unconfined_reason(&dir, &result.call_id).contains("without a sandbox launcher"));
}
