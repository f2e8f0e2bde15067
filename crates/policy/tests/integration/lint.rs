//! `lint`: each kind of finding on a policy made to have it, and none on the shipped policies.
// Test helpers outside #[test] fns may unwrap and panic.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use portcullis_policy::lint::{LintKind, Severity, covers, lint};
use portcullis_policy::{Policy, PolicyLayer};
use std::path::PathBuf;

fn policy(rules: &str) -> Policy {
    let text = format!(r#"{{ "commands": {{ "rules": [ {rules} ] }} }}"#);
    Policy::from_layers_unchecked(vec![
        PolicyLayer::parse("lint.json", &text, PathBuf::from("/tmp")).unwrap(),
    ])
    .unwrap()
}

fn kinds(p: &Policy) -> Vec<(String, LintKind)> {
    lint(p).into_iter().filter(|f| f.severity == Severity::Warning).map(|f| (f.rule, f.kind)).collect()
}

#[test]
fn allow_rules_voided_by_broader_stricter_rules() {
    let p = policy(
        r#"{ "id": "push-main", "pattern": ["git", "push", "origin", "main"], "decision": "allow", "match": ["git push origin main"] },
           { "id": "git-remote", "pattern": ["git", ["push", "fetch"]], "decision": "prompt", "match": ["git push"] },
           { "id": "no-git", "pattern": ["git"], "decision": "forbidden", "match": ["git x"] }"#,
    );
    let found = kinds(&p);
    assert!(found.contains(&("push-main".into(), LintKind::VoidedAllow)), "{found:?}");
    assert!(found.contains(&("git-remote".into(), LintKind::Shadowed)), "{found:?}");
    assert!(!found.iter().any(|(r, _)| r == "no-git"), "{found:?}");
    let finding = lint(&p).into_iter().find(|f| f.rule == "push-main").unwrap();
    assert!(finding.related.is_some());
    assert_eq!((finding.line, finding.source.as_str()), (1, "lint.json"));
}

#[test]
fn rules_that_can_never_match() {
    let p = policy(
        r#"{ "id": "by-path", "pattern": ["/bin/rm"], "decision": "forbidden" },
           { "id": "two-words", "pattern": ["git push"], "decision": "prompt" },
           { "id": "empty-alternatives", "pattern": ["make", []], "decision": "allow" },
           { "id": "under-sudo", "pattern": ["sudo", "rm"], "decision": "forbidden", "match": ["sudo rm x"] },
           { "id": "wrapper", "pattern": ["nohup"], "decision": "prompt", "match": ["nohup x"] },
           { "id": "fine", "pattern": ["make", ["build", "test"]], "decision": "allow", "match": ["make test"] }"#,
    );
    let found = kinds(&p);
    for (rule, kind) in [
        ("by-path", LintKind::NeverMatches),
        ("two-words", LintKind::NeverMatches),
        ("empty-alternatives", LintKind::NeverMatches),
    ] {
        assert!(found.contains(&(rule.into(), kind)), "{rule}: {found:?}");
    }
    // Wrappers are judged as commands too (and their inner commands on their own).
    for fine in ["fine", "under-sudo", "wrapper"] {
        assert!(!found.iter().any(|(r, _)| r == fine), "{fine}: {found:?}");
    }
}

#[test]
fn redundant_rules_and_missing_examples() {
    let p = policy(
        r#"{ "id": "cargo", "pattern": ["cargo"], "decision": "allow", "match": ["cargo x"] },
           { "id": "cargo-test", "pattern": ["cargo", "test"], "decision": "allow", "match": ["cargo test"] },
           { "id": "twin-a", "pattern": ["npm", "ci"], "decision": "prompt", "match": ["npm ci"] },
           { "id": "twin-b", "pattern": ["npm", "ci"], "decision": "prompt", "match": ["npm ci"] },
           { "id": "untested", "pattern": ["make"], "decision": "allow" }"#,
    );
    let all = lint(&p);
    let found = kinds(&p);
    assert!(found.contains(&("cargo-test".into(), LintKind::Redundant)), "{found:?}");
    assert!(found.contains(&("twin-b".into(), LintKind::Redundant)), "{found:?}");
    assert!(!found.iter().any(|(r, _)| r == "twin-a" || r == "cargo"), "only the later twin: {found:?}");
    let note = all.iter().find(|f| f.rule == "untested").unwrap();
    assert_eq!((note.kind, note.severity), (LintKind::NoExamples, Severity::Note));
}

#[test]
fn coverage_is_prefix_and_alternatives() {
    use portcullis_policy::document::PatternElement::{AnyOf, Token};
    let t = |s: &str| Token(s.into());
    let any = |l: &[&str]| AnyOf(l.iter().map(|s| (*s).into()).collect());
    assert!(covers(&[t("git")], &[t("git"), t("push")]));
    assert!(!covers(&[t("git"), t("push")], &[t("git")]));
    assert!(covers(&[t("git"), any(&["push", "fetch"])], &[t("git"), t("push"), t("x")]));
    assert!(!covers(&[t("git"), t("push")], &[t("git"), any(&["push", "fetch"])]));
    assert!(covers(&[t("git"), any(&["push", "fetch", "pull"])], &[t("git"), any(&["push", "fetch"])]));
}

#[test]
fn the_shipped_policies_lint_clean() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut files = vec![root.join("tool-manifests/policies/default.json")];
    for entry in std::fs::read_dir(root.join("tests/policy-corpus")).unwrap() {
        files.push(entry.unwrap().path().join("policy.json"));
    }
    for file in files {
        let p = Policy::load(std::slice::from_ref(&file), file.parent().unwrap()).unwrap();
        let warnings: Vec<_> = lint(&p).into_iter().filter(|f| f.severity == Severity::Warning).collect();
        assert!(warnings.is_empty(), "{}: {warnings:#?}", file.display());
    }
}
