//! The hook-up snippets the operator API gives: the address the hub really listens on, its token file,
//! and the shapes the README documents (Claude Code's `claude mcp add` and PreToolUse hook, Codex's
//! config.toml). A hub that does not listen has none to give.
// Test helpers outside #[test] fns may unwrap and panic.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use portcullis_api::{ErrorCode, OperatorApi};
use portcullis_hub::{Hub, HubConfig};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_snippets_name_the_real_port_and_token_file() {
    let (_tmp, dir) = common::folder();
    let unserved = common::hub(&dir.join("a"), r#"{ "commands": { "default": "prompt" } }"#).await;
    let refused = OperatorApi::new(unserved.clone()).hookup_snippets().unwrap_err();
    assert_eq!(refused.code, ErrorCode::HubUnavailable);
    unserved.close().await.unwrap();

    std::fs::create_dir_all(dir.join("proj/.portcullis")).unwrap();
    std::fs::write(dir.join("proj/.portcullis/policy.json"), r#"{ "commands": { "default": "prompt" } }"#)
        .unwrap();
    let config = dir.join("my config");
    let hub = Hub::open(HubConfig {
        config_dir: Some(config.clone()),
        listen: "127.0.0.1:0".parse().unwrap(),
        ..HubConfig::new(dir.join("proj"), dir.join("ledger.db"))
    })
    .await
    .unwrap();
    let running = portcullis_api::serve(hub).await.unwrap();
    let snippets = OperatorApi::new(running.hub.clone()).hookup_snippets().unwrap();
    let clients: Vec<(&str, Option<&str>, &str)> =
        snippets.iter().map(|s| (s.client.as_str(), s.file.as_deref(), s.language.as_str())).collect();
    assert_eq!(
        clients,
        [
            ("Claude Code", None, "sh"),
            ("Claude Code", Some("~/.claude/settings.json"), "json"),
            ("Codex", Some("~/.codex/config.toml"), "toml"),
        ]
    );
    let relay = &snippets[0].text;
    let start =
        format!("claude mcp add --scope user -e PORTCULLIS_CONFIG_DIR='{}' portcullis -- ", config.display());
    assert!(relay.starts_with(&start) && relay.ends_with("portcullis mcp"), "{relay}");
    assert!(!snippets[0].text.contains("Bearer"), "no token: {}", snippets[0].text);
    // The hook's JSON parses and runs `portcullis hook claude` with this hub's (unusual) config folder.
    let hook: serde_json::Value = serde_json::from_str(&snippets[1].text).unwrap();
    let command = hook["hooks"]["PreToolUse"][0]["hooks"][0]["command"].as_str().unwrap();
    assert!(command.starts_with(&format!("PORTCULLIS_CONFIG_DIR='{}' ", config.display())), "{command}");
    assert!(command.ends_with("portcullis hook claude"), "{command}");
    assert_eq!(hook["hooks"]["PreToolUse"][0]["matcher"], "*");
    assert_eq!(hook["hooks"]["PreToolUse"][0]["hooks"][0]["timeout"], 60);
    // And the report after each tool (issue 52: the row ends with what Claude Code got).
    assert_eq!(hook["hooks"]["PostToolUse"][0]["hooks"][0]["command"].as_str(), Some(command));
    // Without the permission line `claude -p` refuses every call to the gateway (issue 52).
    assert_eq!(hook["permissions"]["allow"], serde_json::json!(["mcp__portcullis"]));
    // The README's shape: the hook entry on one line.
    assert!(
        snippets[1]
            .text
            .contains("      { \"matcher\": \"*\", \"hooks\": [ { \"type\": \"command\", \"command\": "),
        "{}",
        snippets[1].text
    );
    let codex = &snippets[2].text;
    assert!(codex.starts_with("[mcp_servers.portcullis]\ncommand = \""), "{codex}");
    assert!(codex.contains("portcullis\"\nargs = [\"mcp\"]\n"), "{codex}");
    // Without it `codex exec` refuses every call ("requires approval, but approval policy is never").
    assert!(codex.contains("\ndefault_tools_approval_mode = \"approve\"\n"), "{codex}");
    assert!(
        codex.contains(&format!("env = {{ PORTCULLIS_CONFIG_DIR = \"{}\" }}", config.display())),
        "{codex}"
    );
    running.shutdown().await.unwrap();
}
