//! What the policy's rules did lately, through the operator API (the policy editor shows it beside each
//! rule): calls each rule decided in the hub's ledger over the last day and week, and the shell commands
//! the policy prompted for most this week, each with its words when it is one simple command (parsed as
//! the policy parses it) so the editor can offer it as a rule.

use super::OperatorApi;
use super::error::ApiError;
use portcullis_harness::Timestamp;
use portcullis_ledger::LedgerReader;
use portcullis_policy::ExampleCommands;
use serde::{Deserialize, Serialize};
use std::time::Instant;

/// Commands offered as candidate rules at most.
pub const CANDIDATES: usize = 10;
const DAY_US: i64 = 86_400_000_000;

/// Calls a rule decided lately.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RuleHitCount {
    /// The rule's id (the same id in two files is counted together).
    pub rule: String,
    pub day: u64,
    pub week: u64,
}

/// A command the policy prompted for often: a candidate rule.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CandidateRule {
    /// As recorded (redacted).
    pub command: String,
    /// Prompts for it this week.
    pub calls: u64,
    /// Its words (program, then arguments), when it is one simple command; else `None` (a rule matches
    /// one simple command).
    pub words: Option<Vec<String>>,
}

/// What the rules did lately.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RuleActivity {
    pub hits: Vec<RuleHitCount>,
    pub candidates: Vec<CandidateRule>,
    /// How long reading the ledger took.
    pub millis: u64,
}

impl OperatorApi {
    /// The calls each rule decided in the hub's ledger over the last day and week, and this week's most
    /// prompted shell commands.
    pub fn rule_activity(&self) -> Result<RuleActivity, ApiError> {
        let started = Instant::now();
        let reader = LedgerReader::open(self.hub.ledger_path())?;
        let now = Timestamp::now().0;
        let hits = reader
            .rule_hits(now - DAY_US, now - 7 * DAY_US)?
            .into_iter()
            .map(|h| RuleHitCount { rule: h.rule, day: h.day, week: h.week })
            .collect();
        let mut parsed = ExampleCommands::default();
        let candidates = reader
            .prompted_commands(now - 7 * DAY_US, CANDIDATES)?
            .into_iter()
            .map(|p| {
                let commands = parsed.of(&p.command);
                let words = match commands {
                    [only] => Some(only.clone()),
                    _ => None,
                };
                CandidateRule { command: p.command, calls: p.calls, words }
            })
            .collect();
        Ok(RuleActivity {
            hits,
            candidates,
            millis: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        })
    }
}

/// A rule offered for one recorded shell command (the ledger browser's "make a rule from this call"):
/// its words when it is one simple command, parsed as rules match commands.
pub fn candidate_rule(command: &str) -> CandidateRule {
    let mut parsed = ExampleCommands::default();
    let words = match parsed.of(command) {
        [only] => Some(only.clone()),
        _ => None,
    };
    CandidateRule { command: command.to_owned(), calls: 0, words }
}

#[cfg(test)]
mod tests {
    use super::candidate_rule;

    #[test]
    fn a_candidate_has_words_only_for_one_simple_command() {
        assert_eq!(
            candidate_rule("git push origin main").words,
            Some(vec!["git".into(), "push".into(), "origin".into(), "main".into()])
        );
        assert_eq!(candidate_rule("git status && rm -rf ~").words, None);
    }
}
