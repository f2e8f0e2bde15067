//! Tool manifests: the committed JSON Schema is current, the shipped examples load, fixture and process
//! tools run through the hub's pipeline (policy included), a hung process's whole group is killed at the
//! timeout, and a broken manifest change leaves the previous tools in force.
// Test helpers outside #[test] fns may unwrap and panic.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use portcullis_harness::{CallOutcome, ToolCallResult};
use portcullis_hub::{Hub, HubConfig};
use portcullis_hub::{load_manifests, manifest_json_schema, parse_manifest};
use serde_json::{Value, json};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn the_committed_schema_is_current() {
    let path = repo().join("tool-manifests/schemas/tool-manifest.schema.json");
    let generated = serde_json::to_string_pretty(&manifest_json_schema()).unwrap() + "\n";
    if std::env::var_os("PORTCULLIS_BLESS").is_some() {
        std::fs::write(&path, &generated).unwrap();
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(committed == generated, "{} is stale: run with PORTCULLIS_BLESS=1", path.display());
}

#[test]
fn the_shipped_examples_load() {
    let tools = load_manifests(&[repo().join("tool-manifests/examples")], &repo(), None).unwrap();
    let names: Vec<String> = tools.iter().map(|t| t.spec().name.clone()).collect();
    assert!(names.contains(&"weather_fixture".to_owned()) && names.contains(&"recent_commits".to_owned()));
}

#[test]
fn bad_manifests_say_what_and_where() {
    let err = parse_manifest("t.json", "{\n  \"name\": \"x\",\n  \"kind\": \"nope\"\n}").unwrap_err();
    assert_eq!(err.file, "t.json");
    assert!(err.line > 0, "{err}");
    let err =
        parse_manifest("t.json", r#"{"name": "Bad Name", "kind": "fixture", "result": {}}"#).unwrap_err();
    assert!(err.message.contains("Invalid tool name"), "{err}");
    let err =
        parse_manifest("t.json", r#"{"name": "mcp:a:b", "kind": "fixture", "result": {}}"#).unwrap_err();
    assert!(err.message.contains("upstream"), "{err}");
    let err = parse_manifest(
        "t.json",
        r#"{"name": "slow", "kind": "process", "command": "x", "timeout_seconds": 100000}"#,
    )
    .unwrap_err();
    assert!(err.message.contains("timeout_seconds"), "{err}");
}

const POLICY: &str = r#"{
  "commands": { "rules": [ { "id": "tools", "pattern": [["echo-args.sh", "hang.sh"]], "decision": "allow" } ] }
}"#;

struct Setup {
    _dir: tempfile::TempDir,
    project: PathBuf,
    tools: PathBuf,
    hub: Hub,
}

fn script(path: &Path, body: &str) {
    std::fs::write(path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

async fn setup() -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(dir.path()).unwrap();
    let project = base.join("proj");
    let tools = base.join("tools");
    std::fs::create_dir_all(project.join(".portcullis")).unwrap();
    std::fs::create_dir_all(&tools).unwrap();
    std::fs::write(project.join(".portcullis/policy.json"), POLICY).unwrap();
    script(
        &base.join("echo-args.sh"),
        r#"printf '{"content": [{"type": "text", "text": %s}]}' "$(cat | sed 's/"/\\"/g; s/^/"/; s/$/"/')""#,
    );
    script(
        &base.join("hang.sh"),
        &format!("sleep 30 &\necho $! > {}\nwait", base.join("child.pid").display()),
    );
    std::fs::write(
        tools.join("echo_args.json"),
        json!({"name": "echo_args", "kind": "process", "command": base.join("echo-args.sh"), "timeout_seconds": 10}).to_string(),
    )
    .unwrap();
    std::fs::write(
        tools.join("hang.json"),
        json!({"name": "hang", "kind": "process", "command": base.join("hang.sh"), "timeout_seconds": 1})
            .to_string(),
    )
    .unwrap();
    std::fs::copy(repo().join("tool-manifests/examples/weather_fixture.json"), tools.join("weather.json"))
        .unwrap();
    let hub = Hub::open(HubConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        config_dir: Some(base.join("config")),
        shutdown_grace: Duration::from_secs(2),
        unattended: true,
        manifest_dirs: vec![tools.clone()],
        ..HubConfig::new(project.clone(), base.join("ledger.db"))
    })
    .await
    .unwrap();
    Setup { _dir: dir, project, tools, hub }
}

async fn call(hub: &Hub, tool: &str, args: Value) -> ToolCallResult {
    hub.call("s", tool, tool, args, "test", CancellationToken::new()).await
}

fn text(result: &ToolCallResult) -> String {
    match &result.outcome {
        CallOutcome::Finished { output } => serde_json::to_string(&output.content).unwrap(),
        other => format!("{other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fixture_and_process_tools_run_through_the_pipeline() {
    let s = setup().await;
    let names: Vec<String> = s.hub.visible_tools().iter().map(|t| t.name.clone()).collect();
    assert_eq!(
        names,
        ["shell", "read", "write", "edit", "search_tools", "echo_args", "hang", "weather_fixture"]
    );
    let weather = call(&s.hub, "weather_fixture", json!({"city": "Oslo"})).await;
    assert!(text(&weather).contains("Sunny"), "{weather:?}");
    // The manifest's parameters are enforced.
    let invalid = call(&s.hub, "weather_fixture", json!({})).await;
    assert_eq!(invalid.blocked_reason().map(|r| r.as_str()), Some("validation_failed"));
    let echoed = call(&s.hub, "echo_args", json!({"word": "hello"})).await;
    assert!(text(&echoed).contains("hello"), "the arguments arrive as JSON on stdin: {echoed:?}");
    // A hung process: the timeout kills its whole process group, the background child included.
    let hung = call(&s.hub, "hang", json!({})).await;
    match &hung.outcome {
        CallOutcome::Error { error } => {
            assert_eq!(error.code, portcullis_harness::CallErrorCode::Timeout, "{error:?}")
        }
        other => panic!("{other:?}"),
    }
    let pid = std::fs::read_to_string(s.tools.parent().unwrap().join("child.pid")).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let stat = std::fs::read_to_string(format!("/proc/{}/stat", pid.trim())).unwrap_or_default();
    assert!(stat.is_empty() || stat.contains(") Z "), "the background child still runs: {stat}");
    // A process tool the policy does not allow never runs.
    std::fs::write(
        s.project.join(".portcullis/policy.json"),
        r#"{ "commands": { "default": "forbidden" } }"#,
    )
    .unwrap();
    s.hub.reload().unwrap();
    let refused = call(&s.hub, "echo_args", json!({})).await;
    assert_eq!(refused.blocked_reason().map(|r| r.as_str()), Some("execution_denied"));
    s.hub.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_manifest_change_keeps_the_previous_tools() {
    let s = setup().await;
    std::fs::write(s.tools.join("zz_broken.json"), "{ \"name\": ").unwrap();
    let err = s.hub.reload_manifests().unwrap_err();
    assert!(err.to_string().contains("zz_broken.json:1:"), "{err}");
    assert!(s.hub.visible_tools().iter().any(|t| t.name == "weather_fixture"));
    std::fs::remove_file(s.tools.join("zz_broken.json")).unwrap();
    std::fs::write(
        s.tools.join("new_tool.json"),
        r#"{"name": "new_tool", "kind": "fixture", "result": {"text": ["new"]}}"#,
    )
    .unwrap();
    s.hub.reload_manifests().unwrap();
    let result = call(&s.hub, "new_tool", json!({})).await;
    assert!(text(&result).contains("new"));
    s.hub.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_registries_are_disclosed_through_search_tools() {
    use portcullis_mcp::gateway::GatewayBackend;
    let s = setup().await;
    for i in 0..70 {
        std::fs::write(
            s.tools.join(format!("fixture_{i:02}.json")),
            json!({"name": format!("fixture_{i:02}"), "description": format!("canned answer number {i}"),
                   "kind": "fixture", "result": {"text": [format!("answer {i}")]}})
            .to_string(),
        )
        .unwrap();
    }
    s.hub.reload_manifests().unwrap();
    let backend = portcullis_hub::HubBackend::new(s.hub.clone());
    let listed: Vec<String> = backend.visible_tools().iter().map(|t| t.name.clone()).collect();
    assert_eq!(listed, ["search_tools"], "above 64 tools only the search tool is listed");
    let found = call(&s.hub, "search_tools", json!({"query": "weather"})).await;
    assert!(text(&found).contains("weather_fixture"), "{found:?}");
    // Tools found that way are callable.
    let result = call(&s.hub, "fixture_42", json!({})).await;
    assert!(text(&result).contains("answer 42"));
    s.hub.close().await.unwrap();
}

#[test]
fn a_declared_idempotency_key_names_the_tools_own_arguments() {
    let manifest = |key: &str| {
        format!(
            r#"{{"name": "deploy", "parameters": {{"type": "object", "properties": {{"target": {{"type": "string"}}}}}},
               "idempotency_key": {key}, "kind": "fixture", "result": {{"text": ["ok"]}}}}"#
        )
    };
    // One row per declaration: accepted, or the words of the refusal.
    let rows: &[(&str, Option<&str>)] = &[
        (r#"["target"]"#, None),
        (r#"[]"#, None),
        (r#"["nope"]"#, Some("\"nope\" is not one of the tool's parameters")),
        (r#"["target", "target"]"#, Some("named twice")),
        (r#"[""]"#, Some("is empty")),
        (r#""target""#, Some("invalid type")),
    ];
    for (key, refused) in rows {
        let parsed = parse_manifest("deploy.json", &manifest(key));
        match refused {
            None => assert!(parsed.is_ok(), "{key}: {parsed:?}"),
            Some(words) => {
                let message = parsed.unwrap_err().to_string();
                assert!(message.starts_with("deploy.json:") && message.contains(words), "{key}: {message}");
            }
        }
    }
    let many = serde_json::to_string(&(0..17).map(|i| format!("a{i}")).collect::<Vec<_>>()).unwrap();
    let no_properties =
        format!(r#"{{"name": "deploy", "idempotency_key": {many}, "kind": "fixture", "result": {{}}}}"#);
    assert!(parse_manifest("d.json", &no_properties).unwrap_err().to_string().contains("at most 16"));
}
