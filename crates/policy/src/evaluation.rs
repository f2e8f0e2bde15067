//! What an evaluation answers: the decision, the rules that matched, and the verdict of each part of a
//! shell command, so that an operator sees why a call prompts and which part caused it; where it
//! happens (the working folder and home it judges from); and agent text cut to fit a reason.

use crate::document::{Access, Decision};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// A rule that matched, with the file it came from.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MatchedRule {
    pub id: String,
    pub source: String,
    /// The line of `source` that declares the rule (1-based; 0 when the text is not known, e.g. a
    /// built-in policy or a record written before lines were kept).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub line: usize,
    pub decision: Decision,
}

/// A protected place that decided (no rule can loosen what it says): what it is, its kind, the path.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DecidingPlace {
    pub kind: portcullis_harness::ProtectedKind,
    /// What the place is ("Claude Code settings (hooks and commands run code)").
    pub place: String,
    /// The path the call touches there (canonical where it resolves, else the pattern as written).
    pub path: String,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// The answer of an evaluation, with the evidence.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Evaluation {
    pub decision: Decision,
    /// Every rule that matched any sub-command (in order of appearance).
    pub matched_rules: Vec<MatchedRule>,
    /// The commands seen (argv of each simple command, wrappers unwrapped).
    pub commands: Vec<Vec<String>>,
    /// Canonical paths checked.
    pub paths: Vec<String>,
    /// Every file the call reads or writes (redirections, the files a program's operands and options
    /// name, the read/write tools' paths), each with its access and the policy's verdict on it alone.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub accesses: Vec<PathVerdict>,
    /// Why, one line each.
    pub reasons: Vec<String>,
    /// The rule that gave the final decision, if a rule did (else the default or a path rule decided).
    pub deciding_rule: Option<MatchedRule>,
    /// The reason that set the final decision (one of `reasons`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deciding_reason: Option<String>,
    /// The protected place that gave the final decision, if one did (then no rule did). Boxed: rare,
    /// and an evaluation travels by value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deciding_place: Option<Box<DecidingPlace>>,
    /// A shell command's parts, each with its own verdict: sub-commands, redirections and what the
    /// parser could not see through (empty for other actions and for records written before parts).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parts: Vec<Part>,
}

/// One part of a shell command and the policy's word on it alone.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Part {
    pub kind: PartKind,
    /// The sub-command's words, the redirection (`> out.txt`), or the construct's source text.
    pub text: String,
    /// The strictest decision this part alone raised (allow when it raised nothing).
    pub decision: Decision,
    /// The rule that decided this part, if a rule did.
    pub rule: Option<MatchedRule>,
    /// The protected place that decided this part, if one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub place: Option<Box<DecidingPlace>>,
    /// Why this part got its decision (the first reason at its level).
    pub reason: Option<String>,
    /// Every reason this part raised.
    pub reasons: Vec<String>,
    /// The paths checked for this part, canonical where they resolve.
    pub paths: Vec<String>,
    /// The files this part reads or writes, each with its verdict.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub accesses: Vec<PathVerdict>,
    /// Some of it is only known at run time (an expansion, a substitution, a construct the parser
    /// cannot see through), so it was judged without being seen.
    pub unseen: bool,
}

/// One file read or written, and the policy's word on that access alone.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PathVerdict {
    /// Canonical where it resolves; as written when it does not (or when it is computed at run time).
    pub path: String,
    pub access: Access,
    /// The whole tree below `path` is read or written (`grep -r`, `rg`, `cp -r`, `rm -r`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub recursive: bool,
    /// How the command reaches it: `<`, `>`, `tee`, `cat operand`, `sort -o`, `read tool`...
    pub via: String,
    pub decision: Decision,
    /// Why it got its decision (the first reason at its level); none when nothing was raised.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// What a [`Part`] is.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PartKind {
    /// A simple command (wrappers unwrapped).
    Command,
    /// A file read or written by a redirection or a writing program (`tee`, `sed -i`).
    Redirection,
    /// A construct whose effect is only known at run time (`eval`, interpreter code, a parse error).
    Unseen,
}

impl Evaluation {
    pub(crate) fn new() -> Self {
        Evaluation {
            decision: Decision::Allow,
            matched_rules: Vec::new(),
            commands: Vec::new(),
            paths: Vec::new(),
            accesses: Vec::new(),
            reasons: Vec::new(),
            deciding_rule: None,
            deciding_reason: None,
            deciding_place: None,
            parts: Vec::new(),
        }
    }

    /// Judges one part on its own (`judge` raises into a fresh evaluation), records its verdict, and
    /// folds it into this one exactly as if `judge` had raised here.
    pub(crate) fn judge_part(
        &mut self,
        kind: PartKind,
        text: String,
        unseen: bool,
        judge: impl FnOnce(&mut Evaluation),
    ) {
        let mut part = Evaluation::new();
        judge(&mut part);
        self.parts.push(Part {
            kind,
            text,
            decision: part.decision,
            rule: part.deciding_rule.clone(),
            place: part.deciding_place.clone(),
            reason: part.deciding_reason.clone(),
            reasons: part.reasons.clone(),
            paths: part.paths.clone(),
            accesses: part.accesses.clone(),
            unseen,
        });
        self.fold(part);
    }

    /// Judges one file access on its own, records its verdict in `accesses`, and folds it into this
    /// evaluation exactly as if `judge` had raised here.
    pub(crate) fn judge_access(
        &mut self,
        path: &str,
        access: Access,
        recursive: bool,
        via: &str,
        judge: impl FnOnce(&mut Evaluation),
    ) {
        let mut one = Evaluation::new();
        judge(&mut one);
        self.accesses.push(PathVerdict {
            path: one.paths.first().cloned().unwrap_or_else(|| path.to_owned()),
            access,
            recursive,
            via: via.to_owned(),
            decision: one.decision,
            reason: one.deciding_reason.clone(),
        });
        self.fold(one);
    }

    /// Takes in what `other` raised, as if it had been raised here.
    fn fold(&mut self, part: Evaluation) {
        self.matched_rules.extend(part.matched_rules);
        self.paths.extend(part.paths);
        self.accesses.extend(part.accesses);
        if part.decision > self.decision
            || (part.decision == self.decision
                && self.deciding_rule.is_none()
                && part.deciding_rule.is_some())
        {
            if part.decision > self.decision {
                self.deciding_rule = None;
                self.deciding_place = None;
            }
            self.decision = part.decision;
            if part.deciding_rule.is_some() {
                self.deciding_rule = part.deciding_rule;
                self.deciding_place = None;
            } else if part.deciding_place.is_some() {
                self.deciding_place = part.deciding_place;
            }
            if part.deciding_reason.is_some() {
                self.deciding_reason = part.deciding_reason;
            }
        }
        self.reasons.extend(part.reasons);
    }

    /// Raises the decision to `decision` if stricter, recording why.
    pub(crate) fn raise(&mut self, decision: Decision, reason: String, rule: Option<&MatchedRule>) {
        self.raise_by(decision, reason, rule, None);
    }

    /// Raises the decision to `decision` if stricter because the call touches a protected place.
    pub(crate) fn raise_at(&mut self, decision: Decision, reason: String, place: DecidingPlace) {
        self.raise_by(decision, reason, None, Some(Box::new(place)));
    }

    fn raise_by(
        &mut self,
        decision: Decision,
        reason: String,
        rule: Option<&MatchedRule>,
        place: Option<Box<DecidingPlace>>,
    ) {
        if decision > self.decision
            || (decision == self.decision && self.deciding_rule.is_none() && rule.is_some())
        {
            if decision > self.decision {
                self.deciding_rule = None;
                self.deciding_place = None;
            }
            self.decision = decision;
            if let Some(rule) = rule {
                self.deciding_rule = Some(rule.clone());
                self.deciding_place = None;
            } else if place.is_some() {
                self.deciding_place = place;
            }
            self.deciding_reason = Some(reason.clone());
        }
        self.reasons.push(reason);
    }
}

/// A tool call's verdict: blocked before any policy rule (grants, missing arguments), or evaluated.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum CallVerdict {
    Blocked { reason: String, detail: String },
    Evaluated(Evaluation),
}

/// Where an evaluation happens.
#[derive(Debug, Clone)]
pub struct EvalContext {
    pub cwd: PathBuf,
    pub home: Option<PathBuf>,
}

impl EvalContext {
    pub fn new(cwd: impl Into<PathBuf>) -> Self {
        EvalContext { cwd: cwd.into(), home: std::env::var_os("HOME").map(PathBuf::from) }
    }

    /// This context with its cwd canonical, so that every path of an evaluation is resolved from it
    /// without resolving the cwd again; `None` when the cwd cannot be resolved.
    pub(crate) fn canonical(&self) -> Option<EvalContext> {
        let cwd =
            portcullis_harness::paths::canonicalize_lenient_with(&self.cwd, &mut crate::snapshot::look_once)
                .ok()?;
        Some(EvalContext { cwd, home: self.home.clone() })
    }
}

/// Agent text cut to 160 characters for a reason or a part. Its control and invisible characters are
/// kept as they are: every place that shows it escapes them the one way (`untrusted::visible`, the
/// window's `visible()`), so a command reads the same in its parts, its reasons and its command line.
pub(crate) fn shorten(text: &str) -> String {
    cut(text, 160)
}

/// `text` cut to `max` characters, with `…` when cut; nothing else changed (see [`shorten`]).
pub(crate) fn cut(text: &str, max: usize) -> String {
    let kept: String = text.chars().take(max).collect();
    if text.chars().count() > max { format!("{kept}…") } else { kept }
}
