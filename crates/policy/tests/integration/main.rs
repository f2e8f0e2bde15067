//! The crate's integration tests as one binary: one link instead of one per file, which keeps a cold
//! build's disk and link time small. Each file is a module; shared fixtures are modules beside them.

mod closed_gate;
mod common;
mod containment;
mod documents;
mod file_operands;
mod fuzz_corpus;
mod lint;
mod one_judgement;
mod oracle;
mod parts;
mod pipeline;
mod real_agents_quiet;
mod shell;
mod shell_opaque;
mod shell_redirections;
mod shell_wrappers;
