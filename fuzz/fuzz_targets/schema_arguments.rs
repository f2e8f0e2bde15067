//! Fuzz target: JSON Schema validation of tool arguments (a schema and an instance, two JSON texts one
//! after the other). Body: `portcullis_harness::fuzzing::schema_arguments`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(broken) = portcullis_harness::fuzzing::schema_arguments(data) {
        panic!("{broken}");
    }
});
