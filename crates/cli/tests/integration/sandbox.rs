//! Issue 14: commands the policy allows run inside kernel walls that match it. Through `portcullis
//! serve` and the official MCP TypeScript SDK client, real commands that the parser cannot see into
//! (scripts an agent wrote, an interpreter's code) try what the policy does not grant; the kernel refuses,
//! the result and the ledger say so, and nothing outside the roots changes. The same commands succeed
//! where the policy grants the access.
// Test helpers outside #[test] fns may unwrap and panic.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::{Served, http, interop_dir, ledger_show, node_modules, portcullis, serve_with, text_of};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::net::TcpListener;
use std::path::Path;
use std::time::{Duration, Instant};

/// The hub's PATH: Debian's programs, not a developer's shims (pyenv's live in a home the test replaces).
const PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// Every file below `dir` with its content (symlinks as their target).
fn snapshot(dir: &Path) -> BTreeMap<String, String> {
    let mut files = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap().flatten() {
            let path = entry.path();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            let content = if meta.file_type().is_symlink() {
                format!("-> {}", std::fs::read_link(&path).unwrap().display())
            } else if meta.is_dir() {
                stack.push(path.clone());
                "dir".into()
            } else {
                std::fs::read_to_string(&path).unwrap_or_else(|_| "(binary)".into())
            };
            files.insert(path.display().to_string(), content);
        }
    }
    files
}

struct World {
    served: Served,
    outside: std::path::PathBuf,
    listener: TcpListener,
}

/// A hub for `policy` whose project holds the scripts an agent wrote earlier; an `outside` folder
/// (with a file in it), a home with an SSH key, and a TCP port listening on 127.0.0.1.
fn world(policy: &str) -> World {
    node_modules();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let served = serve_with(policy, &[("PATH", PATH)]);
    let base = served.path("");
    let outside = base.join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("existing.txt"), "original\n").unwrap();
    std::fs::create_dir_all(base.join("home/.ssh")).unwrap();
    std::fs::write(base.join("home/.ssh/id_rsa"), "-----BEGIN PRIVATE KEY----- sandbox-test-secret\n")
        .unwrap();
    let o = outside.display();
    let db = served.db();
    let db = db.display();
    let home = base.join("home");
    let home = home.display();
    let proj = served.project();
    let scripts = [
        ("a.txt", "b\na\n".to_owned()),
        ("sort.sh", format!("sort -o {o}/sorted a.txt\n")),
        ("cp.sh", format!("cp a.txt {o}/copied\n")),
        ("symlink.sh", format!("ln -s {o} escape && echo pwned > escape/via-symlink\n")),
        ("hardlink.sh", format!("ln {o}/existing.txt hard && echo pwned >> hard\n")),
        ("policy.sh", "echo '{\"commands\":{\"default\":\"allow\"}}' > .portcullis/policy.json\n".to_owned()),
        ("ledger.sh", format!("echo pwned >> {db}\n")),
        ("ssh.py", format!("print(open('{home}/.ssh/id_rsa').read())\n")),
        (
            "net.py",
            format!(
                "import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=3)\nprint('connected')\n"
            ),
        ),
    ];
    for (name, text) in scripts {
        std::fs::write(proj.join(name), text).unwrap();
    }
    World { served, outside, listener }
}

fn call(command: &str) -> Value {
    json!({"op": "call", "name": "shell", "arguments": {"command": command}})
}

/// The eight attempts, in this order.
fn attempts() -> Vec<Value> {
    [
        "bash sort.sh",
        "bash cp.sh",
        "bash symlink.sh",
        "bash hardlink.sh",
        "bash policy.sh",
        "bash ledger.sh",
        "python3 ssh.py",
        "python3 net.py",
    ]
    .into_iter()
    .map(call)
    .collect()
}

const SCRIPTS_ALLOWED: &str = r#"{ "commands": { "default": "prompt", "rules": [
    { "id": "scripts", "pattern": ["bash"], "decision": "allow" },
    { "id": "python", "pattern": ["python3"], "decision": "allow" } ] } }"#;

#[test]
fn the_kernel_refuses_what_the_policy_does_not_grant_and_the_ledger_says_so() {
    let w = world(SCRIPTS_ALLOWED);
    let before = snapshot(&w.outside);
    let policy_before = std::fs::read_to_string(w.served.policy_file()).unwrap();
    let ledger_before = std::fs::metadata(w.served.db()).unwrap().len();
    let report = w.served.agent(json!(attempts()));
    let result = |i: usize| report["results"][i]["result"].clone();
    for (i, what) in ["sorted", "copied", "via-symlink", "existing.txt", "policy.json", "ledger.db", "id_rsa"]
        .iter()
        .enumerate()
    {
        let text = text_of(&result(i));
        assert!(text.contains("[sandbox refused"), "step {i} ({what}): {text}");
        assert!(text.contains(what), "step {i} names what was refused ({what}): {text}");
        assert_eq!(result(i)["structuredContent"]["sandbox"]["confined"], true, "step {i}: {}", result(i));
    }
    let ssh = text_of(&result(6));
    assert!(!ssh.contains("sandbox-test-secret"), "the key was read: {ssh}");
    let net = text_of(&result(7));
    // Landlock refuses the TCP connect before the empty network namespace would.
    assert!(net.contains("Permission denied") && !net.contains("connected\n"), "{net}");
    assert!(net.contains("[sandbox refused: EACCES") && net.contains("TCP without network"), "{net}");
    assert!(w.listener.accept().is_err(), "a connection reached the port");
    // Nothing changed outside the roots, nor the policy; the ledger only grew by the hub's own rows.
    assert_eq!(snapshot(&w.outside), before);
    assert_eq!(std::fs::read_to_string(w.served.policy_file()).unwrap(), policy_before);
    assert!(
        !std::fs::read(w.served.db()).unwrap().windows(5).any(|b| b == b"pwned"),
        "the ledger was written"
    );
    assert!(std::fs::metadata(w.served.db()).unwrap().len() >= ledger_before);
    // The ledger row keeps the profile and what was refused; `ledger show` prints both.
    let shown = ledger_show(&w.served, "c1");
    assert!(shown.contains("sandbox: confined by the kernel"), "{shown}");
    assert!(shown.contains("network: closed"), "{shown}");
    assert!(shown.contains("refused by the sandbox:") && shown.contains("outside/sorted"), "{shown}");
}

#[test]
fn the_same_commands_succeed_where_the_policy_grants_them_but_secrets_and_hub_files_never() {
    let policy = r#"{ "paths": { "roots": [
        { "path": ".", "access": "write" }, { "path": "../outside", "access": "write" }, { "path": "~", "access": "read" } ] },
      "commands": { "default": "prompt", "rules": [
        { "id": "scripts", "pattern": ["bash"], "decision": "allow" },
        { "id": "python", "pattern": ["python3"], "decision": "allow", "network": true } ] } }"#;
    let w = world(policy);
    let report = w.served.agent(json!(attempts()));
    let result = |i: usize| report["results"][i]["result"].clone();
    for i in [0, 1, 2, 7] {
        let text = text_of(&result(i));
        assert!(!text.contains("[sandbox refused"), "step {i}: {text}");
        assert!(text.contains("[exit code: 0]"), "step {i}: {text}");
    }
    // Each write root is a copy-on-write layer of its own (issue 51): a hard link from one to another
    // is across file systems inside, and refused as such.
    assert!(text_of(&result(3)).contains("Invalid cross-device link"), "{}", result(3));
    assert_eq!(std::fs::read_to_string(w.outside.join("sorted")).unwrap(), "a\nb\n");
    assert!(w.outside.join("copied").exists());
    assert_eq!(std::fs::read_to_string(w.outside.join("via-symlink")).unwrap(), "pwned\n");
    assert_eq!(std::fs::read_to_string(w.outside.join("existing.txt")).unwrap(), "original\n");
    assert!(text_of(&result(7)).contains("connected"), "{}", result(7));
    assert!(w.listener.accept().is_ok(), "the connection did not reach the port");
    // Whatever the roots say, the policy file, the ledger and ~/.ssh stay out of reach.
    for i in [4, 5, 6] {
        let text = text_of(&result(i));
        assert!(text.contains("[sandbox refused"), "step {i}: {text}");
    }
    assert!(!text_of(&result(6)).contains("sandbox-test-secret"));
}

/// An interpreter's code the parser cannot judge: the operator approves it, and the approval card
/// (the pending approval the operator API hands the app) shows the walls it will run inside. The
/// approved code still cannot write outside the roots, nor read the hub's environment.
#[test]
fn an_approved_interpreter_runs_inside_the_walls_the_approval_card_showed() {
    let w = world(SCRIPTS_ALLOWED);
    let hub_pid = w.served.path("config/hub.json");
    let info: Value = serde_json::from_str(&std::fs::read_to_string(hub_pid).unwrap()).unwrap();
    let pid = info["pid"].as_u64().unwrap();
    let code = format!("open('{}/py', 'w').write('x')", w.outside.display());
    let environ = format!("print(open('/proc/{pid}/environ').read())");
    let steps = json!([call(&format!("python3 -c \"{code}\"")), call(&format!("python3 -c \"{environ}\""))]);
    let scenario = json!({"url": w.served.mcp_url, "token": w.served.token, "steps": steps});
    let agent = std::process::Command::new("node")
        .arg(interop_dir().join("client.mjs"))
        .arg(scenario.to_string())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    for _ in 0..2 {
        let pending = first_pending(&w.served);
        let sandbox = &pending["action"]["sandbox"];
        assert_eq!(sandbox["enforcement"]["state"], "confined", "{pending}");
        assert_eq!(sandbox["network"], false, "{pending}");
        assert!(sandbox["hidden"].to_string().contains(".portcullis"), "{pending}");
        let url = format!("{}/approvals/{}", w.served.api, pending["id"]);
        let once = serde_json::json!({"answer": "once", "arguments_sha256": pending["arguments_sha256"]});
        let (status, body) = http(&url, "POST", Some(&w.served.operator_token), &[], Some(&once.to_string()));
        assert_eq!(status, 200, "{body}");
    }
    let out = agent.wait_with_output().unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let written = text_of(&report["results"][0]["result"]);
    assert!(written.contains("[sandbox refused") && written.contains("outside/py"), "{written}");
    assert!(!w.outside.join("py").exists());
    let environ = text_of(&report["results"][1]["result"]);
    assert!(environ.contains("No such file"), "{environ}");
    assert!(!environ.contains("PORTCULLIS_CONFIG_DIR"), "the hub's environment leaked: {environ}");
}

fn first_pending(served: &Served) -> Value {
    let started = Instant::now();
    loop {
        let (status, body) =
            http(&format!("{}/approvals", served.api), "GET", Some(&served.operator_token), &[], None);
        assert_eq!(status, 200, "{body}");
        let v: Value = serde_json::from_str(&body).unwrap();
        if let Some(p) = v["approvals"].as_array().and_then(|a| a.first()) {
            return p.clone();
        }
        assert!(started.elapsed() < Duration::from_secs(30), "no approval came");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A fork bomb, a brace expansion of 10^8 words, an endless write and `cat /dev/zero | sort` each end at
/// their limit within seconds, while another agent's calls are served meanwhile.
#[test]
fn runaway_commands_end_at_their_limits_while_another_agent_is_served() {
    let policy = r#"{ "sandbox": { "limits": { "processes": 64, "file_size_mb": 16, "memory_mb": 512 } },
      "commands": { "default": "prompt", "rules": [
        { "id": "scripts", "pattern": ["bash"], "decision": "allow" },
        { "id": "echo", "pattern": ["echo"], "decision": "allow" },
        { "id": "yes", "pattern": ["yes"], "decision": "allow" } ] } }"#;
    let w = world(policy);
    let proj = w.served.project();
    // The bomb grows while the script waits: it ends at the process limit, not when the script does.
    std::fs::write(proj.join("bomb.sh"), ":(){ :|:& };:\nsleep 60\n").unwrap();
    std::fs::write(proj.join("zero.sh"), "cat /dev/zero | sort\n").unwrap();
    // In a script: on the command line the judge expands braces itself, and one this large is a word it
    // cannot know (it asks).
    std::fs::write(proj.join("braces.sh"), "echo {1..100000000}\n").unwrap();
    let runaway =
        json!([call("bash bomb.sh"), call("bash braces.sh"), call("yes > big.txt"), call("bash zero.sh")]);
    let scenario = |steps: Value| json!({"url": w.served.mcp_url, "token": w.served.token, "steps": steps});
    let started = Instant::now();
    let first = std::process::Command::new("node")
        .arg(interop_dir().join("client.mjs"))
        .arg(scenario(runaway).to_string())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let other: Vec<Value> = (0..5).map(|n| call(&format!("echo served-{n}"))).collect();
    let served_meanwhile = w.served.agent(json!(other));
    let other_done = started.elapsed();
    let out = first.wait_with_output().unwrap();
    let all_done = started.elapsed();
    for n in 0..5 {
        let text = text_of(&served_meanwhile["results"][n]["result"]);
        assert!(text.contains(&format!("served-{n}")), "{text}");
    }
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let result = |i: usize| text_of(&report["results"][i]["result"]);
    assert!(result(0).contains("process limit"), "fork bomb: {}", result(0));
    assert!(result(1).contains("the memory limit"), "brace expansion: {}", result(1));
    assert!(result(2).contains("the file size limit"), "endless write: {}", result(2));
    assert_eq!(std::fs::metadata(proj.join("big.txt")).unwrap().len(), 16 << 20);
    assert!(result(3).contains("the memory limit"), "sort: {}", result(3));
    // Figures, not assertions (benchmarks are not tests).
    eprintln!(
        "runaway commands: all four ended after {all_done:?}; the other agent's five calls were served after {other_done:?}"
    );
}

#[test]
fn sandbox_explain_prints_the_profile_a_command_would_get() {
    let dir = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(dir.path()).unwrap();
    let proj = base.join("proj");
    std::fs::create_dir_all(proj.join(".portcullis")).unwrap();
    std::fs::create_dir_all(proj.join(".git/hooks")).unwrap();
    std::fs::write(
        proj.join(".portcullis/policy.json"),
        r#"{ "sandbox": { "mode": "required", "limits": { "memory_mb": 1024 } },
             "commands": { "rules": [
               { "id": "npm", "pattern": ["npm", "install"], "decision": "prompt", "network": true },
               { "id": "pip", "pattern": ["pip", "install"], "decision": "prompt", "network": ["pypi.org", "*.pythonhosted.org"] } ] } }"#,
    )
    .unwrap();
    let explain = |command: &str| {
        let out = portcullis(&base)
            .args(["sandbox", "explain", "--", command])
            .current_dir(&proj)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    let text = explain("npm install");
    assert!(text.contains(&format!("read and write: {}", proj.display())), "{text}");
    assert!(text.contains(&format!("{}/.portcullis", proj.display())), "{text}");
    assert!(text.contains(&format!("kept read-only: {}/.git", proj.display())), "{text}");
    assert!(text.contains("network: open to any host (rule `npm`"), "{text}");
    assert!(text.contains("limits: 1024 MiB memory"), "{text}");
    assert!(text.contains("this machine: Landlock ABI"), "{text}");
    let closed = explain("ls");
    assert!(closed.contains("network: closed"), "{closed}");
    // A rule that names hosts never opens every host: only those, through the egress proxy.
    let named = explain("pip install requests");
    assert!(
        named.contains("network: only pypi.org, *.pythonhosted.org (through the egress proxy) (rule `pip`"),
        "{named}"
    );
    assert!(named.contains("allows only pypi.org, *.pythonhosted.org"), "{named}");
    // `policy check` prints the same walls.
    let out = portcullis(&base).args(["policy", "check", "--", "ls"]).current_dir(&proj).output().unwrap();
    let check = String::from_utf8(out.stdout).unwrap();
    assert!(check.contains("sandbox: confined by the kernel"), "{check}");
}

/// A process tool from a manifest runs inside the same walls as the shell: its program (a script the
/// agent wrote, run by an allowed `bash`) cannot write outside the roots either.
#[test]
fn a_manifest_process_tool_runs_inside_the_same_walls() {
    let w = world(SCRIPTS_ALLOWED);
    let tools = w.served.project().join(".portcullis/tools");
    std::fs::create_dir_all(&tools).unwrap();
    std::fs::write(
        w.served.project().join("escape.sh"),
        format!("echo pwned > {}/from-tool\n", w.outside.display()),
    )
    .unwrap();
    std::fs::write(
        tools.join("escape.json"),
        r#"{ "name": "escape", "description": "runs a script", "kind": "process", "command": "bash",
             "args": ["escape.sh"], "timeout_seconds": 10, "max_output_bytes": 10000, "output": "text" }"#,
    )
    .unwrap();
    // The hub picks the new manifest up by itself (hot reload).
    let started = Instant::now();
    let report = loop {
        let report =
            w.served.agent(json!([{"op": "list"}, {"op": "call", "name": "escape", "arguments": {}}]));
        if report["results"][0].to_string().contains("\"escape\"")
            || started.elapsed() > Duration::from_secs(15)
        {
            break report;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let result = &report["results"][1]["result"];
    assert_eq!(result["isError"], true, "{result}");
    assert!(text_of(result).contains("Permission denied"), "{result}");
    assert!(!w.outside.join("from-tool").exists(), "the tool wrote outside the roots");
}
