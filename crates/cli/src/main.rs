//! `portcullis`: the headless command line. It reads, searches, exports, checks and migrates ledger
//! files; checks, tests, lints and replays policies; and runs one tool call through the pipeline.
//! Errors are one line on stderr (`portcullis: error[<code>]: <message>`, exit 2).

mod agent_config;
mod api_cmd;
mod args;
mod call_cmd;
mod client;
mod doctor_cmd;
mod error;
mod export_cmd;
mod hook_cmd;
mod ledger_cmd;
mod mcp_cmd;
mod policy_cmd;
mod render;
mod sandbox_cmd;
mod serve_cmd;
mod sessions_cmd;
mod setup_cmd;
mod stats_cmd;
mod table;
mod terminal;
mod undo_cmd;
mod verify_cmd;

use crate::args::{Cli, Command, HookAgent, LedgerCommand, OperatorCommand, PolicyCommand, SandboxCommand};
use crate::error::CliError;
use clap::Parser;
use std::io::{self, BufWriter, IsTerminal, Write};
use std::process::ExitCode;
use tracing_subscriber::EnvFilter;
use tracing_subscriber::filter::LevelFilter;

/// Logs go to stderr only (stdout carries the output), at `warn` unless `RUST_LOG` says otherwise.
fn init_logging() {
    let filter = EnvFilter::builder().with_default_directive(LevelFilter::WARN.into()).from_env_lossy();
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(io::stderr)
        .with_ansi(io::stderr().is_terminal())
        .try_init();
}

fn run(cli: Cli) -> Result<ExitCode, CliError> {
    // These own stdout (the MCP protocol channel for `mcp`) or print nothing there: no lock held.
    match &cli.command {
        Command::Serve(a) => return serve_cmd::serve_cmd(a),
        Command::Mcp(a) => return mcp_cmd::mcp_cmd(a),
        Command::Hook { agent: HookAgent::Claude(a) } => return hook_cmd::hook_claude(a),
        Command::Run(a) => return hook_cmd::run(a),
        Command::Undo(a) => return undo_cmd::undo(a),
        Command::Held(a) => return undo_cmd::held(a),
        // Streams print as they come, line by line.
        Command::Api(a) => return api_cmd::api(a),
        Command::Operator { command: OperatorCommand::Link(a) } => return api_cmd::operator_link(a),
        Command::Operator { command: OperatorCommand::AddAgent(a) } => return api_cmd::add_agent(a),
        // Asks on the terminal between its diffs and its writes.
        Command::Setup(a) => return setup_cmd::setup(a),
        Command::Doctor(a) => return doctor_cmd::doctor(a),
        _ => {}
    }
    let stdout = io::stdout();
    let mut out = BufWriter::with_capacity(1 << 16, stdout.lock());
    let code = match &cli.command {
        Command::Ledger { command } => match command {
            LedgerCommand::Query(a) => ledger_cmd::query(a, &mut out)?,
            LedgerCommand::Show(a) => ledger_cmd::show(a, &mut out)?,
            LedgerCommand::Stats(a) => stats_cmd::stats(a, &mut out)?,
            LedgerCommand::Export(a) => export_cmd::export(a, &mut out)?,
            LedgerCommand::Sessions(a) => sessions_cmd::sessions(a, &mut out)?,
            LedgerCommand::Refusals(a) => sessions_cmd::refusals(a, &mut out)?,
            LedgerCommand::Check(a) => ledger_cmd::check(a, &mut out)?,
            LedgerCommand::Verify(a) => verify_cmd::verify(a, &mut out)?,
            LedgerCommand::Migrate(a) => ledger_cmd::migrate(a, &mut out)?,
        },
        Command::Policy { command } => match command {
            PolicyCommand::Check(a) => policy_cmd::check(a, &mut out)?,
            PolicyCommand::Test(a) => policy_cmd::test(a, &mut out)?,
            PolicyCommand::Lint(a) => policy_cmd::lint_cmd(a, &mut out)?,
            PolicyCommand::Replay(a) => policy_cmd::replay(a, &mut out)?,
        },
        Command::Call(a) => call_cmd::call(a, &mut out)?,
        Command::Sandbox { command: SandboxCommand::Explain(a) } => sandbox_cmd::explain(a, &mut out)?,
        Command::Serve(_)
        | Command::Mcp(_)
        | Command::Hook { .. }
        | Command::Run(_)
        | Command::Undo(_)
        | Command::Held(_)
        | Command::Api(_)
        | Command::Operator { .. }
        | Command::Setup(_)
        | Command::Doctor(_) => ExitCode::SUCCESS,
    };
    out.flush()?;
    Ok(code)
}

/// mimalloc: a call allocates a handful of small objects and frees them on another thread (the
/// ledger's writer); measured in docs/benchmarks.md ("The hot path").
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    // First, before any thread: this binary is also the sandbox launcher (`portcullis sandbox-exec`).
    if let Some(code) = portcullis_api::start::sandbox_entry_point() {
        return ExitCode::from(u8::try_from(code).unwrap_or(1));
    }
    init_logging();
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        // The reader of stdout went away (`| head`): stop quietly.
        Err(CliError::BrokenPipe) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::debug!(error = ?e, "command failed");
            let _ = writeln!(io::stderr().lock(), "portcullis: error[{}]: {}", e.code(), e.one_line());
            ExitCode::from(2)
        }
    }
}
