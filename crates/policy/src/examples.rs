//! Checking a policy against its own claims: every rule's `match` / `not_match` examples (at load, and
//! all of them for `portcullis policy test`) and every test case (`call` → expected decision).

use crate::document::PatternElement;
use crate::layer::PolicyError;
use crate::paths::resolve;
use crate::policy::Policy;
use crate::rule::tokens;
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
        self.example_outcomes_with(&mut ExampleCommands::default())
    }

    /// Every rule example with whether it holds, and why a failing one fails; the examples' commands
    /// are parsed once per text and kept in `parsed` (an editor re-checks a draft as it is typed).
    pub fn example_outcomes_with(&self, parsed: &mut ExampleCommands) -> Vec<ExampleOutcome> {
        let mut outcomes = Vec::new();
        for layer in self.layers() {
            for (rule_index, rule) in layer.document.commands.rules.iter().enumerate() {
                for (examples, should_match) in [(&rule.examples, true), (&rule.not_match, false)] {
                    for (example_index, example) in examples.iter().enumerate() {
                        let commands = parsed.of(example);
                        let matching = commands
                            .iter()
                            .find(|t| crate::document::pattern_matches(&rule.pattern, rule.exact, t));
                        let passed = matching.is_some() == should_match;
                        // Only a failing example needs its position and reason (neither is free).
                        let (line, column, why) = if passed {
                            (0, 0, None)
                        } else {
                            let (line, column) =
                                layer.locate(&format!("\"{}\"", example.replace('"', "\\\"")));
                            let why = match matching {
                                Some(command) => format!("`{}` matches the pattern", command.join(" ")),
                                None => why_no_match(&rule.pattern, rule.exact, commands),
                            };
                            (line, column, Some(why))
                        };
                        outcomes.push(ExampleOutcome {
                            source: layer.source.clone(),
                            line,
                            column,
                            rule: rule.id.clone(),
                            example: example.clone(),
                            should_match,
                            passed,
                            rule_index,
                            example_index,
                            why,
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
#[cfg_attr(feature = "specta", derive(specta::Type))]
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
    /// The rule's place in its layer's `commands.rules`.
    #[serde(default)]
    pub rule_index: usize,
    /// The example's place in the rule's `match` (or `not_match`) list.
    #[serde(default)]
    pub example_index: usize,
    /// Why a failing example fails: the word that differs from the pattern, or the sub-command that
    /// matches a `not_match` example.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}

/// The commands (pattern tokens of each simple command) of example texts, parsed once per text.
#[derive(Debug, Default)]
pub struct ExampleCommands {
    parsed: std::collections::HashMap<String, Vec<Vec<String>>>,
}

/// Most example texts kept parsed (beyond, the cache starts over).
const MAX_PARSED_EXAMPLES: usize = 50_000;

impl ExampleCommands {
    /// The pattern tokens of each simple command of `example`.
    pub fn of(&mut self, example: &str) -> &[Vec<String>] {
        if !self.parsed.contains_key(example) {
            if self.parsed.len() >= MAX_PARSED_EXAMPLES {
                self.parsed.clear();
            }
            let commands = analyze(example)
                .commands
                .iter()
                .map(|c| tokens(c).into_iter().map(str::to_owned).collect())
                .collect();
            self.parsed.insert(example.to_owned(), commands);
        }
        self.parsed.get(example).map(Vec::as_slice).unwrap_or_default()
    }
}

/// Why none of `commands` matches `pattern`: the sub-command that comes closest, and the word where
/// it leaves the pattern.
pub fn why_no_match(pattern: &[PatternElement], exact: bool, commands: &[Vec<String>]) -> String {
    let prefix = |t: &Vec<String>| pattern.iter().zip(t).take_while(|(p, t)| p.matches(t)).count();
    let Some((command, matched)) = commands.iter().map(|c| (c, prefix(c))).max_by_key(|(_, m)| *m) else {
        return "it holds no command".to_owned();
    };
    let shown = command.join(" ");
    match (pattern.get(matched), command.get(matched)) {
        (Some(wanted), Some(word)) => {
            format!(
                "word {} of `{shown}` is `{word}`; the pattern wants {}",
                matched + 1,
                wanted_words(wanted)
            )
        }
        (Some(wanted), None) => format!(
            "`{shown}` ends after {matched} word{}; the pattern wants {} next",
            if matched == 1 { "" } else { "s" },
            wanted_words(wanted)
        ),
        (None, Some(word)) if exact => {
            format!("the rule is exact and `{shown}` goes on with `{word}`")
        }
        _ => format!("`{shown}` matches the pattern"),
    }
}

fn wanted_words(element: &PatternElement) -> String {
    match element {
        PatternElement::Token(t) => format!("`{t}`"),
        PatternElement::AnyOf(list) => {
            format!("one of {}", list.iter().map(|t| format!("`{t}`")).collect::<Vec<_>>().join(", "))
        }
    }
}

/// One test case's result.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TestOutcome {
    pub source: String,
    pub name: String,
    pub expected: String,
    pub got: String,
    pub passed: bool,
    pub decided_by: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pattern(words: &[&str]) -> Vec<PatternElement> {
        words
            .iter()
            .map(|w| match w.split_once('|') {
                Some(_) => PatternElement::AnyOf(w.split('|').map(str::to_owned).collect()),
                None => PatternElement::Token((*w).to_owned()),
            })
            .collect()
    }

    fn commands(example: &str) -> Vec<Vec<String>> {
        ExampleCommands::default().of(example).to_vec()
    }

    /// Each row: pattern, exact, example, why it does not match.
    const WHY: &[(&[&str], bool, &str, &str)] = &[
        (&["git", "status"], false, "git push", "word 2 of `git push` is `push`; the pattern wants `status`"),
        (&["git", "status"], false, "git", "`git` ends after 1 word; the pattern wants `status` next"),
        (
            &["git", "log|show"],
            false,
            "git diff HEAD",
            "word 2 of `git diff HEAD` is `diff`; the pattern wants one of `log`, `show`",
        ),
        (
            &["git", "push"],
            true,
            "git push --force",
            "the rule is exact and `git push --force` goes on with `--force`",
        ),
        (
            &["npm", "test"],
            false,
            "cd x && npm run test",
            "word 2 of `npm run test` is `run`; the pattern wants `test`",
        ),
        (&["ls"], false, "", "it holds no command"),
        (&["ls"], false, "cat a", "word 1 of `cat a` is `cat`; the pattern wants `ls`"),
    ];

    #[test]
    fn a_failing_example_says_which_word_left_the_pattern() {
        for (words, exact, example, why) in WHY {
            assert_eq!(why_no_match(&pattern(words), *exact, &commands(example)), *why, "{example}");
        }
    }

    #[test]
    fn parsed_examples_are_kept_by_text() {
        let mut parsed = ExampleCommands::default();
        assert_eq!(parsed.of("/bin/rm -rf x | cat"), &[vec!["rm", "-rf", "x"], vec!["cat"]]);
        assert_eq!(parsed.parsed.len(), 1);
        parsed.of("/bin/rm -rf x | cat");
        assert_eq!(parsed.parsed.len(), 1);
    }
}

#[cfg(test)]
mod rule_lines {
    use crate::layer::PolicyLayer;

    /// The one-pass rule lines agree with the per-rule search, on every policy the repository holds and
    /// on ids that need escapes or appear as another member's value first.
    #[test]
    fn rules_are_located_in_one_pass_as_one_by_one() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let mut texts: Vec<String> = Vec::new();
        for dir in ["tests/policy-corpus", "tool-manifests/policies"] {
            for entry in std::fs::read_dir(root.join(dir)).unwrap() {
                let path = entry.unwrap().path();
                let file = if path.is_dir() { path.join("policy.json") } else { path };
                if file.extension().is_some_and(|e| e == "json") && file.is_file() {
                    texts.push(std::fs::read_to_string(file).unwrap());
                }
            }
        }
        assert!(texts.len() >= 8);
        texts.push(
            r#"{ "tests": [ { "name": "x", "call": { "name": "shell", "arguments": { "id": "b" } }, "expect": "allow" } ],
  "commands": { "rules": [
    { "id": "a \"quoted\" id", "pattern": ["a"], "decision": "allow" },
    { "id": "b", "pattern": ["b"], "decision": "allow" }
  ] } }"#
                .into(),
        );
        for text in texts {
            let layer = PolicyLayer::parse("p.json", &text, "/tmp".into()).unwrap();
            let lines = layer.member_lines("commands", "id");
            for rule in &layer.document.commands.rules {
                assert_eq!(
                    lines.get(&rule.id).copied(),
                    Some(layer.locate_member("commands", "id", &rule.id).0),
                    "{}",
                    rule.id
                );
            }
        }
    }
}
