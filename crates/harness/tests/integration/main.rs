//! The crate's integration tests as one binary: one link instead of one per file, which keeps a cold
//! build's disk and link time small. Each file is a module; shared fixtures are modules beside them.

mod batch;
mod common;
mod conformance;
mod fuzz_corpus;
mod pipeline;
mod pipeline_approval;
mod pipeline_guards;
mod schema_bounds;
mod schema_cache;
mod schema_instances;
mod started_and_recorded;
