//! Tool grants: scopes of exact tool-name allow/deny lists. Every non-empty allow list must include a
//! tool and any deny list excludes it; deny wins; a missing or empty allow list means no restriction.

use serde::{Deserialize, Serialize};
use std::collections::HashSet;

/// A set of exact tool names. Hashed with foldhash (seeded per process): every call looks names up
/// here, and SipHash was a tenth of a call's cost. The sets are the operator's; an agent only chooses
/// the names looked up, which cannot make a lookup slow.
pub type NameSet = HashSet<String, foldhash::fast::RandomState>;

/// One named scope (for example `user`, `project`, `session`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GrantScope {
    pub name: String,
    /// Exact names; empty means "no restriction from this scope".
    #[serde(default)]
    pub allow: NameSet,
    /// Exact names that are never permitted.
    #[serde(default)]
    pub deny: NameSet,
}

impl GrantScope {
    pub fn new(name: impl Into<String>) -> Self {
        GrantScope { name: name.into(), allow: NameSet::default(), deny: NameSet::default() }
    }

    pub fn allow<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.allow.extend(names.into_iter().map(Into::into));
        self
    }

    pub fn deny<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.deny.extend(names.into_iter().map(Into::into));
        self
    }
}

/// A set of scopes evaluated together.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Grants {
    pub scopes: Vec<GrantScope>,
}

impl Grants {
    /// No scopes: every tool is granted.
    pub fn unrestricted() -> Self {
        Grants::default()
    }

    pub fn new(scopes: Vec<GrantScope>) -> Self {
        Grants { scopes }
    }

    pub fn with_scope(mut self, scope: GrantScope) -> Self {
        self.scopes.push(scope);
        self
    }

    /// The scope that refuses `name`, if any: first a deny list naming it (deny wins), then a non-empty
    /// allow list lacking it.
    pub fn refusing_scope(&self, name: &str) -> Option<&GrantScope> {
        self.scopes
            .iter()
            .find(|s| !s.deny.is_empty() && s.deny.contains(name))
            .or_else(|| self.scopes.iter().find(|s| !s.allow.is_empty() && !s.allow.contains(name)))
    }

    /// The scope whose deny list names `name`, if any.
    pub fn denying_scope(&self, name: &str) -> Option<&GrantScope> {
        self.scopes.iter().find(|s| !s.deny.is_empty() && s.deny.contains(name))
    }

    pub fn permits(&self, name: &str) -> bool {
        self.refusing_scope(name).is_none()
    }

    /// Keeps the items whose name is permitted, in their order. Only ever narrows.
    pub fn narrow<'a, T, F>(&self, items: impl IntoIterator<Item = &'a T>, name_of: F) -> Vec<&'a T>
    where
        T: 'a + ?Sized,
        F: Fn(&T) -> &str,
    {
        items.into_iter().filter(|item| self.permits(name_of(item))).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grants() -> Grants {
        Grants::new(vec![
            GrantScope::new("user").allow(["read", "write", "shell"]).deny(["write"]),
            GrantScope::new("project").allow(["read", "shell", "edit"]),
            GrantScope::new("session"),
        ])
    }

    #[test]
    fn every_nonempty_allow_must_include_and_deny_wins() {
        let g = grants();
        assert!(g.permits("read"));
        assert!(g.permits("shell"));
        assert_eq!(g.refusing_scope("write").map(|s| s.name.as_str()), Some("user"), "deny wins");
        assert_eq!(g.refusing_scope("edit").map(|s| s.name.as_str()), Some("user"), "not in user allow");
        assert_eq!(g.refusing_scope("list").map(|s| s.name.as_str()), Some("user"));
    }

    #[test]
    fn empty_allow_means_no_restriction_and_deny_alone_excludes() {
        let g = Grants::new(vec![GrantScope::new("a").deny(["shell"]), GrantScope::new("b")]);
        assert!(g.permits("anything"));
        assert!(!g.permits("shell"));
        assert!(Grants::unrestricted().permits("shell"));
    }

    #[test]
    fn deny_in_one_scope_beats_allow_in_another() {
        let g = Grants::new(vec![GrantScope::new("a").allow(["x"]), GrantScope::new("b").deny(["x"])]);
        assert_eq!(g.refusing_scope("x").map(|s| s.name.as_str()), Some("b"));
    }

    #[test]
    fn names_are_exact() {
        let g = Grants::new(vec![GrantScope::new("a").allow(["read"])]);
        for near in ["Read", "read ", "rea", "read_file", "mcp:x:read"] {
            assert!(!g.permits(near), "{near}");
        }
    }

    #[test]
    fn narrow_only_narrows_and_keeps_order() {
        let g = grants();
        let names = ["shell", "edit", "read", "write", "shell"];
        let kept: Vec<&str> = g.narrow(names.iter(), |s: &&str| s).into_iter().copied().collect();
        assert_eq!(kept, vec!["shell", "read", "shell"]);
        let none: Vec<&str> = Vec::new();
        assert!(g.narrow(none.iter(), |s: &&str| s).is_empty());
    }
}
