//! How a step of building the walls fails: its name and what went wrong. A leaf, so the mounts and the
//! relay the walls delegate to (`overlay`, `masks`, `egress::relay`) report their failures in the walls'
//! terms without naming the walls that call them.

/// A step that failed: its name and what went wrong.
pub(crate) type Failure = (&'static str, String);
