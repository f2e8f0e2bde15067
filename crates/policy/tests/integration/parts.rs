//! The parts of a shell command, each with its own verdict: the operator's card shows which sub-command
//! or redirection caused a prompt, and which parts the parser could not see through. A table of
//! commands, each with the parts it must show.

// Test support code outside #[test] functions may unwrap and panic, like the tests themselves.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use portcullis_policy::{Decision, EvalContext, PartKind, Policy, PolicyLayer};
use std::path::PathBuf;

const POLICY: &str = r#"{
  "commands": {
    "default": "prompt",
    "rules": [
      { "id": "reads", "pattern": [["ls", "cat", "echo", "wc"]], "decision": "allow" },
      { "id": "push", "pattern": ["git", "push"], "decision": "prompt", "justification": "publishes" },
      { "id": "no-rm-root", "pattern": ["rm", "-rf", "/"], "decision": "forbidden" }
    ]
  },
  "paths": { "roots": [ { "path": "/project", "access": "write" } ] }
}"#;

use Decision::{Allow, Contain, Forbidden, Prompt};
use PartKind::{Command, Redirection, Unseen};

/// (command, [(kind, text, decision, deciding rule id, unseen)]).
type Row = (&'static str, &'static [(PartKind, &'static str, Decision, Option<&'static str>, bool)]);

const TABLE: &[Row] = &[
    ("ls -la", &[(Command, "ls -la", Allow, Some("reads"), false)]),
    (
        "git push origin main && echo ok | wc -l",
        &[
            (Command, "git push origin main", Prompt, Some("push"), false),
            (Command, "echo ok", Allow, Some("reads"), false),
            (Command, "wc -l", Allow, Some("reads"), false),
        ],
    ),
    ("make build", &[(Command, "make build", Prompt, None, false)]),
    (
        "echo hi > /etc/motd",
        &[
            (Command, "echo hi", Allow, Some("reads"), false),
            (Redirection, "> /etc/motd", Forbidden, None, false),
        ],
    ),
    (
        "cat notes.txt > out.txt",
        &[
            (Command, "cat notes.txt", Allow, Some("reads"), false),
            (Redirection, "> out.txt", Allow, None, false),
        ],
    ),
    // The rule allows `echo`, but a word computed at run time makes it contained (no rule decided that);
    // the substitution's command is judged as a part of its own (no rule names `whoami`: the default).
    (
        "echo $(whoami)",
        &[(Command, "echo $(whoami)", Contain, None, true), (Command, "whoami", Prompt, None, false)],
    ),
    // What cannot be read is contained; the `eval` itself is a program no rule names (the default).
    (
        "eval \"$x\"",
        &[(Unseen, "eval \"$x\"", Contain, None, true), (Command, "eval $x", Prompt, None, true)],
    ),
    (
        "rm -rf / ; ls",
        &[
            (Command, "rm -rf /", Forbidden, Some("no-rm-root"), false),
            (Command, "ls", Allow, Some("reads"), false),
        ],
    ),
];

fn policy() -> Policy {
    let layer = PolicyLayer::parse("p.json", POLICY, PathBuf::from("/project")).unwrap();
    Policy::from_layers(vec![layer]).unwrap()
}

#[test]
fn each_part_carries_its_own_verdict() {
    let policy = policy();
    let ctx = EvalContext { cwd: PathBuf::from("/project"), home: None };
    for (command, want) in TABLE {
        let e = policy.evaluate_command(command, &ctx);
        let got: Vec<_> = e
            .parts
            .iter()
            .map(|p| (p.kind, p.text.as_str(), p.decision, p.rule.as_ref().map(|r| r.id.as_str()), p.unseen))
            .collect();
        let want: Vec<_> = want.iter().map(|w| (w.0, w.1, w.2, w.3, w.4)).collect();
        assert_eq!(got, want, "{command}");
        // The whole is the strictest part (no other reason raised it here).
        let strictest = e.parts.iter().map(|p| p.decision).max().unwrap();
        assert_eq!(e.decision, strictest, "{command}");
    }
}

/// The parts are folded in exactly as the whole was judged before parts existed: the deciding rule and
/// reason of the whole are those of the first part at the strictest level.
#[test]
fn the_whole_keeps_the_deciding_rule_of_the_part_that_decided() {
    let policy = policy();
    let ctx = EvalContext { cwd: PathBuf::from("/project"), home: None };
    let e = policy.evaluate_command("ls && git push && make", &ctx);
    assert_eq!(e.decision, Prompt);
    assert_eq!(e.deciding_rule.map(|r| r.id), Some("push".to_owned()));
    assert_eq!(e.parts.len(), 3);
    let redirected = policy.evaluate_command("ls > /etc/x", &ctx);
    assert_eq!(redirected.decision, Forbidden);
    assert_eq!(redirected.parts[1].paths, vec!["/etc/x".to_owned()]);
    assert!(redirected.deciding_reason.unwrap().contains("/etc/x"));
}
