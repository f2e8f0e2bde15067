//! Issue 35, asking for a new host: curl's rule names api.test and says `"other_hosts": "prompt"`. A
//! command that reaches for b.test waits while the operator is asked (through the operator API, as the
//! app and the browser answer); "always" adds the host to the rule in the policy file, the command goes
//! on, and the next call reaches b.test without a prompt. A denial is the refusal the agent reads.
// Test helpers outside #[test] fns may unwrap and panic.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::{agent_in_background, http, ledger_calls_when, portcullis, text_of};
use crate::egress::{call, world_with};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// The pending approval that mentions `needle`, once it is there (bounded: 30 s).
fn pending_with(api: &str, operator: &str, needle: &str) -> Value {
    let started = Instant::now();
    loop {
        let (status, body) = http(&format!("{api}/approvals"), "GET", Some(operator), &[], None);
        assert_eq!(status, 200, "{body}");
        let v: Value = serde_json::from_str(&body).unwrap();
        let found =
            v["approvals"].as_array().unwrap().iter().find(|a| a.to_string().contains(needle)).cloned();
        if let Some(found) = found {
            return found;
        }
        assert!(started.elapsed() < Duration::from_secs(30), "no approval for {needle}: {body}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Answers the approval `asked` (as listed) for the arguments it shows.
fn answer(api: &str, operator: &str, asked: &Value, choice: &str) {
    let body = json!({ "answer": choice, "arguments_sha256": asked["arguments_sha256"] }).to_string();
    let id = &asked["id"];
    let (status, said) = http(&format!("{api}/approvals/{id}"), "POST", Some(operator), &[], Some(&body));
    assert_eq!(status, 200, "{said}");
}

#[test]
fn a_host_answered_always_joins_the_rule_and_the_next_call_reaches_it_without_asking() {
    let w = world_with(true);
    let (a, b) = (w.a, w.b);
    let (api, operator) = (w.served.api.clone(), w.served.operator_token.clone());
    let info = json!({ "mcp_url": w.served.mcp_url });
    let fetch = call(&format!("curl -sS --cacert ca.pem https://b.test:{b}/hello.txt"));

    // Denied: the agent reads why, and B is not reached.
    let denied = agent_in_background(&info, &w.served.token, json!([fetch.clone()]));
    let asked = pending_with(&api, &operator, "b.test");
    answer(&api, &operator, &asked, "deny");
    let out = denied.join().unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let text = text_of(&report["results"][0]["result"]);
    assert!(
        text.contains(&format!("[sandbox refused: network to b.test:{b} refused: denied by the operator")),
        "{text}"
    );
    assert_eq!(std::fs::read_to_string(&w.b_log).unwrap(), "", "B was reached after a denial");

    // Asked again (a denial is not remembered past its command): the card says what and for whom.
    let waiting = agent_in_background(&info, &w.served.token, json!([fetch.clone()]));
    let asked = pending_with(&api, &operator, "b.test");
    assert_eq!(asked["tool"], "shell", "{asked}");
    assert_eq!(asked["action"]["kind"], "network", "{asked}");
    assert_eq!(asked["action"]["target"], format!("b.test:{b}"), "{asked}");
    assert!(asked["arguments"]["command"].as_str().unwrap().contains("curl"), "{asked}");
    assert!(asked["reason"].as_str().unwrap().contains("rule `fetch`"), "{asked}");
    assert_eq!(asked["always"]["offered"], "yes", "{asked}");
    answer(&api, &operator, &asked, "always");
    let out = waiting.join().unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let text = text_of(&report["results"][0]["result"]);
    assert!(text.contains("hello from api.test") && text.contains("[exit code: 0]"), "{text}");
    assert!(text.contains(&format!("[network: b.test:{b}, ")), "{text}");

    // The policy file gained the host, in the rule that asked, and nothing else changed.
    let policy: Value =
        serde_json::from_str(&std::fs::read_to_string(w.served.policy_file()).unwrap()).unwrap();
    let rules = policy["commands"]["rules"].as_array().unwrap();
    let fetch_rule = rules.iter().find(|r| r["id"] == "fetch").unwrap();
    assert_eq!(fetch_rule["network"], json!([format!("api.test:{a}"), format!("b.test:{b}")]));
    assert_eq!(rules.len(), 8, "no rule was added: {policy}");

    // The next call reaches B with no prompt (the agent would wait for one and time out).
    let report = w.served.agent(json!([fetch]));
    let text = text_of(&report["results"][0]["result"]);
    assert!(text.contains("hello from api.test") && text.contains("[exit code: 0]"), "{text}");
    let log = std::fs::read_to_string(&w.b_log).unwrap();
    assert_eq!(log.lines().count(), 2, "{log}");
    // The ledger keeps the question and its answer with the call, and who allowed the connection.
    let calls = ledger_calls_when(&w.served, 3);
    let shown: Vec<String> = (calls.iter())
        .map(|c| {
            let session = c["session_id"].as_str().unwrap();
            let out = portcullis(w.served.dir.path())
                .args(["ledger", "show", "--db"])
                .arg(w.served.db())
                .args(["--session", session, c["call_id"].as_str().unwrap()])
                .output()
                .unwrap();
            String::from_utf8_lossy(&out.stdout).into_owned()
        })
        .collect();
    let always = shown.iter().find(|s| s.contains("approved_always")).unwrap_or_else(|| panic!("{shown:?}"));
    assert!(always.contains(&format!("wrote rule fetch (+b.test:{b})")), "{always}");
    assert!(
        always.contains(&format!("reached b.test:{b}")) && always.contains("allowed by the operator"),
        "{always}"
    );
    let denied = shown.iter().find(|s| s.contains("denied")).unwrap_or_else(|| panic!("{shown:?}"));
    assert!(
        denied.contains(&format!("refused: network to b.test:{b} refused: denied by the operator")),
        "{denied}"
    );
    assert!(
        denied.contains("; rule `fetch`") && denied.contains(&format!("allows api.test:{a}")),
        "{denied}"
    );
}

#[test]
fn a_host_answered_for_the_session_is_reached_by_the_sessions_next_command_and_the_policy_is_unchanged() {
    let w = world_with(true);
    let b = w.b;
    let (api, operator) = (w.served.api.clone(), w.served.operator_token.clone());
    let policy_before = std::fs::read_to_string(w.served.policy_file()).unwrap();
    let info = json!({ "mcp_url": w.served.mcp_url });
    let fetch = call(&format!("curl -sS --cacert ca.pem https://b.test:{b}/hello.txt"));
    // One agent session, two commands: only the first asks.
    let session = agent_in_background(&info, &w.served.token, json!([fetch.clone(), fetch]));
    let asked = pending_with(&api, &operator, "b.test");
    answer(&api, &operator, &asked, "session");
    let out = session.join().unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    for i in 0..2 {
        let text = text_of(&report["results"][i]["result"]);
        assert!(
            text.contains("hello from api.test") && text.contains("[exit code: 0]"),
            "call {i}: {report}"
        );
    }
    let second = text_of(&report["results"][1]["result"]);
    assert!(second.contains(&format!("[network: b.test:{b}, ")), "{second}");
    assert_eq!(std::fs::read_to_string(w.served.policy_file()).unwrap(), policy_before);
    assert_eq!(std::fs::read_to_string(&w.b_log).unwrap().lines().count(), 2);
}
