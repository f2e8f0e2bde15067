//! Checking a policy against its own claims: every rule's `match` / `not_match` examples (at load, and
//! all of them for `portcullis policy test`) and every test case (`call` → expected decision).

use crate::document::PolicyTestCase;
use crate::paths::resolve;
use crate::policy::{CallVerdict, EvalContext, Policy, PolicyError, PolicyLayer, tokens};
use crate::shell::analyze;
use serde::{Deserialize, Serialize};
use std::path::Path;

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
                        t.len() >= rule.pattern.len()
                            && rule.pattern.iter().zip(&t).all(|(p, t)| p.matches(t))
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

    /// Runs every test case of every layer.
    pub fn run_tests(&self, home: Option<&Path>) -> Vec<TestOutcome> {
        let mut outcomes = Vec::new();
        for layer in self.layers() {
            for (index, case) in layer.document.tests.iter().enumerate() {
                outcomes.push(self.run_test(layer, index, case, home));
            }
        }
        outcomes
    }

    fn run_test(
        &self,
        layer: &PolicyLayer,
        index: usize,
        case: &PolicyTestCase,
        home: Option<&Path>,
    ) -> TestOutcome {
        let name = case.name.clone().unwrap_or_else(|| format!("test #{}", index + 1));
        let cwd = match case.cwd.as_deref().map(|c| resolve(c, &layer.project_root, home)) {
            None => layer.project_root.clone(),
            Some(Ok(cwd)) => cwd,
            Some(Err(e)) => {
                return TestOutcome {
                    source: layer.source.clone(),
                    name,
                    expected: case.expect.clone(),
                    got: "invalid_cwd".into(),
                    passed: false,
                    decided_by: e.to_string(),
                };
            }
        };
        let ctx = EvalContext { cwd, home: home.map(Path::to_path_buf) };
        let verdict = self.evaluate_call(&case.call.name, &case.call.arguments, &ctx);
        let (got, decided_by) = match &verdict {
            CallVerdict::Blocked { reason, detail } => (reason.clone(), detail.clone()),
            CallVerdict::Evaluated(e) => (
                e.decision.as_str().to_owned(),
                e.deciding_rule
                    .as_ref()
                    .map(|r| format!("rule {} ({})", r.id, r.source))
                    .unwrap_or_else(|| e.reasons.last().cloned().unwrap_or_else(|| "default".into())),
            ),
        };
        TestOutcome {
            source: layer.source.clone(),
            name,
            expected: case.expect.clone(),
            got: got.clone(),
            passed: got == case.expect,
            decided_by,
        }
    }
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
