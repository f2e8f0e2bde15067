//! TLS through `portcullis serve`: a hub that listens beyond this machine serves TLS or does not start;
//! `--tls-self-signed` serves HTTPS with a certificate made once, whose fingerprint `serve` prints and a
//! browser (Node's TLS here, trusting that certificate) sees; this machine's clients (`portcullis api`)
//! trust it from the runtime file; plain HTTP gets no answer; the console's cookie is `Secure`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::{interop_dir, portcullis, serve_with_args};
use serde_json::Value;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

const POLICY: &str = r#"{ "commands": { "default": "prompt" } }"#;

#[test]
fn beyond_loopback_a_hub_serves_tls_or_does_not_start() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("home")).unwrap();
    let out = portcullis(dir.path())
        .args(["serve", "--listen", "0.0.0.0", "--allow-remote", "--port", "0", "--approver", "none"])
        .arg("--db")
        .arg(dir.path().join("ledger.db"))
        .arg("--project")
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("serves TLS only") && stderr.contains("--tls-self-signed"), "{stderr}");
}

/// Node's TLS client (as a browser's): logs in to the console at `url` with `code`, trusting only `ca`.
const LOGIN: &str = r#"
const https = require("node:https");
const fs = require("node:fs");
const [url, ca, code] = process.argv.slice(1);
const u = new URL(url);
const req = https.request({
  hostname: u.hostname, port: u.port, path: "/console/v1/login", method: "POST", ca: fs.readFileSync(ca),
  headers: { "content-type": "application/json", "x-portcullis-console": "1", origin: u.origin },
}, (res) => {
  const fingerprint = res.socket.getPeerCertificate().fingerprint256;
  let body = "";
  res.on("data", (d) => (body += d));
  res.on("end", () => console.log(JSON.stringify({ status: res.statusCode, cookie: res.headers["set-cookie"], fingerprint, body })));
});
req.on("error", (e) => { console.log(JSON.stringify({ error: String(e) })); });
req.end(JSON.stringify({ code }));
"#;

#[test]
fn a_self_signed_hub_serves_https_that_its_clients_trust() {
    let mut served = serve_with_args(POLICY, &[], &["--tls-self-signed"]);
    let info: Value =
        serde_json::from_str(&std::fs::read_to_string(served.path("config/hub.json")).unwrap()).unwrap();
    let api = info["api_url"].as_str().unwrap().to_owned();
    assert!(api.starts_with("https://127.0.0.1:"), "{info}");
    let cert = info["tls_cert"].as_str().unwrap().to_owned();
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(served.path("config/tls/hub-key.pem")).unwrap().permissions(),
    );
    assert_eq!(mode & 0o077, 0, "the key is the owner's only");

    // This machine's operator client trusts the hub's own certificate.
    let out = portcullis(&served.path("")).args(["api", "hub_status"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));

    // Plain HTTP gets no HTTP answer.
    let addr = api.strip_prefix("https://").unwrap().trim_end_matches("/v1").to_owned();
    let mut plain = TcpStream::connect(&addr).unwrap();
    plain.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    plain.write_all(format!("GET /v1/health HTTP/1.1\r\nHost: {addr}\r\n\r\n").as_bytes()).unwrap();
    let mut answer = Vec::new();
    let _ = plain.read_to_end(&mut answer);
    assert!(!answer.starts_with(b"HTTP/1.1 200"), "{}", String::from_utf8_lossy(&answer));

    // The console over HTTPS: an https login link, a Secure cookie, the certificate serve named.
    let link = portcullis(&served.path("")).args(["operator", "link", "--json"]).output().unwrap();
    assert!(link.status.success(), "{}", String::from_utf8_lossy(&link.stderr));
    let link: Value = serde_json::from_slice(&link.stdout).unwrap();
    let url = link["url"].as_str().unwrap();
    assert!(url.starts_with(&format!("https://{addr}/login#code=")), "{url}");
    let code = url.split_once("#code=").unwrap().1;
    let out = std::process::Command::new("node")
        .args(["-e", LOGIN, url, &cert, code])
        .current_dir(interop_dir())
        .output()
        .unwrap();
    let login: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("{e}: {}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
    });
    assert_eq!(login["status"], 200, "{login}");
    let cookie = login["cookie"][0].as_str().unwrap();
    assert!(cookie.contains("; Secure") && cookie.contains("HttpOnly"), "{cookie}");
    let fingerprint = login["fingerprint"].as_str().unwrap().to_owned();

    let stopped = served.stop();
    let stderr = String::from_utf8_lossy(&stopped.stderr);
    assert!(
        stderr.contains(&format!("fingerprint: {fingerprint}")),
        "serve printed the certificate's fingerprint: {stderr}"
    );
    assert!(stderr.contains("serving MCP at https://"), "{stderr}");
}
