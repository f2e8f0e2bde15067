//! Replays the committed inputs of the policy crate's fuzz targets (`fuzz/corpus/<target>/` and
//! `fuzz/regressions/<target>/`) through the same bodies the fuzz targets run, on stable Rust: what the
//! fuzzer once found stays fixed. A panic fails the test as it crashed the fuzzer.

use portcullis_harness::fuzzing::replay;
use portcullis_policy::fuzzing::{policy_document, shell_analyzer};

#[test]
fn shell_analyzer_inputs_replay() {
    let replayed = replay("shell_analyzer", |b| std::str::from_utf8(b).map_or(Ok(()), shell_analyzer));
    assert!(replayed.as_ref().is_ok_and(|n| *n > 0), "{replayed:?}");
}

#[test]
fn policy_document_inputs_replay() {
    let replayed = replay("policy_document", |b| std::str::from_utf8(b).map_or(Ok(()), policy_document));
    assert!(replayed.as_ref().is_ok_and(|n| *n > 0), "{replayed:?}");
}
