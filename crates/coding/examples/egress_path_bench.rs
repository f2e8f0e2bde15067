//! What egress by name costs a confined command on its whole path: a program in the sandbox connects to
//! the proxy port on its namespace's loopback, the launcher's relay carries the stream over the gate's
//! Unix socket to the hub's proxy, which checks the name and connects to the upstream (a loopback server
//! here, under a name the proxy's resolver maps). The same Python program runs directly, outside any
//! sandbox, against the same upstream: the difference is what the path adds. It measures the time of
//! one connection (connect, CONNECT through the proxy, 64 bytes there and back) and the throughput of one
//! long download. This binary is its own launcher (`entry_point` first).
//!
//! `cargo run --release -p portcullis-coding --example egress_path_bench -- [connections] [megabytes]`
#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use portcullis_coding::shell::{RunSpec, run_command};
use portcullis_harness::EgressScope;
use portcullis_sandbox::egress::Resolver;
use portcullis_sandbox::egress::gate::KEPT;
use serde_json::Value;
use std::net::IpAddr;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The program both runs use: `direct` or `proxy`, the upstream's name and port, connections, MiB.
const PROGRAM: &str = r#"
import json, socket, sys, time
mode, host, port, n, mb = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
def open_to():
    if mode == "direct":
        return socket.create_connection(("127.0.0.1", port))
    s = socket.create_connection(("127.0.0.1", 3128))
    s.sendall(f"CONNECT {host}:{port} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
    head = b""
    while b"\r\n\r\n" not in head:
        head += s.recv(4096)
    assert head.startswith(b"HTTP/1.1 200"), head
    return s
times = []
for _ in range(n):
    t = time.perf_counter()
    s = open_to()
    s.sendall(b"P" * 64)
    got = b""
    while len(got) < 64:
        got += s.recv(64 - len(got))
    s.close()
    times.append(time.perf_counter() - t)
times.sort()
s = open_to()
s.sendall(b"S" + str(mb).encode().rjust(63))
buf = bytearray(1 << 20)
view = memoryview(buf)
total, t = 0, time.perf_counter()
while True:
    k = s.recv_into(view)
    if k == 0:
        break
    total += k
seconds = time.perf_counter() - t
print(json.dumps({"p50_us": times[n // 2] * 1e6, "p90_us": times[n * 9 // 10] * 1e6, "bytes": total, "mb_per_s": total / seconds / 1e6}))
"#;

/// The upstream: 64 bytes starting with `P` are echoed; `S` and a number of MiB are answered with that
/// many MiB.
async fn upstream() -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut ask = [0u8; 64];
                if s.read_exact(&mut ask).await.is_err() {
                    return;
                }
                if ask[0] == b'P' {
                    let _ = s.write_all(&ask).await;
                    return;
                }
                let mb: usize = String::from_utf8_lossy(&ask[1..]).trim().parse().unwrap_or(0);
                let chunk = vec![0u8; 1 << 20];
                for _ in 0..mb {
                    if s.write_all(&chunk).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    port
}

fn main() {
    if let Some(code) = portcullis_sandbox::entry_point() {
        std::process::exit(code);
    }
    let connections: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(500);
    let megabytes: usize = std::env::args().nth(2).and_then(|a| a.parse().ok()).unwrap_or(2048);
    let project = std::env::temp_dir().join(format!("portcullis-egress-path-bench-{}", std::process::id()));
    std::fs::create_dir_all(&project).unwrap();
    let project = std::fs::canonicalize(&project).unwrap();
    std::fs::write(project.join("bench.py"), PROGRAM).unwrap();
    let resolver = Resolver::Map([("upstream.test".to_owned(), IpAddr::from([127, 0, 0, 1]))].into());
    let launcher = portcullis_sandbox::this_binary().expect("entry_point was called").with_resolver(resolver);
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let cancel = tokio_util::sync::CancellationToken::new();
    runtime.block_on(async {
        let port = upstream().await;
        let mut profile = portcullis_sandbox::system_only(vec![project.clone()]);
        profile.egress = Some(EgressScope {
            hosts: vec![format!("upstream.test:{port}")],
            by: "rule `bench` (bench)".into(),
            ask: None,
        });
        let run = |mode: &'static str, sandbox| RunSpec {
            command: format!(
                "/usr/bin/python3 bench.py {mode} upstream.test {port} {connections} {megabytes}"
            ),
            cwd: project.clone(),
            env: vec![("PATH".into(), "/usr/bin:/bin".into())],
            timeout: Duration::from_secs(600),
            output_bytes: 1 << 16,
            kill_grace: Duration::from_millis(100),
            sandbox,
            asks: None,
            tee: None,
            undo: None,
        };
        let direct = run_command(run("direct", None), &cancel).await.unwrap();
        let proxied =
            run_command(run("proxy", Some((launcher.clone(), profile.clone()))), &cancel).await.unwrap();
        let figures = |text: String| -> Value {
            let line =
                text.lines().find(|l| l.starts_with('{')).unwrap_or_else(|| panic!("no figures: {text}"));
            serde_json::from_str(line).unwrap()
        };
        let (d, p) = (figures(direct.joined_text()), figures(proxied.joined_text()));
        let f = |v: &Value, k: &str| v[k].as_f64().unwrap();
        println!("{connections} connections (64 bytes each way), then {megabytes} MiB down one connection");
        println!(
            "  direct (no sandbox):       p50 {:>7.0} us  p90 {:>7.0} us  {:>6.0} MB/s",
            f(&d, "p50_us"),
            f(&d, "p90_us"),
            f(&d, "mb_per_s")
        );
        println!(
            "  sandbox -> relay -> proxy: p50 {:>7.0} us  p90 {:>7.0} us  {:>6.0} MB/s",
            f(&p, "p50_us"),
            f(&p, "p90_us"),
            f(&p, "mb_per_s")
        );
        println!(
            "  added per connection:      p50 {:>7.0} us  p90 {:>7.0} us",
            f(&p, "p50_us") - f(&d, "p50_us"),
            f(&p, "p90_us") - f(&d, "p90_us")
        );
        let record = proxied.connections.len();
        println!("  connections kept in the call's record: {record} (at most {KEPT}, the rest counted)");
        assert_eq!(record, (connections + 1).min(KEPT), "every connection is recorded");
    });
    let _ = std::fs::remove_dir_all(&project);
}
