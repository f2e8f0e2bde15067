//! The browser console through `portcullis serve`, as a browser (and an attacker's page or agent) meets
//! it over raw HTTP: the pages and their headers, a one-time login link from `portcullis operator link`
//! exchanged for a session cookie, the command table as that operator (a real agent's prompt answered,
//! the ledger naming `alice (browser)`), logout, and every refusal the issue lists — a foreign Origin, a
//! rebinding Host, no cookie, an expired one, another hub's, a reused link, the agents' token at the
//! login, a change without the page's header.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::{
    RawResponse, Served, agent_in_background, await_approval, ledger_calls_when, portcullis, raw_http, serve,
    serve_with_args,
};
use serde_json::{Value, json};
use std::time::Duration;

const POLICY: &str = r#"{
  "grants": [ { "name": "agents", "allow": ["shell"] } ],
  "commands": { "default": "forbidden",
    "rules": [
      { "id": "printing", "pattern": ["echo"], "decision": "allow", "match": ["echo hi"] },
      { "id": "asking", "pattern": ["printf"], "decision": "prompt", "match": ["printf hi"] }
    ] }
}
"#;

/// The hub's `host:port`.
fn addr(served: &Served) -> String {
    served.api.strip_prefix("http://").unwrap().trim_end_matches("/v1").to_owned()
}

fn port(served: &Served) -> String {
    addr(served).rsplit_once(':').unwrap().1.to_owned()
}

fn origin(served: &Served) -> String {
    format!("http://{}", addr(served))
}

/// A one-time link from `portcullis operator link --json`.
fn link(served: &Served, name: Option<&str>) -> Value {
    let mut cmd = portcullis(&served.path(""));
    cmd.args(["operator", "link", "--json"]);
    if let Some(name) = name {
        cmd.args(["--name", name]);
    }
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn code_of(link: &Value) -> String {
    link["url"].as_str().unwrap().split_once("#code=").unwrap().1.to_owned()
}

/// A request as the console's page sends it (its Host, Origin and header), plus `extra` header lines.
fn page_request(served: &Served, method: &str, path: &str, extra: &str, body: &str) -> RawResponse {
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {}\r\nOrigin: {}\r\nx-portcullis-console: 1\r\nContent-Type: application/json\r\n{extra}",
        addr(served),
        origin(served)
    );
    raw_http(&addr(served), &head, body)
}

fn login(served: &Served, code: &str) -> RawResponse {
    page_request(served, "POST", "/console/v1/login", "", &json!({ "code": code }).to_string())
}

/// The session cookie (`name=value`) a successful login set.
fn session_cookie(response: &RawResponse) -> String {
    let set = response.header("set-cookie").unwrap_or_else(|| panic!("no cookie: {}", response.body));
    set.split(';').next().unwrap().to_owned()
}

fn with_cookie(cookie: &str) -> String {
    format!("Cookie: {cookie}\r\n")
}

/// The page token a successful login answered in its body (never in a cookie).
fn page_token(response: &RawResponse) -> String {
    response.json()["token"].as_str().unwrap_or_else(|| panic!("no page token: {}", response.body)).to_owned()
}

/// The header lines of a login's requests as its page sends them: the cookie and the page token.
fn session(response: &RawResponse) -> String {
    format!(
        "{}x-portcullis-console-session: {}\r\n",
        with_cookie(&session_cookie(response)),
        page_token(response)
    )
}

/// Command `name` in the session whose header lines are `session`.
fn command(served: &Served, session: &str, name: &str, args: Value) -> RawResponse {
    page_request(served, "POST", &format!("/console/v1/commands/{name}"), session, &args.to_string())
}

fn code(response: &RawResponse) -> (u16, String) {
    let body: Value = serde_json::from_str(&response.body).unwrap_or(Value::Null);
    (response.status, body["error"]["code"].as_str().unwrap_or_default().to_owned())
}

#[test]
fn an_operator_logs_in_once_answers_a_prompt_as_themselves_and_logs_out() {
    let served = serve(POLICY);
    // The pages hold no secret: open, strict CSP, never framed.
    let head = format!("GET / HTTP/1.1\r\nHost: {}\r\n", addr(&served));
    let page = raw_http(&addr(&served), &head, "");
    assert_eq!(page.status, 200, "{}", page.body);
    let csp = page.header("content-security-policy").unwrap().to_owned();
    assert!(csp.contains("frame-ancestors 'none'") && csp.contains("script-src 'self';"), "{csp}");
    assert!(!csp.contains("unsafe"), "{csp}");
    assert_eq!(page.header("x-frame-options"), Some("DENY"));
    assert!(page.body.contains("<div id=\"root\">"), "the UI build is served: {}", page.body);
    let nonce = csp.split("'nonce-").nth(1).unwrap().split('\'').next().unwrap().to_owned();
    assert!(page.body.contains(&format!("nonce=\"{nonce}\"")), "the editor's styles get the page's nonce");
    let head = format!("GET /login HTTP/1.1\r\nHost: {}\r\n", addr(&served));
    let login_page = raw_http(&addr(&served), &head, "");
    assert_eq!(login_page.status, 200);
    assert!(login_page.header("content-security-policy").unwrap().contains("frame-ancestors 'none'"));

    let made = link(&served, Some("alice"));
    assert_eq!(made["operator"], "alice");
    let url = made["url"].as_str().unwrap();
    assert!(url.starts_with(&format!("http://{}/login#code=", addr(&served))), "{url}");
    assert!(!url.contains(&served.operator_token) && !url.contains(&served.token), "no token in a URL");

    let logged_in = login(&served, &code_of(&made));
    assert_eq!(logged_in.status, 200, "{}", logged_in.body);
    let set = logged_in.header("set-cookie").unwrap();
    assert!(set.starts_with(&format!("portcullis_console_{}=", port(&served))), "{set}");
    for attribute in ["HttpOnly", "SameSite=Strict", "Path=/"] {
        assert!(set.contains(attribute), "{set}");
    }
    assert_eq!(logged_in.header("cache-control"), Some("no-store"), "the answer holds a secret");
    let cookie = session(&logged_in);
    assert!(!set.contains(&page_token(&logged_in)), "the page token is no cookie");
    let me = page_request(&served, "GET", "/console/v1/me", &cookie, "");
    assert_eq!(me.status, 200, "{}", me.body);
    assert_eq!(me.json()["session"]["operator"], "alice");

    // A real agent's call waits for an answer; the console answers it.
    let info: Value =
        serde_json::from_str(&std::fs::read_to_string(served.path("config/hub.json")).unwrap()).unwrap();
    let agent = agent_in_background(
        &info,
        &served.token,
        json!([{"op": "call", "name": "shell", "arguments": {"command": "printf from-the-browser"}}]),
    );
    await_approval(&served.api, &served.operator_token, "from-the-browser");
    let pending = command(&served, &cookie, "pending_approvals", json!({}));
    assert_eq!(pending.status, 200, "{}", pending.body);
    let (id, digest) =
        (pending.json()[0]["id"].as_u64().unwrap(), pending.json()[0]["arguments_sha256"].clone());
    let answer = |choice: &str| json!({"id": id, "answer": {"answer": choice, "arguments_sha256": digest}});
    let answered = command(&served, &cookie, "answer_approval", answer("once"));
    assert_eq!(answered.status, 200, "{}", answered.body);
    // The receipt names the operator and the browser as the channel.
    let receipt = answered.json();
    assert_eq!(
        (receipt["operator"].as_str(), receipt["channel"].as_str()),
        (Some("alice (browser)"), Some("browser"))
    );
    let out = agent.join().unwrap();
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(report.contains("from-the-browser") && !report.contains("isError\":true"), "{report}");
    let calls = ledger_calls_when(&served, 1);
    assert!(
        serde_json::to_string(&calls).unwrap().contains("alice (browser)"),
        "the ledger names who answered and where: {calls:?}"
    );
    // A second answer from elsewhere finds it answered.
    let again = command(&served, &cookie, "answer_approval", answer("deny"));
    assert_eq!(code(&again), (409, "approval_answered".into()), "{}", again.body);

    let out = page_request(&served, "POST", "/console/v1/logout", &cookie, "");
    assert_eq!(out.status, 200, "{}", out.body);
    assert!(out.header("set-cookie").unwrap().contains("Max-Age=0"));
    let me = page_request(&served, "GET", "/console/v1/me", &cookie, "");
    assert_eq!(code(&me), (401, "not_logged_in".into()), "logged out: {}", me.body);
}

#[test]
fn a_link_works_once_and_no_token_logs_in() {
    let served = serve(POLICY);
    let made = link(&served, None);
    assert!(login(&served, &code_of(&made)).status == 200);
    let reused = login(&served, &code_of(&made));
    assert_eq!(code(&reused), (401, "login_refused".into()), "{}", reused.body);
    assert!(reused.header("set-cookie").is_none());
    // Neither credential is a login code, whichever way it is presented.
    for token in [&served.token, &served.operator_token] {
        let refused = login(&served, token);
        assert_eq!(code(&refused), (401, "login_refused".into()), "{}", refused.body);
        let bearer = page_request(
            &served,
            "POST",
            "/console/v1/login",
            &format!("Authorization: Bearer {token}\r\n"),
            &json!({ "code": token }).to_string(),
        );
        assert_eq!(code(&bearer), (401, "login_refused".into()), "{}", bearer.body);
        let table = page_request(
            &served,
            "POST",
            "/console/v1/commands/hub_status",
            &format!("Authorization: Bearer {token}\r\n"),
            "{}",
        );
        assert_eq!(code(&table), (401, "not_logged_in".into()), "a token is no session: {}", table.body);
    }
    // A name that is not short printable text is refused when the link is made.
    let out =
        portcullis(&served.path("")).args(["operator", "link", "--name", "eve\u{1b}[2J"]).output().unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("printable"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn foreign_origins_rebinding_hosts_and_changes_without_the_page_header_are_refused() {
    let served = serve(POLICY);
    let cookie = session(&login(&served, &code_of(&link(&served, None))));
    let a = addr(&served);
    let body = json!({ "code": code_of(&link(&served, None)) }).to_string();
    let cases: Vec<(&str, String, (u16, &str))> = vec![
        (
            "a foreign Origin",
            format!(
                "POST /console/v1/login HTTP/1.1\r\nHost: {a}\r\nOrigin: http://evil.example\r\nx-portcullis-console: 1\r\n"
            ),
            (403, "origin_not_allowed"),
        ),
        (
            "a rebinding Host",
            format!(
                "POST /console/v1/login HTTP/1.1\r\nHost: evil.example:{}\r\nOrigin: {}\r\nx-portcullis-console: 1\r\n",
                port(&served),
                origin(&served)
            ),
            (403, "host_not_allowed"),
        ),
        (
            "no page header",
            format!("POST /console/v1/login HTTP/1.1\r\nHost: {a}\r\nOrigin: {}\r\n", origin(&served)),
            (403, "cross_site_refused"),
        ),
        (
            "no Origin",
            format!("POST /console/v1/login HTTP/1.1\r\nHost: {a}\r\nx-portcullis-console: 1\r\n"),
            (403, "cross_site_refused"),
        ),
        (
            "a cross-site fetch",
            format!(
                "POST /console/v1/login HTTP/1.1\r\nHost: {a}\r\nOrigin: {}\r\nx-portcullis-console: 1\r\nSec-Fetch-Site: cross-site\r\n",
                origin(&served)
            ),
            (403, "cross_site_refused"),
        ),
    ];
    for (what, head, expected) in &cases {
        let head = format!("{head}Content-Type: application/json\r\n");
        let refused = raw_http(&a, &head, &body);
        assert_eq!(code(&refused), (expected.0, expected.1.to_owned()), "{what}: {}", refused.body);
    }
    // The same for a change with a good session cookie.
    let change = |extra: &str, origin_line: &str, header: &str| {
        let head = format!(
            "POST /console/v1/commands/revoke_session_grant HTTP/1.1\r\nHost: {a}\r\n{origin_line}{header}{cookie}Content-Type: application/json\r\n{extra}"
        );
        raw_http(&a, &head, r#"{"id": "nope"}"#)
    };
    let own = format!("Origin: {}\r\n", origin(&served));
    assert_eq!(code(&change("", &own, "")), (403, "cross_site_refused".into()));
    assert_eq!(code(&change("", "", "x-portcullis-console: 1\r\n")), (403, "cross_site_refused".into()));
    assert_eq!(
        code(&change("", "Origin: http://evil.example\r\n", "x-portcullis-console: 1\r\n")),
        (403, "origin_not_allowed".into())
    );
    assert_eq!(
        code(&change("", &own, "x-portcullis-console: 1\r\n")),
        (404, "grant_unknown".into()),
        "the page's own change goes through"
    );
    // The page itself under a rebinding Host.
    let head = format!("GET / HTTP/1.1\r\nHost: evil.example:{}\r\n", port(&served));
    assert_eq!(code(&raw_http(&a, &head, "")), (403, "host_not_allowed".into()));
    // The refusals are in the ledger, like the gateway's (written a moment later, in the background).
    let started = std::time::Instant::now();
    loop {
        let out = portcullis(&served.path(""))
            .args(["ledger", "refusals", "--db"])
            .arg(served.db())
            .output()
            .unwrap();
        let listed = String::from_utf8_lossy(&out.stdout).into_owned();
        if listed.contains("cross_site_refused") {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(10), "no console refusal in the ledger: {listed}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn no_cookie_an_expired_one_and_another_hubs_are_no_session() {
    let served = serve_with_args(POLICY, &[], &["--console-session", "1"]);
    let other = serve(POLICY);
    let me = |lines: &str| code(&page_request(&served, "GET", "/console/v1/me", lines, ""));
    assert_eq!(code(&page_request(&served, "GET", "/console/v1/me", "", "")), (401, "not_logged_in".into()));
    let theirs_login = login(&other, &code_of(&link(&other, None)));
    let theirs = session(&theirs_login);
    let value = session_cookie(&theirs_login).split_once('=').unwrap().1.to_owned();
    assert_eq!(me(&theirs), (401, "not_logged_in".into()), "another hub's cookie, under its name");
    let as_ours = format!(
        "Cookie: portcullis_console_{}={value}\r\nx-portcullis-console-session: {}\r\n",
        port(&served),
        page_token(&theirs_login)
    );
    assert_eq!(me(&as_ours), (401, "not_logged_in".into()), "another hub's cookie, under this hub's name");
    let ours = session(&login(&served, &code_of(&link(&served, None))));
    assert_eq!(me(&ours).0, 200);
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(me(&ours), (401, "not_logged_in".into()), "expired after --console-session 1");
}

#[test]
fn without_the_console_there_is_no_page_and_no_link() {
    let served = serve_with_args(POLICY, &[], &["--no-console"]);
    let head = format!("GET / HTTP/1.1\r\nHost: {}\r\n", addr(&served));
    assert_eq!(raw_http(&addr(&served), &head, "").status, 404);
    let out = portcullis(&served.path("")).args(["operator", "link"]).output().unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--no-console"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Waits (bounded) for the ledger's refusals to list `code` with `path` (written in the background).
fn refusal_recorded(served: &Served, code: &str, path: &str) {
    let started = std::time::Instant::now();
    loop {
        let out = portcullis(&served.path(""))
            .args(["ledger", "refusals", "--json", "--db"])
            .arg(served.db())
            .output()
            .unwrap();
        let listed: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
        let rows = listed["refusals"].as_array().cloned().unwrap_or_default();
        if rows.iter().any(|r| r["code"] == code && r.to_string().contains(path)) {
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "no {code} refusal of {path} in the ledger: {rows:?}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Opens stream `name` in the session `lines` and reads until its first event (or the answer ends):
/// the status and what was read.
fn stream_head(served: &Served, lines: &str, name: &str) -> (u16, String) {
    use std::io::{Read as _, Write as _};
    let head = format!(
        "POST /console/v1/streams/{name} HTTP/1.1\r\nHost: {}\r\nOrigin: {}\r\nx-portcullis-console: 1\r\nContent-Type: application/json\r\n{lines}Content-Length: 2\r\nConnection: close\r\n\r\n{{}}",
        addr(served),
        origin(served)
    );
    let mut stream = std::net::TcpStream::connect(addr(served)).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    stream.write_all(head.as_bytes()).unwrap();
    let mut read = Vec::new();
    let mut buffer = [0u8; 4096];
    loop {
        let n = stream.read(&mut buffer).unwrap_or(0);
        read.extend_from_slice(&buffer[..n]);
        let text = String::from_utf8_lossy(&read);
        if n == 0 || text.contains("event: stream") {
            break;
        }
    }
    let text = String::from_utf8_lossy(&read).into_owned();
    let status = text.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    (status, text)
}

#[test]
fn the_cookie_alone_or_with_another_logins_page_token_is_no_session() {
    let served = serve(POLICY);
    let alice = login(&served, &code_of(&link(&served, Some("alice"))));
    let bob = login(&served, &code_of(&link(&served, Some("bob"))));
    let (alice_token, bob_token) = (page_token(&alice), page_token(&bob));
    assert_ne!(alice_token, bob_token, "each login has its own page token");
    let cookie_alone = with_cookie(&session_cookie(&alice));
    let with_bobs_token = format!("{cookie_alone}x-portcullis-console-session: {bob_token}\r\n");
    let with_a_made_up_token = format!("{cookie_alone}x-portcullis-console-session: {}\r\n", "0".repeat(64));
    // What a page on another port of this host gets (the cookie), replayed with this hub's Origin and
    // the console's header (what a program, not a browser, can forge).
    for (what, lines) in [
        ("the cookie alone", &cookie_alone),
        ("the cookie with another login's page token", &with_bobs_token),
        ("the cookie with a made-up page token", &with_a_made_up_token),
    ] {
        let me = page_request(&served, "GET", "/console/v1/me", lines, "");
        assert_eq!(code(&me), (401, "not_logged_in".into()), "{what}: {}", me.body);
        let status = command(&served, lines, "hub_status", json!({}));
        assert_eq!(code(&status), (401, "not_logged_in".into()), "{what}: {}", status.body);
        let link = command(&served, lines, "console_link", json!({ "operator": "mallory" }));
        assert_eq!(code(&link), (401, "not_logged_in".into()), "{what}: {}", link.body);
        let (streamed, text) = stream_head(&served, lines, "follow_events");
        assert_eq!(streamed, 401, "{what}: {text}");
        let out = page_request(&served, "POST", "/console/v1/logout", lines, "");
        assert_eq!(code(&out), (401, "not_logged_in".into()), "{what} cannot end the login: {}", out.body);
    }
    let missing = command(&served, &cookie_alone, "hub_status", json!({}));
    assert!(missing.body.contains("cookie alone"), "the refusal says why: {}", missing.body);
    // Cookie and page token together are the login, for calls and streams alike; the refusals ended
    // neither login.
    let me = page_request(&served, "GET", "/console/v1/me", &session(&alice), "");
    assert_eq!(me.json()["session"]["operator"], "alice", "{}", me.body);
    assert_eq!(command(&served, &session(&alice), "hub_status", json!({})).status, 200);
    let (streamed, text) = stream_head(&served, &session(&alice), "follow_events");
    assert_eq!(streamed, 200, "{text}");
    assert!(text.contains("event: stream"), "{text}");
    let me = page_request(&served, "GET", "/console/v1/me", &session(&bob), "");
    assert_eq!(me.json()["session"]["operator"], "bob", "{}", me.body);
    refusal_recorded(&served, "not_logged_in", "/v1/commands/hub_status");
}

#[test]
fn a_browser_login_cannot_make_login_links() {
    let served = serve(POLICY);
    let alice = session(&login(&served, &code_of(&link(&served, Some("alice")))));
    for (what, path, args) in [
        ("for another name", "/console/v1/commands/console_link", json!({ "operator": "mallory" })),
        ("for its own name", "/console/v1/commands/console_link", json!({ "operator": "alice" })),
        ("for the default name", "/console/v1/commands/console_link", json!({})),
        ("under an encoded name", "/console/v1/commands/console%5Flink", json!({ "operator": "mallory" })),
        ("as a stream", "/console/v1/streams/console_link", json!({ "operator": "mallory" })),
    ] {
        let refused = page_request(&served, "POST", path, &alice, &args.to_string());
        assert_eq!(code(&refused), (403, "cross_site_refused".into()), "{what}: {}", refused.body);
        assert!(refused.body.contains("operator token"), "{what}: {}", refused.body);
        assert!(!refused.body.contains("#code="), "{what}: no link: {}", refused.body);
    }
    // The login goes on; the operator token still makes links (for any name).
    assert_eq!(command(&served, &alice, "hub_status", json!({})).status, 200);
    let made = link(&served, Some("mallory"));
    assert_eq!(made["operator"], "mallory");
    assert_eq!(login(&served, &code_of(&made)).status, 200);
    refusal_recorded(&served, "cross_site_refused", "console_link");
}
