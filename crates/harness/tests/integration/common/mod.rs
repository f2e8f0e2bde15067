//! Fixtures shared by the harness's test files: `pipeline` for the dispatch pipeline's end-to-end tests,
//! `schema` for the schema-bound tests. Each test file uses part of them.
// Fixture code outside #[test] functions may unwrap and panic, like the tests themselves.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, dead_code)]

pub mod pipeline;
pub mod schema;
