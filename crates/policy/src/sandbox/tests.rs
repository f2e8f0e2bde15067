use super::*;
use crate::document::SandboxSettings;
use crate::layer::PolicyLayer;

fn confining() -> SandboxSupport {
    SandboxSupport { landlock_abi: Some(7), namespaces: true, unavailable: None }
}

fn policy_in(dir: &Path, text: &str) -> Policy {
    let layer = PolicyLayer::parse("test.json", text, dir.to_path_buf()).unwrap();
    Policy::from_layers(vec![layer]).unwrap()
}

struct World {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    project: PathBuf,
    home: PathBuf,
}

fn world() -> World {
    let tmp = tempfile::tempdir().unwrap();
    let root = canonicalize_lenient(tmp.path()).unwrap();
    let project = root.join("project");
    let home = root.join("home");
    for dir in
        [project.join(".git/hooks"), project.join(".portcullis"), home.join(".ssh"), home.join(".cargo/bin")]
    {
        std::fs::create_dir_all(dir).unwrap();
    }
    std::fs::write(project.join(".git/config"), "").unwrap();
    World { _tmp: tmp, root, project, home }
}

fn profile(w: &World, policy: &Policy, command: &str) -> SandboxProfile {
    let ctx = EvalContext { cwd: w.project.clone(), home: Some(w.home.clone()) };
    let evaluation = policy.evaluate_command(command, &ctx);
    policy.sandbox_profile(&evaluation, &ctx, &confining())
}

#[test]
fn the_project_is_writable_and_its_policy_folder_hidden_and_git_hooks_read_only() {
    let w = world();
    let policy = policy_in(&w.project, r#"{"commands":{"default":"allow"}}"#);
    let p = profile(&w, &policy, "ls");
    assert_eq!(p.write, vec![w.project.clone()]);
    assert!(p.hidden.contains(&w.project.join(".portcullis")), "{:?}", p.hidden);
    // The whole repository folder: `.git/commondir` cannot be created, `.git` cannot be renamed away.
    assert!(p.read_only.contains(&w.project.join(".git")), "{:?}", p.read_only);
    assert!(p.read.contains(&w.home.join(".cargo")), "{:?}", p.read);
    assert!(!p.network);
    assert_eq!(p.enforcement, Enforcement::Confined);
    assert!(p.system.contains(&PathBuf::from("/usr")));
}

#[test]
fn a_home_root_still_hides_the_secrets_folders_in_it() {
    let w = world();
    let policy = policy_in(
        &w.project,
        &format!(
            r#"{{"paths":{{"roots":[{{"path":".","access":"write"}},{{"path":"{}","access":"read"}}]}}}}"#,
            w.home.display()
        ),
    );
    let p = profile(&w, &policy, "ls");
    assert!(p.read.contains(&w.home), "{:?}", p.read);
    assert!(p.hidden.contains(&w.home.join(".ssh")), "{:?}", p.hidden);
}

#[test]
fn secrets_outside_every_granted_tree_need_no_mount() {
    let w = world();
    let policy = policy_in(&w.project, r#"{}"#);
    let p = profile(&w, &policy, "ls");
    assert!(!p.hidden.contains(&w.home.join(".ssh")), "{:?}", p.hidden);
}

#[test]
fn only_a_rule_that_says_so_opens_the_network() {
    let w = world();
    let policy = policy_in(
        &w.project,
        r#"{"commands":{"rules":[
            {"id":"fetch","pattern":["curl"],"decision":"allow","network":true},
            {"id":"list","pattern":["ls"],"decision":"allow"}]}}"#,
    );
    let open = profile(&w, &policy, "curl -s http://127.0.0.1:1/");
    assert!(open.network);
    assert!(open.network_reason.unwrap().contains("`fetch`"));
    assert!(!profile(&w, &policy, "ls").network);
}

#[test]
fn named_hosts_are_listed_and_reached_only_through_the_egress_proxy() {
    let w = world();
    let policy = policy_in(
        &w.project,
        r#"{"commands":{"rules":[
            {"id":"npm-install","pattern":["npm","install"],"decision":"allow","network":["registry.npmjs.org"]},
            {"id":"npm-any","pattern":["npm"],"decision":"allow","network":["*.npmjs.com"]}]}}"#,
    );
    let p = profile(&w, &policy, "npm install left-pad");
    assert!(!p.network, "named hosts never open every host");
    let egress = p.egress.unwrap();
    assert_eq!(egress.hosts, vec!["registry.npmjs.org".to_owned(), "*.npmjs.com".to_owned()]);
    assert!(egress.by.starts_with("rule `npm-install` ("), "{}", egress.by);
    let reason = p.network_reason.unwrap();
    assert!(reason.contains("allows only registry.npmjs.org, *.npmjs.com"), "{reason}");
    assert!(reason.contains("through the hub's egress proxy"), "{reason}");
}

#[test]
fn across_layers_the_strictest_network_wins() {
    let w = world();
    let layer = |source: &str, text: &str| PolicyLayer::parse(source, text, w.project.clone()).unwrap();
    let user = layer(
        "user.json",
        r#"{"commands":{"rules":[{"id":"curl-any","pattern":["curl"],"decision":"allow","network":true}]}}"#,
    );
    let project = layer(
        "project.json",
        r#"{"commands":{"rules":[{"id":"curl-gh","pattern":["curl"],"decision":"allow","network":["github.com:443"]}]}}"#,
    );
    let both = Policy::from_layers(vec![user.clone(), project]).unwrap();
    let p = profile(&w, &both, "curl https://github.com/");
    assert_eq!(p.egress.map(|e| e.hosts), Some(vec!["github.com:443".to_owned()]));
    assert!(!p.network);
    let alone = Policy::from_layers(vec![user]).unwrap();
    let p = profile(&w, &alone, "curl https://github.com/");
    assert!(p.network && p.egress.is_none());
    assert!(p.network_reason.unwrap().contains("allows any host"));
    let other = layer(
        "other.json",
        r#"{"commands":{"rules":[{"id":"curl-gl","pattern":["curl"],"decision":"allow","network":["gitlab.com"]}]}}"#,
    );
    let apart = Policy::from_layers(vec![both.layers()[1].clone(), other]).unwrap();
    let p = profile(&w, &apart, "curl https://github.com/");
    assert_eq!(p.egress.map(|e| e.hosts), Some(Vec::new()));
    assert!(p.network_reason.unwrap().contains("no host in common"));
}

#[test]
fn a_host_a_rule_cannot_name_is_an_error_at_its_rule() {
    for (host, says) in [("10.0.0.1", "IP address"), ("*", "write `true`"), ("x.io:99999", "not a port")] {
        let text = format!(
            r#"{{"commands":{{"rules":[{{"id":"bad","pattern":["curl"],"decision":"allow","network":["{host}"]}}]}}}}"#
        );
        let layer = PolicyLayer::parse("p.json", &text, PathBuf::from("/tmp")).unwrap();
        let Err(e) = Policy::from_layers(vec![layer]) else { panic!("{host} loaded") };
        let e = e.to_string();
        assert!(e.contains("p.json") && e.contains(says), "{host}: {e}");
    }
}

#[test]
fn an_approved_read_outside_the_roots_is_readable_and_nothing_else_there() {
    let w = world();
    let outside = w.root.join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("notes.txt"), "x").unwrap();
    std::fs::write(outside.join("other.txt"), "x").unwrap();
    let policy = policy_in(&w.project, r#"{"commands":{"default":"allow"}}"#);
    let p = profile(&w, &policy, &format!("cat {}", outside.join("notes.txt").display()));
    assert!(p.read.contains(&outside.join("notes.txt")), "{:?}", p.read);
    assert!(!p.read.iter().any(|r| r == &outside || outside.join("other.txt").starts_with(r)));
}

#[test]
fn limits_take_the_smallest_value_of_every_layer_and_reject_nonsense() {
    let mut rules = SandboxRules::default();
    let doc: SandboxSettings =
        serde_json::from_str(r#"{"mode":"required","limits":{"memory_mb":512,"processes":64}}"#).unwrap();
    rules.merge(&doc).unwrap();
    let doc: SandboxSettings =
        serde_json::from_str(r#"{"mode":"preferred","limits":{"memory_mb":1024}}"#).unwrap();
    rules.merge(&doc).unwrap();
    assert_eq!(rules.mode(), SandboxMode::Required);
    assert_eq!(rules.limits().memory_mb, 512);
    assert_eq!(rules.limits().processes, 64);
    assert_eq!(rules.limits().cpu_seconds, SandboxLimits::default().cpu_seconds);
    let bad: SandboxSettings = serde_json::from_str(r#"{"limits":{"processes":2}}"#).unwrap();
    let err = rules.merge(&bad).unwrap_err();
    assert!(err.contains("sandbox.limits.processes is 2"), "{err}");
}

#[test]
fn without_landlock_the_profile_says_why_it_is_unconfined() {
    let w = world();
    let policy = policy_in(&w.project, r#"{}"#);
    let ctx = EvalContext { cwd: w.project.clone(), home: Some(w.home.clone()) };
    let evaluation = policy.evaluate_command("ls", &ctx);
    let none = SandboxSupport { landlock_abi: None, namespaces: true, unavailable: None };
    let p = policy.sandbox_profile(&evaluation, &ctx, &none);
    assert_eq!(p.enforcement, Enforcement::Unconfined { reason: "this kernel has no Landlock".into() });
}

#[test]
fn a_projects_missing_policy_folder_is_reserved_so_no_command_can_create_it() {
    let w = world();
    std::fs::remove_dir_all(w.project.join(".portcullis")).unwrap();
    let policy = policy_in(&w.project, r#"{"commands":{"default":"allow"}}"#);
    let p = profile(&w, &policy, "ls");
    assert!(p.hidden.contains(&w.project.join(".portcullis")), "{:?}", p.hidden);
}

#[test]
fn a_command_writing_the_repository_gets_git_writable_but_its_executed_places_read_only() {
    let w = world();
    let policy = policy_in(&w.project, r#"{"commands":{"default":"allow"}}"#);
    for command in ["git commit -m x", "git -C . add -A", "ls && git stash"] {
        let p = profile(&w, &policy, command);
        assert!(!p.read_only.contains(&w.project.join(".git")), "{command}: {:?}", p.read_only);
        assert!(p.read_only.contains(&w.project.join(".git/hooks")), "{command}: {:?}", p.read_only);
        assert!(p.read_only.contains(&w.project.join(".git/config")), "{command}: {:?}", p.read_only);
    }
    for command in ["git status", "make", "git log", "cargo test"] {
        let p = profile(&w, &policy, command);
        assert!(p.read_only.contains(&w.project.join(".git")), "{command}: {:?}", p.read_only);
    }
}

#[test]
fn a_direct_writes_rule_opts_the_commands_it_allows_out_of_copy_on_write_but_never_a_contained_one() {
    let w = world();
    let policy = policy_in(
        &w.project,
        r#"{"commands":{"default":"allow","rules":[
            {"id":"dev","pattern":["npm","run","dev"],"decision":"allow","direct_writes":true}]}}"#,
    );
    // (command, writes in place)
    let rows = [("npm run dev", true), ("npm run build", false), ("npm run dev $(cat x)", false)];
    for (command, direct) in rows {
        let p = profile(&w, &policy, command);
        assert_eq!(p.direct_writes.is_some(), direct, "{command}: {:?}", p.direct_writes);
        assert!(p.direct_writes.iter().all(|why| why.contains("rule `dev` (test.json)")), "{command}");
    }
}
