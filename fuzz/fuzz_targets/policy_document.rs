//! Fuzz target: a policy document loaded from text as `portcullis policy check --policy FILE` loads it.
//! Body: `portcullis_policy::fuzzing::policy_document`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data)
        && let Err(broken) = portcullis_policy::fuzzing::policy_document(text)
    {
        panic!("{broken}");
    }
});
