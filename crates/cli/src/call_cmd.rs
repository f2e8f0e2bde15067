//! `portcullis call TOOL ARGS`: one tool call through the whole harness pipeline — grants, JSON Schema,
//! the policy, an approver (this terminal, or a denier), the coding tools, and optionally a ledger.

use crate::args::{ApproverKind, CallArgs};
use crate::error::CliError;
use crate::terminal::TerminalPrompter;
use portcullis_api::one_call::{OneCall, Prompter, call_once};
use portcullis_api::types::{CallOutcome, Content};
use serde_json::Value;
use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;

pub fn call(args: &CallArgs, out: &mut dyn Write) -> Result<ExitCode, CliError> {
    let cwd = args.files.working_dir()?;
    let arguments: Value = serde_json::from_str(&args.arguments)
        .map_err(|e| CliError::BadArgument(format!("the arguments are not JSON: {e}")))?;
    // The terminal when asked for (or, by default, when there is one); otherwise every prompt is denied.
    let prompter = match args.approver {
        Some(ApproverKind::Deny) => None,
        Some(ApproverKind::Terminal) => Some(TerminalPrompter::controlling().ok_or_else(|| {
            CliError::BadArgument("--approver terminal: this process has no terminal (/dev/tty)".into())
        })?),
        None => TerminalPrompter::controlling(),
    };
    let call = OneCall {
        tool: args.tool.clone(),
        arguments,
        cwd,
        policy_files: args.files.policies.clone(),
        always_file: args.always_file.clone(),
        db: args.db.clone(),
        prompter: prompter.map(|p| Arc::new(p) as Arc<dyn Prompter>),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(CliError::Runtime)?;
    let result = runtime.block_on(call_once(call));
    let result = result?;
    if args.json {
        writeln!(out, "{}", serde_json::to_value(&result)?)?;
    } else {
        match &result.outcome {
            CallOutcome::Finished { output } => {
                for content in &output.content {
                    match content {
                        Content::Text { text } => writeln!(out, "{text}")?,
                        other => writeln!(out, "{}", serde_json::to_value(other)?)?,
                    }
                }
            }
            // The tool's own output above is what the command printed, as a shell shows it; these
            // messages are ours and quote the agent's text, so they are escaped as everywhere else.
            CallOutcome::Blocked { reason, error } => {
                writeln!(out, "blocked ({reason}): {}", crate::render::clean(&error.message))?;
            }
            CallOutcome::Error { error } => {
                writeln!(out, "error [{}]: {}", error.code, crate::render::clean(&error.message))?
            }
        }
    }
    let ok = matches!(&result.outcome, CallOutcome::Finished { output } if !output.is_error);
    Ok(if ok { ExitCode::SUCCESS } else { ExitCode::from(1) })
}
