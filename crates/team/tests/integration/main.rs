//! The team ledger against a real PostgreSQL server (Debian's, private to each test).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod call_marks;
mod chain;
mod connecting;
mod deciders;
mod effect_marks;
mod rollup_durations;
mod rollups;
