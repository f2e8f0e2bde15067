//! The crate's integration tests as one binary: one link instead of one per file, which keeps a cold
//! build's disk and link time small. Each file is a module; shared fixtures are modules beside them.

mod call_marks;
mod chain;
mod chain_export;
mod common;
mod crash;
mod durable_start;
mod effects;
mod queries;
mod rollups;
mod side_chain;
mod store;
mod tail;
mod tail_proof;
