//! Portcullis policy: decides what an agent's tool call may do. Policy documents (JSON, layered), their
//! evaluation over parsed shell commands (tree-sitter-bash) and canonical paths, inline rule examples
//! checked at load, and test cases. Pure: no IO except reading policy files and resolving paths.

pub mod document;
pub mod paths;
pub mod policy;
pub mod shell;

pub use document::{Access, Decision, PolicyDocument, policy_json_schema};
pub use policy::{
    CallVerdict, EvalContext, Evaluation, MatchedRule, Policy, PolicyError, PolicyLayer, TestOutcome,
};
