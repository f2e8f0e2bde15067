//! The body of the harness's fuzz target (`fuzz/fuzz_targets/schema_arguments.rs`), shared with the
//! replay of its corpus in this crate's integration tests, and the replay of committed fuzz inputs that
//! every crate's replay test uses. Not an API: hidden from the docs, and it may change at any time.

use crate::schema::SchemaValidator;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// `schema_arguments`: the input is two JSON texts one after the other (a schema, then the arguments;
/// arguments `{}` when there is no second text). The arguments are validated against the schema twice
/// (compiled, then from the cache): both answers must agree, and the schema is compiled at most once.
/// `Err` means one of these invariants broke.
pub fn schema_arguments(data: &[u8]) -> Result<(), String> {
    let mut texts = serde_json::Deserializer::from_slice(data).into_iter::<Value>();
    let Some(Ok(schema)) = texts.next() else { return Ok(()) };
    let arguments = match texts.next() {
        Some(Ok(arguments)) => arguments,
        _ => Value::Object(serde_json::Map::new()),
    };
    let validator = SchemaValidator::default();
    let first = validator.validate(&schema, &arguments);
    let second = validator.validate(&schema, &arguments);
    if first != second {
        return Err(format!("the cached schema answers differently: {first:?} then {second:?}"));
    }
    if validator.compile_count() > 1 {
        return Err(format!("the schema was compiled {} times", validator.compile_count()));
    }
    Ok(())
}

/// Runs a fuzz target's body on each of its committed inputs ([`corpus_inputs`]) and returns how many
/// there were; the error names the first input whose body failed, and why.
pub fn replay(target: &str, body: impl Fn(&[u8]) -> Result<(), String>) -> Result<usize, String> {
    let inputs = corpus_inputs(target)?;
    for (path, bytes) in &inputs {
        body(bytes).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(inputs.len())
}

/// The committed inputs of a fuzz target, for its replay test: every file of `fuzz/corpus/<target>/`
/// and `fuzz/regressions/<target>/` (a folder that does not exist holds nothing), sorted by path.
pub fn corpus_inputs(target: &str) -> Result<Vec<(PathBuf, Vec<u8>)>, String> {
    let fuzz = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz");
    let mut inputs = Vec::new();
    for folder in [fuzz.join("corpus").join(target), fuzz.join("regressions").join(target)] {
        let entries = match std::fs::read_dir(&folder) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(format!("{}: {e}", folder.display())),
        };
        for entry in entries {
            let path = entry.map_err(|e| format!("{}: {e}", folder.display()))?.path();
            if path.is_file() {
                let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
                inputs.push((path, bytes));
            }
        }
    }
    inputs.sort();
    Ok(inputs)
}
