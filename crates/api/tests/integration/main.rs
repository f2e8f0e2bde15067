//! The crate's integration tests as one binary: one link instead of one per file, which keeps a cold
//! build's disk and link time small. Each file is a module; shared fixtures are modules beside them.

mod api_always;
mod api_approvals;
mod api_call_changes;
mod api_call_query;
mod api_connections;
mod api_events;
mod api_file_change;
mod api_hookup;
mod api_ledger;
mod api_ledger_browse;
mod api_ledger_upkeep;
mod api_one_call;
mod api_policy_check;
mod api_policy_files;
mod api_receipts;
mod api_replay;
mod api_workbench;
mod broker;
mod common;
mod corpus;
mod corpus_judged;
mod corpus_live;
mod fuzz_corpus;
mod launch;
mod load;
mod manifests;
mod reload;
mod sandbox_required;
