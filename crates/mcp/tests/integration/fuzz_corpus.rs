//! Replays the committed inputs of the `mcp_mapping` fuzz target (`fuzz/corpus/mcp_mapping/` and
//! `fuzz/regressions/mcp_mapping/`) through the body the fuzz target runs, on stable Rust.

use portcullis_harness::fuzzing::replay;
use portcullis_mcp::fuzzing::mcp_mapping;

#[test]
fn mcp_mapping_inputs_replay() {
    let replayed = replay("mcp_mapping", mcp_mapping);
    assert!(replayed.as_ref().is_ok_and(|n| *n > 0), "{replayed:?}");
}
