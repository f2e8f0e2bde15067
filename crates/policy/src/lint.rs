//! `portcullis policy lint`: rules that can never match (the analyzer never produces the tokens they
//! name), rules a stricter broader rule shadows, allow rules such a rule silently voids, and redundant
//! rules. Matching is a token prefix, so "broader" is decidable: a pattern covers another when it is no
//! longer and each of its elements accepts every alternative of the other's element at that position.

use crate::document::{CommandRule, Decision, PatternElement};
use crate::policy::Policy;
use crate::rule::tokens_of;
use crate::shell::analyze;
use serde::{Deserialize, Serialize};

/// How much a finding matters: warnings fail `portcullis policy lint`, notes do not.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    Note,
    Warning,
}

/// What is wrong with a rule.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LintKind {
    /// No command the analyzer produces can match the pattern.
    NeverMatches,
    /// An allow rule that a broader prompt or forbidden rule covers: it never allows anything.
    VoidedAllow,
    /// A prompt rule that a broader forbidden rule covers.
    Shadowed,
    /// A broader rule with the same decision already covers it.
    Redundant,
    /// No `match` example: nothing proves the rule matches what its author meant.
    NoExamples,
}

/// One finding about one rule.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LintFinding {
    pub kind: LintKind,
    pub severity: Severity,
    pub rule: String,
    pub source: String,
    pub line: usize,
    pub column: usize,
    pub message: String,
    /// The other rule involved (the one that shadows, voids or makes it redundant).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub related: Option<RelatedRule>,
}

#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RelatedRule {
    pub rule: String,
    pub source: String,
    pub decision: Decision,
}

fn alternatives(element: &PatternElement) -> &[String] {
    match element {
        PatternElement::Token(t) => std::slice::from_ref(t),
        PatternElement::AnyOf(list) => list,
    }
}

/// Whether every command `narrow` matches is also matched by `broad`.
pub fn covers(broad: &[PatternElement], narrow: &[PatternElement]) -> bool {
    broad.len() <= narrow.len()
        && broad.iter().zip(narrow).all(|(b, n)| alternatives(n).iter().all(|alt| b.matches(alt)))
}

fn pattern_text(pattern: &[PatternElement]) -> String {
    pattern.iter().map(|e| alternatives(e).join("|")).collect::<Vec<_>>().join(" ")
}

/// Whether the analyzer, given `words` as a command line, produces a command `pattern` matches.
fn self_matches(pattern: &[PatternElement], words: &[&str]) -> bool {
    analyze(&words.join(" ")).commands.iter().any(|c| {
        let t = tokens_of(c);
        t.len() >= pattern.len() && pattern.iter().zip(&t).all(|(p, t)| p.matches(t))
    })
}

/// Checks one rule's pattern against the analyzer; the finding's kind and message.
fn reachability(rule: &CommandRule) -> Option<(LintKind, String)> {
    if let Some(i) = rule.pattern.iter().position(|e| alternatives(e).is_empty()) {
        return Some((LintKind::NeverMatches, format!("element {} is an empty list of alternatives", i + 1)));
    }
    if let Some(program) = alternatives(&rule.pattern[0]).iter().find(|p| p.contains('/')) {
        let base = program.rsplit('/').next().unwrap_or(program);
        return Some((
            LintKind::NeverMatches,
            format!(
                "commands are matched by program name: write {base:?}, not {program:?} (it matches /bin/{base} too)"
            ),
        ));
    }
    // Try each alternative at each position with the others at their first alternative.
    let firsts: Vec<&str> = rule.pattern.iter().map(|e| alternatives(e)[0].as_str()).collect();
    for (i, element) in rule.pattern.iter().enumerate() {
        for alt in alternatives(element) {
            let mut words = firsts.clone();
            words[i] = alt;
            let single = PatternElement::Token((*alt).clone());
            let mut pattern = rule.pattern.clone();
            pattern[i] = single;
            if !self_matches(&pattern, &words) {
                return Some((
                    LintKind::NeverMatches,
                    format!(
                        "the command `{}` is not read as these tokens (each pattern element is one shell word after quoting is resolved)",
                        words.join(" ")
                    ),
                ));
            }
        }
    }
    None
}

/// Lints every rule of every layer.
pub fn lint(policy: &Policy) -> Vec<LintFinding> {
    struct Located<'a> {
        rule: &'a CommandRule,
        source: &'a str,
        line: usize,
        column: usize,
    }
    let mut rules = Vec::new();
    for layer in policy.layers() {
        for rule in &layer.document.commands.rules {
            let (line, column) = layer.locate(&format!("\"{}\"", rule.id));
            rules.push(Located { rule, source: &layer.source, line, column });
        }
    }
    let mut findings = Vec::new();
    let finding = |at: &Located, kind, severity, message: String, related: Option<&Located>| LintFinding {
        kind,
        severity,
        rule: at.rule.id.clone(),
        source: at.source.to_owned(),
        line: at.line,
        column: at.column,
        message,
        related: related.map(|r| RelatedRule {
            rule: r.rule.id.clone(),
            source: r.source.to_owned(),
            decision: r.rule.decision,
        }),
    };
    for (i, a) in rules.iter().enumerate() {
        if let Some((kind, message)) = reachability(a.rule) {
            findings.push(finding(a, kind, Severity::Warning, message, None));
            continue;
        }
        let stricter = rules.iter().enumerate().find(|(j, b)| {
            *j != i && b.rule.decision > a.rule.decision && covers(&b.rule.pattern, &a.rule.pattern)
        });
        if let Some((_, b)) = stricter {
            let (kind, verb) = if a.rule.decision == Decision::Allow {
                (LintKind::VoidedAllow, "never allows anything")
            } else {
                (LintKind::Shadowed, "never decides anything")
            };
            findings.push(finding(
                a,
                kind,
                Severity::Warning,
                format!(
                    "{} rule `{}` ({}) {verb}: the broader {} rule `{}` ({}) matches every command it matches, and the strictest decision wins",
                    a.rule.decision.as_str(),
                    a.rule.id,
                    pattern_text(&a.rule.pattern),
                    b.rule.decision.as_str(),
                    b.rule.id,
                    pattern_text(&b.rule.pattern)
                ),
                Some(b),
            ));
            continue;
        }
        // Same decision, broader (or equal and earlier): this rule adds nothing.
        let redundant = rules.iter().enumerate().find(|(j, b)| {
            *j != i
                && b.rule.decision == a.rule.decision
                && covers(&b.rule.pattern, &a.rule.pattern)
                && (!covers(&a.rule.pattern, &b.rule.pattern) || *j < i)
        });
        if let Some((_, b)) = redundant {
            findings.push(finding(
                a,
                LintKind::Redundant,
                Severity::Warning,
                format!(
                    "rule `{}` ({}) already {}s every command this rule matches",
                    b.rule.id,
                    pattern_text(&b.rule.pattern),
                    match a.rule.decision {
                        Decision::Allow => "allow",
                        Decision::Contain => "contain",
                        Decision::Prompt => "prompt",
                        Decision::Forbidden => "forbid",
                    }
                ),
                Some(b),
            ));
            continue;
        }
        if a.rule.examples.is_empty() {
            findings.push(finding(
                a,
                LintKind::NoExamples,
                Severity::Note,
                "no `match` example: add one so the policy proves this rule matches what you meant".into(),
                None,
            ));
        }
    }
    findings
}
