//! `hub::launch`, as `portcullis serve` and the desktop app start a hub: a second hub of the same user
//! on the same ledger, or on the port the first one holds, is refused as `hub_already_running`, naming
//! the first one; after the first stops cleanly, a new one starts.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use portcullis_api::{LaunchError, launch};
use portcullis_hub::HubConfig;
use std::path::Path;

fn config(base: &Path, port: u16) -> HubConfig {
    let project = base.join("proj");
    std::fs::create_dir_all(&project).unwrap();
    HubConfig {
        listen: format!("127.0.0.1:{port}").parse().unwrap(),
        config_dir: Some(base.join("config")),
        ..HubConfig::new(project, base.join("ledger.db"))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_hub_on_the_same_ledger_or_port_is_refused_and_names_the_first() {
    let dir = tempfile::tempdir().unwrap();
    let first = launch(config(dir.path(), 0)).await.unwrap();
    let port = first.running.addr.port();

    // Another port, the same ledger: the ledger is locked.
    let e = launch(config(dir.path(), 0)).await.err().expect("a second hub on the same ledger");
    assert_eq!(e.code(), "hub_already_running", "{e}");
    let LaunchError::AlreadyRunning { other: Some(other), .. } = &e else { panic!("{e:?}") };
    assert_eq!(other.pid, std::process::id());
    assert_eq!(other.mcp_url, format!("http://127.0.0.1:{port}/mcp"));

    // The same port: taken by the hub the runtime file names.
    let e = launch(config(dir.path(), port)).await.err().expect("a second hub on the same port");
    assert_eq!(e.code(), "hub_already_running", "{e}");
    assert!(e.to_string().contains(&format!("MCP at http://127.0.0.1:{port}/mcp")), "{e}");

    first.shutdown().await.unwrap();
    let again = launch(config(dir.path(), 0)).await.unwrap();
    again.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_port_taken_by_another_program_is_a_plain_listen_failure() {
    let dir = tempfile::tempdir().unwrap();
    let squatter = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = squatter.local_addr().unwrap().port();
    let e = launch(config(dir.path(), port)).await.err().expect("the port is taken");
    assert_eq!(e.code(), "listen_failed", "{e}");
    assert!(!dir.path().join("ledger.db").exists(), "nothing is left behind when the port is taken");
}
