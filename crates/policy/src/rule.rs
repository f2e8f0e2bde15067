//! A command rule as a loaded policy holds it (one layer's rule, with where it came from and its network
//! read), the index of rules by the program they name, and the tokens a rule's pattern is matched
//! against. A leaf below the policy that files its rules and the judges that match them.

use crate::document::{Decision, OtherHosts, PatternElement};
use crate::shell::SimpleCommand;
use std::collections::HashMap;

/// One command rule of a loaded policy, with the layer and line it came from.
pub(crate) struct Rule {
    pub(crate) id: String,
    pub(crate) source: String,
    /// The line of `source` that declares it.
    pub(crate) line: usize,
    /// The index of the layer that holds it.
    pub(crate) layer: usize,
    pub(crate) pattern: Vec<PatternElement>,
    pub(crate) exact: bool,
    pub(crate) decision: Decision,
    pub(crate) justification: Option<String>,
    /// The network commands it matches may use inside their sandbox.
    pub(crate) network: NetworkScope,
    /// Whether a host its list does not name is a prompt (else refused).
    pub(crate) other_hosts: OtherHosts,
    /// Commands it matches write in place (no copy-on-write layer).
    pub(crate) direct_writes: bool,
}

/// A rule's network, read: none, any host, or the hosts it names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum NetworkScope {
    None,
    Any,
    Hosts(Vec<portcullis_harness::HostPattern>),
}

/// The index of `rules` by the program names their first pattern element holds, each list in rule order.
pub(crate) fn rules_by_program(rules: &[Rule]) -> HashMap<String, Vec<usize>> {
    let mut index: HashMap<String, Vec<usize>> = HashMap::new();
    for (at, rule) in rules.iter().enumerate() {
        let names: &[String] = match rule.pattern.first() {
            Some(PatternElement::Token(name)) => std::slice::from_ref(name),
            Some(PatternElement::AnyOf(names)) => names,
            None => &[],
        };
        for name in names {
            let list = index.entry(name.clone()).or_default();
            if list.last() != Some(&at) {
                list.push(at);
            }
        }
    }
    index
}

/// The tokens a rule pattern is matched against (for other modules of this crate).
pub(crate) fn tokens_of(command: &SimpleCommand) -> Vec<&str> {
    tokens(command)
}

/// The tokens a rule pattern is matched against: the program name, then the arguments.
pub(crate) fn tokens(command: &SimpleCommand) -> Vec<&str> {
    let mut t = vec![command.program.as_str()];
    t.extend(command.argv.iter().skip(1).map(String::as_str));
    t
}
