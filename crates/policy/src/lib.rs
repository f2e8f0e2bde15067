//! Portcullis policy: decides what an agent's tool call may do; this first part sees inside shell commands.

pub mod shell;
