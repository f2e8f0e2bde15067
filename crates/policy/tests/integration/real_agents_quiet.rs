//! Issue 53, "quiet": the 5,546 shell commands four real coding agents ran (tests/benign/real-agents,
//! from public run logs; SOURCES.md), judged by a policy that allows every program and the whole disk,
//! so that what still prompts is the judge's own doing. Judged as a live call is on a machine that
//! confines (the decision a replay gives): what part of a command the judge cannot read is contained,
//! not asked. Prints the share that prompts and its causes, and the share contained; holds the share
//! that prompts at or under its ceiling, which only ever comes down as the judge reads more (the goal is
//! 1 %).
//!
//! A live contained run also hides the files the deny globs name below its trees, which it must find
//! first: under roots as large as the whole disk it cannot (`MAX_HIDE_ENTRIES`), and such a run is asked.
//! With the project as the root, as policies have it, it is found and hidden.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::print_stdout)]

use portcullis_harness::{ActionKind, ExecutionAction, SandboxSupport};
use portcullis_policy::{Decision, EvalContext, Policy, PolicyLayer};
use std::collections::BTreeMap;

/// The largest share of the corpus that may prompt (398, 7.2 %, when the corpus came in; 395, 7.1 %,
/// once quoted heredocs, plain assignments and literal variables were read; 35, 0.63 %, once what the
/// judge cannot read was contained).
const CEILING: f64 = 0.0064;

/// A prompt's cause, coarse: the kind of what could not be read, else the reason's first words.
fn cause(reason: &str) -> String {
    if let Some(at) = reason.find(" cannot be judged statically") {
        let kind = reason[..at].rsplit(['(', ' ']).next().unwrap_or("");
        return format!("opaque: {kind}");
    }
    for (needle, name) in [
        ("computed at run time", "words computed at run time"),
        ("protected place", "protected place"),
        ("does not parse", "does not parse"),
        ("deny glob", "deny glob"),
    ] {
        if reason.contains(needle) {
            return name.to_owned();
        }
    }
    reason.split_whitespace().take(6).collect::<Vec<_>>().join(" ")
}

#[test]
fn the_judge_prompts_for_few_commands_real_agents_ran() {
    let commands = crate::common::command_list("benign/real-agents/commands.txt");
    assert!(commands.len() >= 2000, "{}", commands.len());
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().canonicalize().unwrap();
    let text = r#"{ "commands": { "default": "allow" }, "paths": { "roots": [ { "path": "/", "access": "write" } ] } }"#;
    let policy =
        Policy::from_layers(vec![PolicyLayer::parse("allow-all.json", text, project.clone()).unwrap()])
            .unwrap();
    let ctx = EvalContext { cwd: project.clone(), home: Some(project.join("home")) };
    let mut causes: BTreeMap<String, usize> = BTreeMap::new();
    let mut prompted = 0usize;
    let mut contained = 0usize;
    let confines = SandboxSupport { landlock_abi: Some(7), namespaces: true, unavailable: None };
    for command in &commands {
        let mut action = ExecutionAction::new(ActionKind::Execute, "execute");
        action.command = Some(command.clone());
        let evaluation =
            portcullis_policy::judgement::decide_action(&policy, "shell", &action, &ctx, &confines);
        contained += usize::from(evaluation.decision == Decision::Contain);
        if evaluation.decision == Decision::Prompt {
            prompted += 1;
            let reason = evaluation.deciding_reason.clone().unwrap_or_default();
            *causes.entry(cause(&reason)).or_default() += 1;
        }
    }
    let share = prompted as f64 / commands.len() as f64;
    println!("{prompted} of {} real agent commands prompt ({:.2} %)", commands.len(), share * 100.0);
    println!(
        "{contained} run contained without asking ({:.1} %)",
        contained as f64 / commands.len() as f64 * 100.0
    );
    let mut ranked: Vec<(usize, String)> = causes.into_iter().map(|(c, n)| (n, c)).collect();
    ranked.sort_by(|a, b| b.cmp(a));
    for (n, c) in ranked.iter().take(12) {
        println!("  {n:5}  {c}");
    }
    assert!(share <= CEILING, "{:.2} % prompt, over the ceiling of {:.1} %", share * 100.0, CEILING * 100.0);
}
