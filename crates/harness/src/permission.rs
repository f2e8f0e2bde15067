//! The permission check `tool:<name>:execute`, separate from grants so a host can tie it to a role.

use crate::call::CallContext;
use std::collections::HashSet;
use std::fmt;

/// A permission, shown as `tool:<name>:<action>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Permission<'a> {
    pub tool: &'a str,
    pub action: &'static str,
}

impl<'a> Permission<'a> {
    pub fn execute(tool: &'a str) -> Self {
        Permission { tool, action: "execute" }
    }
}

impl fmt::Display for Permission<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "tool:{}:{}", self.tool, self.action)
    }
}

pub trait PermissionCheck: Send + Sync {
    fn allows(&self, call: &CallContext, permission: &Permission<'_>) -> bool;
}

/// Every permission granted (the default).
#[derive(Debug, Clone, Copy, Default)]
pub struct AllowAllPermissions;

impl PermissionCheck for AllowAllPermissions {
    fn allows(&self, _: &CallContext, _: &Permission<'_>) -> bool {
        true
    }
}

/// An explicit set of `tool:<name>:execute` strings; `tool:*:execute` grants every tool.
#[derive(Debug, Clone, Default)]
pub struct PermissionSet {
    all: bool,
    tools: HashSet<String>,
}

impl PermissionSet {
    /// Parses permission strings; strings of another form are ignored with a warning (never granted).
    pub fn new<I, S>(permissions: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut set = PermissionSet::default();
        for p in permissions {
            let p = p.as_ref();
            match p.strip_prefix("tool:").and_then(|rest| rest.strip_suffix(":execute")) {
                Some("*") => set.all = true,
                Some(tool) if !tool.is_empty() => {
                    set.tools.insert(tool.to_owned());
                }
                _ => tracing::warn!(permission = p, "ignoring a permission that is not tool:<name>:execute"),
            }
        }
        set
    }
}

impl PermissionCheck for PermissionSet {
    fn allows(&self, _: &CallContext, permission: &Permission<'_>) -> bool {
        permission.action == "execute" && (self.all || self.tools.contains(permission.tool))
    }
}
