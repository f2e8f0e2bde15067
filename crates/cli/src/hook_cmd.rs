//! `portcullis hook claude`: Claude Code's PreToolUse hook. Reads the input (bounded) and writes the
//! answer the hub's hook process gives (`start::answer_claude_hook`: the running hub asked, or the
//! policies judged here); tools the policy does not govern get no decision (`{}`). Whatever goes wrong,
//! the answer is deny (fail closed), with the reason.

use crate::args::HookArgs;
use crate::error::CliError;
use portcullis_hub::start::{
    HookAnswer, HookDecision, HookOptions, MAX_HOOK_INPUT_BYTES, answer_claude_hook,
};
use std::io::{Read, Write};
use std::process::ExitCode;

pub fn hook_claude(args: &HookArgs) -> Result<ExitCode, CliError> {
    let mut input = Vec::new();
    let read = std::io::stdin().take(MAX_HOOK_INPUT_BYTES as u64 + 1).read_to_end(&mut input);
    let answer = match read {
        Err(e) => HookAnswer::deny(format!("Portcullis could not read the hook input: {e}")),
        Ok(_) => match String::from_utf8(input) {
            Err(_) => HookAnswer::deny("Portcullis refused a hook input that is not UTF-8"),
            Ok(text) => answer_claude_hook(
                &text,
                &HookOptions { wait: args.wait, policies: args.policies.clone(), db: args.db.clone() },
            ),
        },
    };
    if answer.decision == HookDecision::Deny {
        let _ = writeln!(std::io::stderr().lock(), "portcullis hook: {}", answer.reason);
    }
    let mut out = std::io::stdout().lock();
    writeln!(out, "{}", answer.to_hook_output())?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
