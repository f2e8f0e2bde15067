//! Issue 53, "quiet": the 5,546 shell commands four real coding agents ran (tests/benign/real-agents,
//! from public run logs; SOURCES.md), judged by a policy that allows every program and the whole disk,
//! so that what still prompts is the judge's own doing. Prints the share and its causes; holds the share
//! at or under its ceiling, which only ever comes down as the judge reads more (the goal is 1 %).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::print_stdout)]

use portcullis_policy::{Decision, EvalContext, Policy, PolicyLayer};
use std::collections::BTreeMap;

/// The largest share of the corpus that may prompt (398, 7.2 %, when the corpus came in; 395, 7.1 %,
/// once quoted heredocs, plain assignments and literal variables were read).
const CEILING: f64 = 0.0713;

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
    for command in &commands {
        let evaluation = policy.evaluate_command(command, &ctx);
        if evaluation.decision == Decision::Prompt {
            prompted += 1;
            let reason = evaluation.deciding_reason.clone().unwrap_or_default();
            *causes.entry(cause(&reason)).or_default() += 1;
        }
    }
    let share = prompted as f64 / commands.len() as f64;
    println!("{prompted} of {} real agent commands prompt ({:.1} %)", commands.len(), share * 100.0);
    let mut ranked: Vec<(usize, String)> = causes.into_iter().map(|(c, n)| (n, c)).collect();
    ranked.sort_by(|a, b| b.cmp(a));
    for (n, c) in ranked.iter().take(12) {
        println!("  {n:5}  {c}");
    }
    assert!(share <= CEILING, "{:.2} % prompt, over the ceiling of {:.1} %", share * 100.0, CEILING * 100.0);
}
