//! `portcullis mcp`: an MCP server on stdin/stdout for clients that only spawn stdio servers (the hub's
//! `stdio` module: a relay to a running hub, or an embedded headless one); what it says goes to stderr.

use crate::args::McpArgs;
use crate::error::CliError;
use portcullis_api::start::{StdioOptions, serve_stdio};
use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

fn say(line: &str) {
    let _ = writeln!(std::io::stderr().lock(), "portcullis mcp: {line}");
}

pub fn mcp_cmd(args: &McpArgs) -> Result<ExitCode, CliError> {
    let (project, db) = crate::serve_cmd::project_and_ledger(args.project.as_ref(), args.db.as_ref())?;
    let options = StdioOptions { project, db, policy_files: args.policies.clone(), embedded: args.embedded };
    let runtime =
        tokio::runtime::Builder::new_multi_thread().enable_all().build().map_err(CliError::Runtime)?;
    let result = runtime.block_on(serve_stdio(options, &say));
    // stdin's blocking reader may still hold the runtime; the session is over.
    runtime.shutdown_timeout(Duration::from_millis(200));
    result.map_err(|e| CliError::Hub { code: e.code(), message: e.to_string() })?;
    Ok(ExitCode::SUCCESS)
}
