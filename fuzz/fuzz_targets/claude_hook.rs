//! Fuzz target: Claude Code `PreToolUse` hook inputs, parsed, mapped to a tool and an action, judged by
//! the default policy. Body: `portcullis_hub::fuzzing::claude_hook`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data)
        && let Err(broken) = portcullis_hub::fuzzing::claude_hook(text)
    {
        panic!("{broken}");
    }
});
