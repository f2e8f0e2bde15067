//! The body of the hub's fuzz target (`fuzz/fuzz_targets/claude_hook.rs`), shared with the replay of its
//! corpus in this crate's integration tests. Not an API: hidden from the docs, and it may change at any
//! time.

use crate::hook::{HookAnswer, governs, map_tool, parse_input};
use portcullis_harness::ActionKind;
use portcullis_policy::fuzzing::{HOME, default_policy};
use portcullis_policy::{EvalContext, verdict_of};
use std::path::PathBuf;

/// `claude_hook`: a `PreToolUse` hook input as `portcullis hook claude` and the hub's `/v1/hook/claude`
/// read it (parsed and checked, mapped to a registry tool and the action it would take), then judged
/// by the shipped default policy as the pipeline judges it (what it governs, the policy's verdict).
/// `Err` when the default policy does not load.
pub fn claude_hook(text: &str) -> Result<(), String> {
    let policy = default_policy()?;
    let input = match parse_input(text) {
        Ok(input) => input,
        Err(why) => {
            std::hint::black_box(HookAnswer::deny(why).to_hook_output());
            return Ok(());
        }
    };
    let Ok((name, action)) = map_tool(&input) else { return Ok(()) };
    if !governs(policy, &name) {
        return Ok(());
    }
    let evaluation = if action.kind == ActionKind::Mcp {
        policy.evaluate_mcp_tool(&name)
    } else {
        policy.evaluate_action(
            &action,
            &EvalContext { cwd: input.cwd.clone(), home: Some(PathBuf::from(HOME)) },
        )
    };
    std::hint::black_box(verdict_of(&evaluation));
    Ok(())
}
