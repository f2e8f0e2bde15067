//! Replays the committed inputs of the `schema_arguments` fuzz target (`fuzz/corpus/schema_arguments/`
//! and `fuzz/regressions/schema_arguments/`) through the body the fuzz target runs, on stable Rust.

use portcullis_harness::fuzzing::{replay, schema_arguments};

#[test]
fn schema_arguments_inputs_replay() {
    let replayed = replay("schema_arguments", schema_arguments);
    assert!(replayed.as_ref().is_ok_and(|n| *n > 0), "{replayed:?}");
}
