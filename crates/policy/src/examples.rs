//! Checking a policy against its own claims: every rule's `match` / `not_match` examples (at load, and
//! all of them for `portcullis policy test`) and every test case (`call` → expected decision).

use crate::paths::resolve;
use crate::policy::{Policy, PolicyError, tokens};
use crate::shell::analyze;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

impl Policy {
    /// Every `match` example must be matched by its rule and every `not_match` example must not: the
    /// first that fails refuses the policy.
    pub(crate) fn check_examples(&self) -> Result<(), PolicyError> {
        match self.example_outcomes().into_iter().find(|o| !o.passed) {
            None => Ok(()),
            Some(failed) => Err(PolicyError::Rule {
                file: failed.source,
                line: failed.line,
                column: failed.column,
                rule: failed.rule,
                message: format!(
                    "example {:?} {}",
                    failed.example,
                    if failed.should_match {
                        "should match but does not"
                    } else {
                        "should not match but does"
                    }
                ),
            }),
        }
    }

    /// Every rule example with whether it holds.
    pub fn example_outcomes(&self) -> Vec<ExampleOutcome> {
        let mut outcomes = Vec::new();
        for layer in self.layers() {
            for rule in &layer.document.commands.rules {
                let matches = |example: &str| {
                    analyze(example).commands.iter().any(|c| {
                        let t = tokens(c);
                        crate::document::pattern_matches(&rule.pattern, rule.exact, &t)
                    })
                };
                for (examples, should_match) in [(&rule.examples, true), (&rule.not_match, false)] {
                    for example in examples {
                        let passed = matches(example) == should_match;
                        // Only a failing example needs its position (searching the text is not free).
                        let (line, column) = if passed {
                            (0, 0)
                        } else {
                            layer.locate(&format!("\"{}\"", example.replace('"', "\\\"")))
                        };
                        outcomes.push(ExampleOutcome {
                            source: layer.source.clone(),
                            line,
                            column,
                            rule: rule.id.clone(),
                            example: example.clone(),
                            should_match,
                            passed,
                        });
                    }
                }
            }
        }
        outcomes
    }

    /// Every test case of every layer, ready to be judged: its call and the folder it is made from
    /// (the case's `cwd` resolved against its layer's project, else the project). Judging is the
    /// pipeline's (the hub's `api::judge`), so that a test meets what a live call meets.
    pub fn test_calls(&self, home: Option<&Path>) -> Vec<TestCall> {
        let mut calls = Vec::new();
        for layer in self.layers() {
            for (index, case) in layer.document.tests.iter().enumerate() {
                let cwd = match case.cwd.as_deref().map(|c| resolve(c, &layer.project_root, home)) {
                    None => Ok(layer.project_root.clone()),
                    Some(Ok(cwd)) => Ok(cwd),
                    Some(Err(e)) => Err(e.to_string()),
                };
                calls.push(TestCall {
                    source: layer.source.clone(),
                    project: layer.project_root.clone(),
                    name: case.name.clone().unwrap_or_else(|| format!("test #{}", index + 1)),
                    tool: case.call.name.clone(),
                    arguments: case.call.arguments.clone(),
                    cwd,
                    expect: case.expect.clone(),
                });
            }
        }
        calls
    }
}

/// A test case's call, ready to be judged.
#[derive(Debug, Clone, PartialEq)]
pub struct TestCall {
    /// The policy file that holds it.
    pub source: String,
    /// Its layer's project folder (where the coding tools are rooted).
    pub project: PathBuf,
    pub name: String,
    pub tool: String,
    pub arguments: serde_json::Value,
    /// The folder the call is made from, or why the case's `cwd` does not resolve.
    pub cwd: Result<PathBuf, String>,
    /// `allow`, `prompt`, `forbidden`, or a blocked reason.
    pub expect: String,
}

/// One rule example's result (`line`/`column` are given for failing examples, 0 otherwise).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExampleOutcome {
    pub source: String,
    pub line: usize,
    pub column: usize,
    pub rule: String,
    pub example: String,
    /// A `match` example (true) or a `not_match` one.
    pub should_match: bool,
    pub passed: bool,
}

/// One test case's result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TestOutcome {
    pub source: String,
    pub name: String,
    pub expected: String,
    pub got: String,
    pub passed: bool,
    pub decided_by: String,
}
