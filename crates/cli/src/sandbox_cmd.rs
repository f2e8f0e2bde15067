//! `portcullis sandbox explain`: the walls a shell command would run inside, and the lines `policy
//! check` and `ledger show` print about them.

use crate::args::SandboxExplainArgs;
use crate::error::CliError;
use crate::render::clean;
use portcullis_api::policy_check::{LoadedPolicy, probe_sandbox, quote_shell_word};
use portcullis_api::types::{Enforcement, SandboxProfile, SandboxSupport};
use serde_json::json;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

fn joined(paths: &[PathBuf]) -> String {
    if paths.is_empty() {
        return "(none)".into();
    }
    paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
}

/// The profile as lines (not yet cleaned: paths may be an agent's text).
pub fn profile_lines(p: &SandboxProfile) -> Vec<String> {
    let mut lines = vec![match &p.enforcement {
        Enforcement::Confined => "sandbox: confined by the kernel (Landlock, namespaces, limits)".to_owned(),
        Enforcement::Unconfined { reason } => format!("sandbox: NONE, the command runs unconfined: {reason}"),
    }];
    lines.push(format!("  read and write: {} (and a private /tmp)", joined(&p.write)));
    lines.push(format!("  read only: {}", joined(&p.read)));
    lines.push(format!("  system (read, run): {}", joined(&p.system)));
    lines.push(format!("  hidden (empty inside): {}", joined(&p.hidden)));
    lines.push(format!("  kept read-only: {}", joined(&p.read_only)));
    let why = p.network_reason.as_deref().map(|r| format!(" ({r})")).unwrap_or_default();
    lines.push(format!("  network: {}{why}", p.network_words()));
    if let Some(why) = &p.direct_writes {
        lines.push(format!("  copy-on-write: none, {why}"));
    }
    if let Some(contained) = &p.contained {
        lines.push(
            "  contained: part of it cannot be read, so it runs under the strictest reading:".to_owned(),
        );
        for m in &contained.masked {
            lines.push(format!("    masked: {} ({})", m.program, m.by));
        }
        if !contained.hidden_by_globs.is_empty() {
            lines.push(format!("    hidden by the deny globs: {}", joined(&contained.hidden_by_globs)));
        }
        if let Some(by) = &contained.deletions_held_by {
            lines.push(format!("    deletions held for the operator: {by}"));
        }
        lines.push(
            "    changes at paths the deny globs name, and protected places, are held for the operator"
                .to_owned(),
        );
    }
    let l = p.limits;
    lines.push(format!(
        "  limits: {} MiB memory and {} s CPU per process, {} processes, {} MiB per file, {} open files",
        l.memory_mb, l.cpu_seconds, l.processes, l.file_size_mb, l.open_files
    ));
    lines
}

/// What the sandbox refused or ended, from a shell result's structured `sandbox` member.
pub fn refusal_lines(structured: Option<&serde_json::Value>) -> Vec<String> {
    let Some(sandbox) = structured.and_then(|s| s.get("sandbox")).filter(|s| !s.is_null()) else {
        return Vec::new();
    };
    let mut lines = Vec::new();
    if let Some(limit) = sandbox.get("limit").and_then(serde_json::Value::as_str) {
        lines.push(format!("ended at the sandbox's {limit} limit"));
    }
    for refusal in sandbox.get("refusals").and_then(serde_json::Value::as_array).into_iter().flatten() {
        let text =
            |k: &str| refusal.get(k).and_then(serde_json::Value::as_str).unwrap_or_default().to_owned();
        let path = refusal
            .get("path")
            .and_then(serde_json::Value::as_str)
            .map(|p| format!(" {p}"))
            .unwrap_or_default();
        lines.push(format!("refused by the sandbox:{path}: {} — {}", text("meaning"), text("line")));
    }
    lines
}

fn support_line(support: &SandboxSupport) -> String {
    match (&support.unavailable, support.landlock_abi) {
        (None, Some(abi)) => format!("this machine: Landlock ABI {abi}, user/mount/PID/network namespaces"),
        (Some(reason), _) => format!("this machine cannot confine commands: {reason}"),
        (None, None) => "this machine cannot confine commands: no Landlock".into(),
    }
}

pub fn explain(args: &SandboxExplainArgs, out: &mut dyn Write) -> Result<ExitCode, CliError> {
    let cwd = args.files.working_dir()?;
    let policy = LoadedPolicy::load(&args.files.policies, &cwd)?;
    let mut evaluation = match args.command.as_slice() {
        [script] => policy.check_command(script),
        words => {
            policy.check_command(&words.iter().map(|w| quote_shell_word(w)).collect::<Vec<_>>().join(" "))
        }
    };
    let support = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(CliError::Runtime)?
        .block_on(probe_sandbox());
    let profile = policy.sandbox_profile(&mut evaluation, &support);
    let forbidden = policy.sandbox_required() && !profile.is_confined();
    if args.json {
        let value = json!({
            "decision": if forbidden { "forbidden" } else { evaluation.decision.as_str() },
            "profile": profile,
            "support": support,
            "policies": policy.sources(),
        });
        writeln!(out, "{value}")?;
        return Ok(ExitCode::SUCCESS);
    }
    let decision = if forbidden {
        "forbidden (the policy requires the sandbox and this machine cannot build it)"
    } else {
        evaluation.decision.as_str()
    };
    writeln!(out, "decision: {decision}")?;
    for line in profile_lines(&profile) {
        writeln!(out, "{}", clean(&line))?;
    }
    writeln!(out, "{}", clean(&support_line(&support)))?;
    writeln!(out, "policies: {}", clean(&policy.sources().join(", ")))?;
    Ok(ExitCode::SUCCESS)
}
