//! Fuzz target: MCP messages (JSON-RPC envelopes, tool lists, tool results, tools/call params) mapped to
//! harness types and back. Body: `portcullis_mcp::fuzzing::mcp_mapping`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(broken) = portcullis_mcp::fuzzing::mcp_mapping(data) {
        panic!("{broken}");
    }
});
