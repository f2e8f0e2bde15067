//! The crate's integration tests as one binary (as in the other crates: one link instead of one per
//! file). Each file is a module.

mod fuzz_corpus;
