//! `portcullis policy check|test|lint|replay`: the policy author's loop — evaluate one call, run the
//! examples and tests, find dead rules, and see what a change would do to past calls.

use crate::args::{PolicyCheckArgs, PolicyReplayArgs, PolicyTestArgs};
use crate::error::CliError;
use crate::render::clean;
use portcullis_api::policy_check::{
    Access, CallVerdict, Evaluation, LoadedPolicy, MatchedRule, PolicyLint, RelativeRoots, Severity,
    lint_policy, quote_shell_word, test_policy,
};
use portcullis_api::replay::{ReplayEvent, replay_ledger};
use portcullis_api::times::format_time;
use portcullis_api::types::Timestamp;
use serde_json::{Value, json};
use std::io::Write;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;

pub fn check(args: &PolicyCheckArgs, out: &mut dyn Write) -> Result<ExitCode, CliError> {
    let cwd = args.files.working_dir()?;
    let policy = LoadedPolicy::load(&args.files.policies, &cwd)?;
    let verdict = match (&args.call, args.command.as_slice()) {
        (Some(call), _) => {
            let call: Value = serde_json::from_str(call)
                .map_err(|e| CliError::BadArgument(format!("--call is not JSON: {e}")))?;
            let name = call.get("name").and_then(Value::as_str).ok_or_else(|| {
                CliError::BadArgument(
                    "--call needs a \"name\" (string), e.g. {\"name\": \"shell\", ...}".into(),
                )
            })?;
            let arguments = call.get("arguments").cloned().unwrap_or_else(|| json!({}));
            if !arguments.is_object() {
                return Err(CliError::BadArgument("--call \"arguments\" must be an object".into()));
            }
            // Judged as a live call is: the tool describes its action, the pipeline judges it.
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(CliError::Runtime)?
                .block_on(policy.check_call(name, arguments))?
        }
        (None, []) => {
            return Err(CliError::BadArgument(
                "nothing to check: give --call JSON or a command after `--`".into(),
            ));
        }
        (None, [script]) => CallVerdict::Evaluated(policy.check_command(script)),
        (None, words) => CallVerdict::Evaluated(policy.check_argv(words)),
    };
    // A shell command: judged with the walls it would run inside, as a live call is (a contained
    // command that cannot be contained here is asked).
    let mut verdict = verdict;
    let walls = match (&mut verdict, &args.call) {
        (CallVerdict::Evaluated(e), None) => {
            let support = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(CliError::Runtime)?
                .block_on(portcullis_api::policy_check::probe_sandbox());
            Some(policy.sandbox_profile(e, &support))
        }
        _ => None,
    };
    let sources = policy.sources();
    if args.json {
        let mut value = match &verdict {
            CallVerdict::Evaluated(e) => serde_json::to_value(e)?,
            CallVerdict::Blocked { reason, detail } => json!({
                "decision": reason,
                "blocked": true,
                "matched_rules": [],
                "commands": [],
                "paths": [],
                "reasons": [detail],
            }),
        };
        if let Value::Object(map) = &mut value {
            map.insert("policies".into(), json!(sources));
            map.insert("relative_roots".into(), json!(policy.relative_roots()));
        }
        writeln!(out, "{value}")?;
        return Ok(ExitCode::SUCCESS);
    }
    match &verdict {
        CallVerdict::Blocked { reason, detail } => {
            writeln!(out, "decision: {reason} (blocked before any rule: {detail})")?;
        }
        // A shell command: the walls it would run inside, after its evaluation.
        CallVerdict::Evaluated(e) => {
            render_evaluation(e, out)?;
            for line in walls.iter().flat_map(crate::sandbox_cmd::profile_lines) {
                writeln!(out, "{}", clean(&line))?;
            }
        }
    }
    writeln!(out, "policies: {}", sources.join(", "))?;
    for line in relative_root_lines(&policy.relative_roots()) {
        writeln!(out, "{}", clean(&line))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Where "." points, one line per policy naming relative roots: `"." in FILE is FOLDER`.
pub fn relative_root_lines(roots: &[RelativeRoots]) -> Vec<String> {
    roots.iter().map(|r| format!("\".\" in {} is {}", r.policy, r.folder)).collect()
}

/// Where a rule is declared: `file:line`; the source alone when its line is not known or the source is
/// not a file one can open (the built-in default policy).
fn declared_at(rule: &MatchedRule) -> String {
    match rule.line {
        line if line > 0 && std::path::Path::new(&rule.source).is_file() => format!("{}:{line}", rule.source),
        _ => rule.source.clone(),
    }
}

/// The evaluation as text; every line goes through [`clean`]: commands and paths are an agent's text.
fn render_evaluation(e: &Evaluation, out: &mut dyn Write) -> Result<(), CliError> {
    let mut line = |text: String| writeln!(out, "{}", clean(&text));
    line(format!("decision: {}", e.decision.as_str()))?;
    match (&e.deciding_rule, &e.deciding_place, &e.deciding_reason) {
        (Some(rule), _, _) => line(format!("decided by: rule {} ({})", rule.id, declared_at(rule)))?,
        (None, Some(at), _) => line(format!("decided by: {}", at.kind.describe(&at.place, &at.path)))?,
        (None, None, Some(reason)) => line(format!("decided by: {reason}"))?,
        (None, None, None) => {}
    }
    if !e.commands.is_empty() {
        line("commands:".into())?;
        for argv in &e.commands {
            line(format!("  {}", argv.iter().map(|w| quote_shell_word(w)).collect::<Vec<_>>().join(" ")))?;
        }
    }
    if !e.accesses.is_empty() {
        // Every file read or written, with how the command reaches it and the verdict on it alone.
        line("files:".into())?;
        for a in &e.accesses {
            let access = match a.access {
                Access::Read => "read ",
                Access::Write => "write",
            };
            let tree = if a.recursive { " (whole tree)" } else { "" };
            let why = a.reason.as_deref().map(|r| format!(": {r}")).unwrap_or_default();
            line(format!("  {access} {}{tree} via {}: {}{why}", a.path, a.via, a.decision.as_str()))?;
        }
    } else if !e.paths.is_empty() {
        line("paths:".into())?;
        for path in &e.paths {
            line(format!("  {path}"))?;
        }
    }
    if !e.matched_rules.is_empty() {
        line("matched rules:".into())?;
        for rule in &e.matched_rules {
            line(format!("  {} ({}) in {}", rule.id, rule.decision.as_str(), declared_at(rule)))?;
        }
    }
    if !e.reasons.is_empty() {
        line("reasons:".into())?;
        for reason in &e.reasons {
            line(format!("  - {reason}"))?;
        }
    }
    Ok(())
}

pub fn test(args: &PolicyTestArgs, out: &mut dyn Write) -> Result<ExitCode, CliError> {
    let cwd = args.files.working_dir()?;
    let report = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(CliError::Runtime)?
        .block_on(test_policy(&args.files.policies, &cwd))?;
    let (examples, tests, failed) = (&report.examples, &report.tests, report.failed);
    if args.json {
        writeln!(out, "{}", serde_json::to_value(&report)?)?;
    } else {
        for e in examples.iter().filter(|e| !e.passed) {
            writeln!(
                out,
                "FAIL {}:{}:{}: rule `{}`: example {:?} {}",
                e.source,
                e.line,
                e.column,
                e.rule,
                e.example,
                if e.should_match { "should match but does not" } else { "should not match but does" }
            )?;
        }
        for t in tests.iter().filter(|t| !t.passed) {
            writeln!(
                out,
                "FAIL {}: test {:?}: expected {}, got {} (decided by {})",
                t.source, t.name, t.expected, t.got, t.decided_by
            )?;
        }
        writeln!(
            out,
            "{} rule examples, {} test cases: {} passed, {} failed",
            examples.len(),
            tests.len(),
            examples.len() + tests.len() - failed,
            failed
        )?;
    }
    Ok(if failed == 0 { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

pub fn lint_cmd(args: &PolicyTestArgs, out: &mut dyn Write) -> Result<ExitCode, CliError> {
    let cwd = args.files.working_dir()?;
    let PolicyLint { findings, warnings, rules, .. } = lint_policy(&args.files.policies, &cwd)?;
    if args.json {
        writeln!(out, "{}", json!({ "findings": findings, "warnings": warnings }))?;
    } else {
        for f in &findings {
            let severity = if f.severity == Severity::Warning { "warning" } else { "note" };
            let kind = serde_json::to_value(f.kind)?;
            writeln!(
                out,
                "{severity}[{}]: {}:{}:{}: rule `{}`: {}",
                kind.as_str().unwrap_or_default(),
                f.source,
                f.line,
                f.column,
                f.rule,
                f.message
            )?;
        }
        writeln!(out, "{rules} rules: {warnings} warnings, {} notes", findings.len() - warnings)?;
    }
    Ok(if warnings == 0 { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

pub fn replay(args: &PolicyReplayArgs, out: &mut dyn Write) -> Result<ExitCode, CliError> {
    let cwd = args.files.working_dir()?;
    let db = args.db.address()?;
    // Bad input says so before anything is printed.
    portcullis_api::ledger::LedgerView::open_at(&db)?;
    if !args.json {
        let policy = LoadedPolicy::load(&args.files.policies, &cwd)?;
        writeln!(out, "replaying {db} against {}", policy.sources().join(", "))?;
    }
    let mut written: Result<(), CliError> = Ok(());
    let stop = AtomicBool::new(false);
    // Commands are judged as on this machine: the walls the kernel can build decide a policy that
    // requires them (sandbox.mode: required), as they would decide a live call here.
    let support = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(CliError::Runtime)?
        .block_on(portcullis_api::policy_check::probe_sandbox());
    let outcome = replay_ledger(&db, &args.files.policies, &cwd, &support, &stop, &mut |event| {
        let ReplayEvent::Change(change) = event else { return true };
        let line = if args.json {
            serde_json::to_value(change).map(|v| v.to_string()).map_err(CliError::from)
        } else {
            // Sessions, tools and subjects are agent text: escaped as everywhere else.
            Ok(clean(&format!(
                "{}  {}/{}  {}  {}: {} -> {} ({})",
                format_time(Timestamp(change.at)),
                change.session_id,
                change.call_id,
                change.tool,
                change.subject,
                change.before,
                change.after,
                change.decided_by
            )))
        };
        written = line.and_then(|line| writeln!(out, "{line}").map_err(CliError::from));
        written.is_ok()
    })?;
    written?;
    let summary = &outcome.summary;
    let sources = &outcome.policies;
    if args.json {
        writeln!(out, "{}", json!({ "summary": summary, "policies": sources }))?;
    } else {
        let transitions =
            summary.transitions.iter().map(|(t, n)| format!("{t}: {n}")).collect::<Vec<_>>().join(", ");
        writeln!(
            out,
            "{} calls: {} replayed, {} would change, {} unchanged, {} settled before the policy{}",
            summary.calls,
            summary.replayed,
            summary.changed,
            summary.unchanged,
            summary.skipped,
            if transitions.is_empty() { String::new() } else { format!(" ({transitions})") }
        )?;
        // Past prompts the judge could not read now run contained, without asking.
        if let Some(n) = summary.transitions.get("prompt -> contain") {
            writeln!(out, "{n} past prompts would now run contained, without asking")?;
        }
    }
    Ok(if args.fail_on_change && summary.changed > 0 { ExitCode::from(1) } else { ExitCode::SUCCESS })
}
