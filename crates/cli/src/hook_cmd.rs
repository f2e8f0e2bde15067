//! `portcullis hook claude`: Claude Code's PreToolUse and PostToolUse hook, and `portcullis run`, which
//! runs an allowed `Bash` command in the hub's sandbox. Reads the input (bounded) and writes the
//! answer the hub's hook process gives (`start::answer_claude_hook`: the running hub asked, or the
//! policies judged here); tools the policy does not govern get no decision (`{}`). Whatever goes wrong,
//! the answer is deny (fail closed), with the reason.

use crate::args::{HookArgs, RunArgs};
use crate::error::CliError;
use portcullis_api::start::{
    HookAnswer, HookDecision, HookOptions, MAX_HOOK_INPUT_BYTES, answer_claude_hook, claude_code_output,
    run_ticket,
};
use std::io::{Read, Write};
use std::process::ExitCode;

pub fn hook_claude(args: &HookArgs) -> Result<ExitCode, CliError> {
    let mut input = Vec::new();
    let read = std::io::stdin().take(MAX_HOOK_INPUT_BYTES as u64 + 1).read_to_end(&mut input);
    let (answer, text) = match read {
        Err(e) => (HookAnswer::deny(format!("Portcullis could not read the hook input: {e}")), String::new()),
        Ok(_) => match String::from_utf8(input) {
            Err(_) => (HookAnswer::deny("Portcullis refused a hook input that is not UTF-8"), String::new()),
            Ok(text) => (
                answer_claude_hook(
                    &text,
                    &HookOptions { wait: args.wait, policies: args.policies.clone(), db: args.db.clone() },
                ),
                text,
            ),
        },
    };
    if answer.decision == HookDecision::Deny {
        let _ = writeln!(std::io::stderr().lock(), "portcullis hook: {}", answer.reason);
    }
    let mut out = std::io::stdout().lock();
    writeln!(out, "{}", claude_code_output(&text, &answer))?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// `portcullis run --ticket T`: the sandboxed run's status is this process's.
pub fn run(args: &RunArgs) -> Result<ExitCode, CliError> {
    Ok(ExitCode::from(run_ticket(&args.ticket, args.folder_to.as_deref())))
}
