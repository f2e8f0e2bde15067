//! The crate's integration tests as one binary: one link instead of one per file, which keeps a cold
//! build's disk and link time small. Each file is a module; shared fixtures are modules beside them.

mod approval_wait;
mod audit_trail;
mod closed_gate;
mod command_table;
mod common;
mod conformance;
mod console;
mod effects;
mod egress;
mod egress_ask;
mod fast_lane;
mod fence;
mod first_day;
mod gate;
mod gateway;
mod gateway_guard;
mod hook;
mod ledger_cli;
mod ledger_cli_check;
mod ledger_cli_output;
mod ledger_fixture;
mod ledger_verify;
mod new_operator;
mod otel;
mod policy_cli;
mod receipts;
mod record_sinks;
mod sandbox;
mod sandbox_changes;
mod sandbox_isolation;
mod team_ledger;
mod tls;
mod tool_pins;
mod upstream;
mod upstream_offerings;
