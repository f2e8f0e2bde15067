//! Portcullis policy: decides what an agent's tool call may do. Policy documents (JSON, layered), their
//! evaluation over parsed shell commands (tree-sitter-bash) and canonical paths, inline rule examples
//! checked at load, test cases, lint and what-if replay; the harness execution-policy adapter and the
//! approvers above it. No IO except reading policy files, resolving paths, and appending an operator's
//! "always" rule to a policy file.

mod always_target;
mod amendment;
pub mod approval;
pub mod discovery;
pub mod document;
pub mod evaluate;
mod evaluation;
mod examples;
mod executed;
mod file_writes;
mod folders;
#[doc(hidden)]
pub mod fuzzing;
pub mod host_approval;
mod judge;
mod judge_files;
pub mod judgement;
mod layer;
pub mod lint;
pub mod live;
mod mcp;
pub mod paths;
pub mod policy;
pub mod protected;
pub mod replay;
mod rule;
pub mod sandbox;
pub mod shell;
pub mod snapshot;
mod splice;
mod version;

pub use amendment::{Amendment, RuleScope};
pub use approval::{
    ApprovalChoice, ApprovalPrompt, DenyingApprover, OperatorApprover, Prompter, SessionGrant, SessionGrants,
    append_amendment,
};
pub use document::{Access, Decision, PolicyDocument, policy_json_schema};
pub use evaluate::Analyzed;
pub use evaluation::{
    CallVerdict, DecidingPlace, EvalContext, Evaluation, MatchedRule, Part, PartKind, PathVerdict,
};
pub use examples::{ExampleCommands, ExampleOutcome, TestCall, TestOutcome, why_no_match};
pub use executed::{LOOK_ALIKE, find as executed_place, repository_look_alike};
pub use judge_files::{MAX_FILES_PER_EVALUATION, MAX_PATTERN_MATCHES};
pub use layer::{PolicyError, PolicyLayer};
pub use live::{LivePolicy, verdict_of};
pub use policy::{Policy, RootSet};
pub use protected::{KindRules, ProtectedKind, ProtectedPaths};
