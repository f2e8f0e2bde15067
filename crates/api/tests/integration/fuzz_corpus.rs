//! Replays the committed inputs of the `claude_hook` fuzz target (`fuzz/corpus/claude_hook/` and
//! `fuzz/regressions/claude_hook/`) through the body the fuzz target runs, on stable Rust.

use portcullis_harness::fuzzing::replay;
use portcullis_hub::fuzzing::claude_hook;

#[test]
fn claude_hook_inputs_replay() {
    let replayed = replay("claude_hook", |b| std::str::from_utf8(b).map_or(Ok(()), claude_hook));
    assert!(replayed.as_ref().is_ok_and(|n| *n > 0), "{replayed:?}");
}
