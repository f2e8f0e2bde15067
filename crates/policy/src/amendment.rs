//! What an "always" answer adds to a policy file: allow rules, read roots and hosts added to a rule's
//! `network` list, and how widely each rule applies as the operator scoped it. A leaf of document
//! types: the host offer (`host_approval`) builds one, the approver (`approval`) checks and writes it.

use crate::document::{CommandRule, PathRoot};
use serde::Serialize;

/// What "always" would add to a policy file.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Amendment {
    /// Allow rules, one per sub-command no allow rule covers yet.
    pub rules: Vec<CommandRule>,
    /// Read roots, one per file read outside every root.
    pub read_roots: Vec<PathRoot>,
    /// Hosts added to an existing rule's `network` list (a host the operator allowed "always").
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hosts: Vec<HostAddition>,
}

/// How widely one rule of an "always" amendment applies, as the operator chose it: the command's first
/// `words` words, and (`exact`) no more words after them.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct RuleScope {
    pub words: u32,
    pub exact: bool,
}

impl Amendment {
    /// This amendment with rule `i` cut to `scopes[i]`: a prefix of at least the program's name, and
    /// exact only when it keeps every word. A read root is not scoped.
    pub fn scoped(&self, scopes: &[RuleScope]) -> Result<Amendment, String> {
        if scopes.len() != self.rules.len() {
            return Err(format!("{} scopes given for {} rules", scopes.len(), self.rules.len()));
        }
        let mut scoped = self.clone();
        for (rule, scope) in scoped.rules.iter_mut().zip(scopes) {
            let all = rule.pattern.len();
            let words = usize::try_from(scope.words).unwrap_or(usize::MAX);
            if words == 0 || words > all {
                return Err(format!(
                    "rule {} has {all} words; a scope keeps 1 to {all}, not {words}",
                    rule.id
                ));
            }
            if scope.exact && words != all {
                return Err(format!("rule {}: only the whole command ({all} words) can be exact", rule.id));
            }
            rule.pattern.truncate(words);
            rule.exact = scope.exact;
        }
        Ok(scoped)
    }

    /// Each rule's scope as offered: every word, exact.
    pub fn scopes(&self) -> Vec<RuleScope> {
        self.rules
            .iter()
            .map(|r| RuleScope { words: u32::try_from(r.pattern.len()).unwrap_or(u32::MAX), exact: r.exact })
            .collect()
    }
}

/// A host added to a rule's `network` list by an "always" answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HostAddition {
    /// The rule's id (in the file the amendment is written to).
    pub rule: String,
    /// As the rule writes it: `name:port`.
    pub host: String,
}
