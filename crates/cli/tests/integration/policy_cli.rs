//! `portcullis policy check|test|lint|replay` and `portcullis call`, run as a user runs them: through the
//! binary, with policies found the way the hub finds them, ledgers written by real calls, and the
//! terminal approver answered on a real pseudo-terminal (`script`).
// Fixture builders and run helpers are not #[test] fns, so clippy.toml's test allowance misses them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::{Value, json};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use tempfile::TempDir;

const POLICY_A: &str = r#"{
  "$schema": "../schemas/policy.schema.json",
  "commands": {
    "default": "prompt",
    "rules": [
      { "id": "listing", "pattern": [["ls", "echo"]], "decision": "allow", "match": ["ls -la"] },
      { "id": "remove", "pattern": ["rm"], "decision": "forbidden", "justification": "deletes files",
        "match": ["rm -rf x"] }
    ]
  },
  "paths": { "roots": [ { "path": ".", "access": "write" } ] },
  "tests": [
    { "name": "listing is fine", "call": { "name": "shell", "arguments": { "command": "ls" } }, "expect": "allow" }
  ]
}
"#;

/// A home, a user config dir and a project, isolated from the machine's own.
struct Env {
    dir: TempDir,
}

impl Env {
    fn new() -> Env {
        let dir = tempfile::tempdir().unwrap();
        for sub in ["home", "config", "proj/sub", "elsewhere"] {
            std::fs::create_dir_all(dir.path().join(sub)).unwrap();
        }
        Env { dir }
    }

    fn path(&self, sub: &str) -> PathBuf {
        std::fs::canonicalize(self.dir.path()).unwrap().join(sub)
    }

    fn write(&self, sub: &str, text: &str) -> PathBuf {
        let path = self.path(sub);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        path
    }

    fn cmd(&self) -> Command {
        self.program(env!("CARGO_BIN_EXE_portcullis"))
    }

    /// `program` with this environment's home, config dir and working directory.
    fn program(&self, program: &str) -> Command {
        let mut cmd = Command::new(program);
        cmd.env_remove("RUST_LOG")
            .env_remove("XDG_CONFIG_HOME")
            .env("HOME", self.path("home"))
            .env("PORTCULLIS_CONFIG_DIR", self.path("config"))
            .current_dir(self.path("elsewhere"))
            .stdin(Stdio::null());
        cmd
    }

    fn run(&self, args: &[&str]) -> Output {
        self.cmd().args(args).output().unwrap()
    }

    /// Runs with an exact expected exit code; returns stdout.
    fn expect(&self, code: i32, args: &[&str]) -> String {
        let out = self.run(args);
        let stdout = String::from_utf8(out.stdout).unwrap();
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert_eq!(out.status.code(), Some(code), "{args:?}\nstdout: {stdout}\nstderr: {stderr}");
        stdout
    }

    fn json(&self, args: &[&str]) -> Value {
        serde_json::from_str(self.expect(0, args).trim()).unwrap()
    }

    /// A bad-input run: exit 2, one error line with this code, nothing on stdout.
    fn fails(&self, code: &str, args: &[&str]) -> String {
        let out = self.run(args);
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(out.stdout.is_empty());
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.starts_with(&format!("portcullis: error[{code}]: ")), "{stderr}");
        stderr
    }
}

fn ids(rules: &Value) -> Vec<&str> {
    rules.as_array().unwrap().iter().map(|r| r["id"].as_str().unwrap()).collect()
}

#[test]
fn check_finds_the_built_in_then_project_then_user_policies() {
    let env = Env::new();
    let proj_sub = env.path("proj/sub");
    let proj_sub = proj_sub.to_str().unwrap();
    // Nothing found: the built-in default, rooted at the working directory.
    let v = env.json(&["policy", "check", "--json", "--cwd", proj_sub, "--", "ls -la"]);
    assert_eq!(v["policies"], json!(["built-in default policy"]));
    assert_eq!(v["decision"], "allow");
    // The project's policy, found from a folder below it.
    let project = env.write(
        "proj/.portcullis/policy.json",
        r#"{ "commands": { "rules": [ { "id": "ask-ls", "pattern": ["ls"], "decision": "prompt" } ] } }"#,
    );
    let v = env.json(&["policy", "check", "--json", "--cwd", proj_sub, "--", "ls -la"]);
    assert_eq!(v["policies"], json!([project.display().to_string()]));
    assert_eq!(v["decision"], "prompt");
    // The user's policy layers under it; the strictest decision wins.
    let user = env.write(
        "config/policy.json",
        r#"{ "commands": { "rules": [ { "id": "no-make", "pattern": ["make"], "decision": "forbidden" } ] } }"#,
    );
    let v = env.json(&["policy", "check", "--json", "--cwd", proj_sub, "--", "echo hi && make"]);
    assert_eq!(v["policies"], json!([user.display().to_string(), project.display().to_string()]));
    assert_eq!(v["decision"], "forbidden");
    assert_eq!(v["deciding_rule"]["id"], "no-make");
    assert_eq!(v["deciding_rule"]["source"], user.display().to_string());
    // The current directory is used without --cwd.
    let out = env.cmd().current_dir(proj_sub).args(["policy", "check", "--", "make"]).output().unwrap();
    assert!(String::from_utf8(out.stdout).unwrap().contains("decision: forbidden"));
}

#[test]
fn check_reports_every_sub_command_rule_and_path() {
    let env = Env::new();
    let policy = env.write("proj/.portcullis/policy.json", POLICY_A);
    let policy = policy.to_str().unwrap();
    let cwd = env.path("proj");
    let cwd = cwd.to_str().unwrap();
    let v =
        env.json(&["policy", "check", "--json", "--policy", policy, "--cwd", cwd, "--", "ls && rm -rf ~"]);
    assert_eq!(v["decision"], "forbidden");
    assert_eq!(v["commands"], json!([["ls"], ["rm", "-rf", "~"]]));
    assert_eq!(ids(&v["matched_rules"]), ["listing", "remove"]);
    assert_eq!(v["matched_rules"][1]["source"], policy);
    assert_eq!(v["matched_rules"][1]["decision"], "forbidden");
    // `ls`'s rule, `rm`'s rule, `rm` acting on the home folder that holds the hub's credentials, and
    // the home folder written (deleted) outside every write root.
    assert_eq!(v["reasons"].as_array().unwrap().len(), 4, "{}", v["reasons"]);
    let accesses = v["accesses"].as_array().unwrap();
    let home = accesses.iter().find(|a| a["via"] == "rm operand").unwrap();
    assert_eq!(
        (&home["access"], &home["recursive"], &home["decision"]),
        (&json!("write"), &json!(true), &json!("forbidden"))
    );
    // Several words after `--` are one command's argv, as the user's shell split them.
    let v = env.json(&[
        "policy",
        "check",
        "--json",
        "--policy",
        policy,
        "--cwd",
        cwd,
        "--",
        "echo",
        "a; rm -rf x",
    ]);
    assert_eq!(v["decision"], "allow");
    assert_eq!(v["commands"], json!([["echo", "a; rm -rf x"]]));
    // A call: paths are canonical; writing outside the root is forbidden.
    let call =
        json!({"name": "write", "arguments": {"path": "sub/../../elsewhere/x", "content": "y"}}).to_string();
    let v = env.json(&["policy", "check", "--json", "--policy", policy, "--cwd", cwd, "--call", &call]);
    assert_eq!(v["decision"], "forbidden");
    assert_eq!(v["paths"], json!([env.path("elsewhere/x").display().to_string()]));
    // Redirections into denied paths.
    let v = env.json(&[
        "policy",
        "check",
        "--json",
        "--policy",
        policy,
        "--cwd",
        cwd,
        "--",
        "echo k >> ~/.ssh/authorized_keys",
    ]);
    assert_eq!(v["decision"], "forbidden");
    // A call is judged as a live call is: a tool no server provides is refused as unknown (issue 11).
    let elsewhere = env.path("elsewhere");
    let elsewhere = elsewhere.to_str().unwrap();
    let v = env.json(&["policy", "check", "--json", "--cwd", elsewhere, "--call", r#"{"name": "mcp:x:y"}"#]);
    assert_eq!(v["decision"], "unknown_tool");
    // Human output names the deciding rule.
    let text = env.expect(0, &["policy", "check", "--policy", policy, "--cwd", cwd, "--", "ls; rm x"]);
    assert!(text.contains("decision: forbidden"), "{text}");
    // ... with the line that declares it.
    assert!(text.contains(&format!("decided by: rule remove ({policy}:7)")), "{text}");
    assert!(text.contains(&format!("  remove (forbidden) in {policy}:7")), "{text}");
}

#[test]
fn bad_input_is_one_clear_error_and_exit_2() {
    let env = Env::new();
    let broken =
        env.write("proj/broken.json", "{\n  \"commands\": {\n    \"rules\": [ { \"id\": 3 } ]\n  }\n}\n");
    let broken = broken.to_str().unwrap();
    let err = env.fails("policy_syntax", &["policy", "check", "--policy", broken, "--", "ls"]);
    assert!(err.contains(&format!("{broken}:3:")), "{err}");
    let bad_example =
        env.write("proj/example.json", &POLICY_A.replace("\"match\": [\"ls -la\"]", "\"match\": [\"lsof\"]"));
    let err =
        env.fails("policy_rule", &["policy", "check", "--policy", bad_example.to_str().unwrap(), "--", "ls"]);
    assert!(err.contains("rule `listing`") && err.contains("\"lsof\" should match"), "{err}");
    env.fails("bad_argument", &["policy", "check", "--call", "{not json"]);
    env.fails("bad_argument", &["policy", "check", "--call", r#"{"arguments": {}}"#]);
    env.fails("bad_argument", &["policy", "check"]);
    env.fails("bad_argument", &["policy", "check", "--cwd", "/no/such/dir", "--", "ls"]);
    env.fails("policy_unreadable", &["policy", "test", "--policy", "/no/such/policy.json"]);
    env.fails("bad_argument", &["call", "shell", "{nope"]);
}

#[test]
fn test_lists_every_failure_and_exits_1() {
    let env = Env::new();
    let good = env.write("proj/good.json", POLICY_A);
    let out = env.expect(0, &["policy", "test", "--policy", good.to_str().unwrap()]);
    assert!(out.contains("2 rule examples, 1 test cases: 3 passed, 0 failed"), "{out}");
    let bad_text = POLICY_A
        .replace("\"match\": [\"ls -la\"]", "\"match\": [\"ls -la\", \"lsof\"], \"not_match\": [\"echo x\"]")
        .replace("\"expect\": \"allow\"", "\"expect\": \"forbidden\"");
    let bad = env.write("proj/bad.json", &bad_text);
    let bad = bad.to_str().unwrap();
    let out = env.expect(1, &["policy", "test", "--policy", bad]);
    assert!(
        out.contains(&format!("FAIL {bad}:"))
            && out.contains("rule `listing`: example \"lsof\" should match but does not"),
        "{out}"
    );
    assert!(out.contains("example \"echo x\" should not match but does"), "{out}");
    assert!(
        out.contains("test \"listing is fine\": expected forbidden, got allow (decided by rule listing"),
        "{out}"
    );
    assert!(out.contains("3 failed"), "{out}");
    let v: Value =
        serde_json::from_str(env.expect(1, &["policy", "test", "--json", "--policy", bad]).trim()).unwrap();
    assert_eq!(v["failed"], 3);
    // The shipped default policy passes its own tests.
    let default =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tool-manifests/policies/default.json");
    env.expect(0, &["policy", "test", "--policy", default.to_str().unwrap()]);
}

#[test]
fn lint_reports_dead_and_voided_rules() {
    let env = Env::new();
    let clean = env.write("proj/clean.json", POLICY_A);
    env.expect(0, &["policy", "lint", "--policy", clean.to_str().unwrap()]);
    let messy = env.write(
        "proj/messy.json",
        r#"{ "commands": { "rules": [
  { "id": "push-main", "pattern": ["git", "push", "origin", "main"], "decision": "allow", "match": ["git push origin main"] },
  { "id": "git-remote", "pattern": ["git", "push"], "decision": "prompt", "match": ["git push"] },
  { "id": "by-path", "pattern": ["/usr/bin/curl"], "decision": "forbidden" }
] } }"#,
    );
    let messy = messy.to_str().unwrap();
    let out = env.expect(1, &["policy", "lint", "--policy", messy]);
    assert!(out.contains(&format!("warning[voided_allow]: {messy}:2:")), "{out}");
    assert!(out.contains("`git-remote`"), "{out}");
    assert!(out.contains(&format!("warning[never_matches]: {messy}:4:")), "{out}");
    assert!(out.contains("3 rules: 2 warnings, 0 notes"), "{out}");
}

/// Runs `portcullis call` and returns (exit code, stdout).
fn call(env: &Env, policy: &Path, db: &Path, tool: &str, args: Value) -> (i32, String) {
    let out = env
        .cmd()
        .args(["call", tool, &args.to_string(), "--approver", "deny", "--json", "--policy"])
        .arg(policy)
        .arg("--cwd")
        .arg(env.path("proj"))
        .arg("--db")
        .arg(db)
        .output()
        .unwrap();
    (out.status.code().unwrap(), String::from_utf8(out.stdout).unwrap())
}

#[test]
fn replay_lists_the_calls_a_new_policy_would_decide_differently() {
    let env = Env::new();
    let a = env.write("proj/.portcullis/policy.json", POLICY_A);
    let db = env.path("ledger.db");
    std::fs::write(env.path("proj/victim"), "v").unwrap();
    assert_eq!(call(&env, &a, &db, "shell", json!({"command": "ls"})).0, 0);
    let (code, out) = call(&env, &a, &db, "shell", json!({"command": "touch made"}));
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("non-interactive"), "{out}");
    assert_eq!(call(&env, &a, &db, "shell", json!({"command": "rm victim"})).0, 1);
    assert_eq!(call(&env, &a, &db, "read", json!({"path": "nothing-here"})).0, 1);
    assert!(!env.path("proj/made").exists() && env.path("proj/victim").exists(), "denied calls never ran");
    let db = db.to_str().unwrap();
    let a = a.to_str().unwrap();

    // Against the policy that decided them: nothing changes.
    let out = env.expect(0, &["policy", "replay", "--db", db, "--policy", a, "--fail-on-change"]);
    assert!(out.contains("4 calls: 4 replayed, 0 would change, 4 unchanged"), "{out}");

    // A candidate that forbids `ls` and allows `touch`.
    let b = env.write(
        "proj/candidate.json",
        &POLICY_A
            .replace("[[\"ls\", \"echo\"]], \"decision\": \"allow\"", "[[\"ls\", \"echo\"]], \"decision\": \"forbidden\"")
            .replace("\"expect\": \"allow\"", "\"expect\": \"forbidden\"")
            .replace(
                "\"rules\": [",
                "\"rules\": [\n      { \"id\": \"touching\", \"pattern\": [\"touch\"], \"decision\": \"allow\", \"match\": [\"touch x\"] },",
            ),
    );
    let b = b.to_str().unwrap();
    let out = env.expect(1, &["policy", "replay", "--db", db, "--policy", b, "--fail-on-change"]);
    assert!(out.contains(": allow -> forbidden (rule listing"), "{out}");
    assert!(out.contains(": prompt -> allow (rule touching"), "{out}");
    assert!(out.contains("4 calls: 4 replayed, 2 would change, 2 unchanged"), "{out}");
    assert!(out.contains("allow -> forbidden: 1, prompt -> allow: 1"), "{out}");
    env.expect(0, &["policy", "replay", "--db", db, "--policy", b]);
    let lines: Vec<Value> = env
        .expect(0, &["policy", "replay", "--json", "--db", db, "--policy", b])
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3);
    assert_eq!(lines[0]["subject"], "ls");
    assert_eq!((lines[0]["before"].as_str(), lines[0]["after"].as_str()), (Some("allow"), Some("forbidden")));
    assert_eq!(lines[2]["summary"]["changed"], 2);
    env.fails("ledger_missing", &["policy", "replay", "--db", "/no/such.db", "--policy", b]);
}

/// Runs `portcullis call` on a pseudo-terminal (util-linux `script`), typing `answer`.
fn call_on_terminal(env: &Env, policy: &Path, command: &str, answer: &str) -> String {
    call_on_terminal_with(env, policy, command, answer, &[])
}

fn call_on_terminal_with(
    env: &Env,
    policy: &Path,
    command: &str,
    answer: &str,
    vars: &[(&str, &str)],
) -> String {
    let mut child = env
        .program("script")
        .envs(vars.iter().copied())
        .args([
            "-qec",
            r#""$PORTCULLIS_BIN" call shell "$CALL_ARGS" --policy "$POLICY" --cwd "$PROJ""#,
            "/dev/null",
        ])
        .env("SHELL", "/bin/sh")
        .env("PORTCULLIS_BIN", env!("CARGO_BIN_EXE_portcullis"))
        .env("CALL_ARGS", json!({ "command": command }).to_string())
        .env("POLICY", policy)
        .env("PROJ", env.path("proj"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("util-linux `script` gives the approver a terminal");
    child.stdin.take().unwrap().write_all(answer.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn the_terminal_approver_asks_and_acts_on_the_answer() {
    let env = Env::new();
    let policy = env.write("proj/.portcullis/policy.json", POLICY_A);
    // Deny: the command never runs.
    let out = call_on_terminal(&env, &policy, "touch denied-file", "d\n");
    assert!(out.contains("approval needed for `shell`"), "{out}");
    assert!(out.contains("command: touch denied-file"), "{out}");
    assert!(out.contains("blocked (execution_denied): denied by the operator"), "{out}");
    assert!(!env.path("proj/denied-file").exists());
    // Once: it runs; the policy file is unchanged.
    let before = std::fs::read_to_string(&policy).unwrap();
    let out = call_on_terminal(&env, &policy, "touch once-file", "what\no\n");
    assert!(out.contains("answer o, s, a or d"), "an unknown answer is asked again: {out}");
    assert!(env.path("proj/once-file").exists(), "{out}");
    assert_eq!(std::fs::read_to_string(&policy).unwrap(), before);
    // Always: it runs and a rule is appended that allows it from now on.
    let out = call_on_terminal(&env, &policy, "touch always-file", "a\n");
    assert!(out.contains("[a] always (adds rule always-"), "{out}");
    assert!(env.path("proj/always-file").exists(), "{out}");
    let after = std::fs::read_to_string(&policy).unwrap();
    assert!(after.contains("\"pattern\":[\"touch\",\"always-file\"]"), "{after}");
    let policy = policy.to_str().unwrap();
    let proj = env.path("proj");
    let cwd = proj.to_str().unwrap();
    let v =
        env.json(&["policy", "check", "--json", "--policy", policy, "--cwd", cwd, "--", "touch always-file"]);
    assert_eq!(v["decision"], "allow");
    assert!(v["deciding_rule"]["id"].as_str().unwrap().starts_with("always-"));
    env.expect(0, &["policy", "test", "--policy", policy]);
    env.expect(0, &["policy", "lint", "--policy", policy]);
}

#[test]
fn always_is_never_offered_for_a_command_holding_a_secret() {
    let env = Env::new();
    let policy = env.write("proj/.portcullis/policy.json", POLICY_A);
    let secret = "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB";
    let before = std::fs::read_to_string(&policy).unwrap();
    let out = call_on_terminal_with(
        &env,
        &policy,
        &format!("touch file-{secret}"),
        "a\nd\n",
        &[("DEPLOY_TOKEN", secret)],
    );
    assert!(out.contains("always unavailable: the command holds a secret"), "{out}");
    assert!(!out.contains("[a] always"), "{out}");
    assert_eq!(std::fs::read_to_string(&policy).unwrap(), before, "nothing written to the policy");
}

/// A database URL's password in the environment (a name that is not on any marker list) and secrets
/// split by shell quotes never reach the ledger in clear: not in the recorded command, its arguments or
/// the output. The whole ledger file is searched.
#[test]
fn url_passwords_and_quote_split_secrets_stay_out_of_the_ledger() {
    let env = Env::new();
    let policy = env.write("proj/.portcullis/policy.json", POLICY_A);
    let db = env.path("ledger.db");
    let password = "pw-Secret-4242";
    let token = "ghp_0123456789abcdefghijABCDEFGHIJ012345";
    let command = "echo pw-Secret''-4242 ghp_0123456789\"\"abcdefghijABCDEFGHIJ012345 x://u:pw-Secret-4242@h";
    let out = env
        .cmd()
        .env("DATABASE_URL", format!("postgres://app:{password}@db:5432/app"))
        .args(["call", "shell", &json!({ "command": command }).to_string(), "--approver", "deny", "--json"])
        .arg("--policy")
        .arg(&policy)
        .arg("--cwd")
        .arg(env.path("proj"))
        .arg("--db")
        .arg(&db)
        .output()
        .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("[REDACTED]"), "{stdout}");
    let mut ledger = std::fs::read(&db).unwrap();
    for beside in ["ledger.db-wal", "ledger.db.journal"] {
        if let Ok(bytes) = std::fs::read(env.path(beside)) {
            ledger.extend(bytes);
        }
    }
    let ledger = String::from_utf8_lossy(&ledger);
    for leak in [password, "pw-Secret''-4242", token, "ghp_0123456789\\\"\\\"abcdef"] {
        assert!(!ledger.contains(leak), "{leak} is in the ledger");
        assert!(!stdout.contains(leak), "{leak} is in the result: {stdout}");
    }
    assert!(ledger.contains("echo [REDACTED] [REDACTED] x://u:[REDACTED]@h"), "the call is recorded");
}

/// `check` lists every file a command's operands and options name, with its access and its own verdict,
/// escaped for the terminal; the read of a file outside the project needs an operator even when the
/// program's rule allows it, and a write there is forbidden.
#[test]
fn check_lists_every_file_with_its_access_and_verdict() {
    let env = Env::new();
    let policy = env.write("proj/.portcullis/policy.json", POLICY_A);
    env.write("proj/notes.txt", "x");
    let policy = policy.to_str().unwrap();
    let proj = env.path("proj");
    let cwd = proj.to_str().unwrap();
    let home = env.path("home");
    let check =
        |command: &str| env.expect(0, &["policy", "check", "--policy", policy, "--cwd", cwd, "--", command]);
    let out = check("ls notes.txt ../home");
    assert!(out.starts_with("decision: prompt\n"), "{out}");
    assert!(out.contains(&format!("  read  {cwd}/notes.txt via ls operand: allow\n")), "{out}");
    assert!(out.contains(&format!("  read  {} via ls operand: prompt: ", home.display())), "{out}");
    let out = check("echo x && ls \"$HOME\"");
    // A path known only at run time is contained (the whole is asked: its default prompts).
    assert!(
        out.contains("via ls operand: contain: `ls operand` names \"$HOME\", a path known only"),
        "{out}"
    );
    let out = check("ls $'/tmp/\\e[31mred'");
    assert!(out.contains("/tmp/\\x1b[31mred via ls operand"), "{out}");
    assert!(!out.contains('\u{1b}'), "{out}");
}

/// An agent's `portcullis api …` or `portcullis operator …` acts as the operator with the credential
/// the program reads itself: asked, never allowed unseen, whatever the rules say (the sandbox also hides
/// the credential from it).
#[test]
fn the_operators_own_commands_are_never_allowed_unseen() {
    let env = Env::new();
    let policy = env.write(
        "proj/.portcullis/policy.json",
        r#"{ "commands": { "default": "allow", "rules": [ { "id": "all", "pattern": ["portcullis"], "decision": "allow" } ] } }"#,
    );
    let (policy, cwd) = (policy.to_str().unwrap().to_owned(), env.path("proj"));
    let check = |command: &str| {
        env.json(&[
            "policy",
            "check",
            "--json",
            "--policy",
            &policy,
            "--cwd",
            cwd.to_str().unwrap(),
            "--",
            command,
        ])
    };
    for command in [
        r#"portcullis api answer_approval '{"id": 1, "answer": {"answer": "once"}}'"#,
        "portcullis operator link --name agent",
        "/usr/local/bin/portcullis --quiet operator link",
        "portcullis \"$SUB\" link",
    ] {
        let v = check(command);
        assert_eq!(v["decision"], "prompt", "{command}: {v}");
        assert!(v.to_string().contains("OperatorCommand"), "{command}: {v}");
    }
    let v = check("portcullis ledger stats");
    assert_eq!(v["decision"], "allow", "{v}");
}
