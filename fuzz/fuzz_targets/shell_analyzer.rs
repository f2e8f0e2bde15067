//! Fuzz target: shell analysis and the default policy's evaluation of any UTF-8 command (never a
//! panic, a hang or unbounded memory). Body: `portcullis_policy::fuzzing::shell_analyzer`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(script) = std::str::from_utf8(data)
        && let Err(broken) = portcullis_policy::fuzzing::shell_analyzer(script)
    {
        panic!("{broken}");
    }
});
