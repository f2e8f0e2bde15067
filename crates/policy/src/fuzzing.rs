//! The bodies of the policy crate's fuzz targets (`fuzz/fuzz_targets/shell_analyzer.rs`,
//! `policy_document.rs`), shared with the replay of their corpora in this crate's integration tests, so
//! both run exactly the same code. Not an API: hidden from the docs, and it may change at any time.
//!
//! Each function takes any text and must return without panicking; `Err` means an invariant checked
//! here broke (the caller panics on it, which the fuzzer reports as a crash).

use crate::discovery::{DEFAULT_POLICY, DEFAULT_POLICY_SOURCE};
use crate::evaluation::{EvalContext, Evaluation};
use crate::layer::PolicyLayer;
use crate::policy::Policy;
use crate::shell::analyze;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The project folder of every fuzzed evaluation. It does not exist, so that what an evaluation
/// resolves does not depend on the machine (the resolver appends a missing tail lexically).
pub const PROJECT: &str = "/portcullis-fuzz/project";
/// The home folder of every fuzzed evaluation (`~` in commands and policies).
pub const HOME: &str = "/portcullis-fuzz/home";

/// The evaluation context of fuzzed calls: the fixed project folder and home.
pub fn context() -> EvalContext {
    EvalContext { cwd: PathBuf::from(PROJECT), home: Some(PathBuf::from(HOME)) }
}

/// The shipped default policy (`tool-manifests/policies/default.json`) rooted at [`PROJECT`], loaded
/// once; the error says why it did not load.
pub fn default_policy() -> Result<&'static Policy, String> {
    static POLICY: OnceLock<Result<Policy, String>> = OnceLock::new();
    POLICY
        .get_or_init(|| {
            let layer = PolicyLayer::parse(DEFAULT_POLICY_SOURCE, DEFAULT_POLICY, PathBuf::from(PROJECT))
                .map_err(|e| e.to_string())?;
            Policy::from_layers(vec![layer]).map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// An evaluation survives the JSON round trip the ledger and the operator API put it through.
fn round_trips(evaluation: &Evaluation) -> Result<(), String> {
    let json =
        serde_json::to_string(evaluation).map_err(|e| format!("evaluation does not serialize: {e}"))?;
    let back: Evaluation =
        serde_json::from_str(&json).map_err(|e| format!("evaluation does not deserialize: {e}: {json}"))?;
    if &back != evaluation {
        return Err(format!("evaluation changed through JSON: {json}"));
    }
    Ok(())
}

/// `shell_analyzer`: the shell analysis of `script`, and the default policy's evaluation of it.
pub fn shell_analyzer(script: &str) -> Result<(), String> {
    let policy = default_policy()?;
    let analysis = analyze(script);
    std::hint::black_box(&analysis);
    let evaluation = policy.evaluate_command(script, &context());
    round_trips(&evaluation)
}

/// `policy_document`: a policy document loaded from text as `portcullis policy check --policy FILE`
/// loads it (parsed, then layered and checked: roots resolved, servers and rules checked, rule examples
/// run: [`Policy::from_layers`]); when it loads, a few fixed calls are evaluated under it.
pub fn policy_document(text: &str) -> Result<(), String> {
    let source = "/portcullis-fuzz/project/.portcullis/policy.json";
    let Ok(layer) = PolicyLayer::parse(source, text, PathBuf::from(PROJECT)) else {
        return Ok(());
    };
    let Ok(policy) = Policy::from_layers(vec![layer]) else { return Ok(()) };
    let ctx = context();
    round_trips(&policy.evaluate_command("ls -la src && rm -rf ~/x > out.txt", &ctx))?;
    round_trips(&policy.evaluate_path("../outside/file", crate::Access::Write, &ctx))?;
    for server in policy.servers() {
        round_trips(&policy.evaluate_mcp_tool(&format!("mcp:{}:tool", server.server.id)))?;
    }
    std::hint::black_box(policy.test_calls(Some(Path::new(HOME))));
    Ok(())
}
