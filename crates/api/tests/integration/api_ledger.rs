//! Ledgers through the operator API: opened read-only while a hub writes them, calls paged by cursor
//! with filters and search, one call in full, and files that are not ledgers (or of a newer schema)
//! refused with the ledger's own codes.
// Test helpers outside #[test] fns may unwrap and panic.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use portcullis_api::ErrorCode;
use portcullis_api::ledger::{CallFilter, CallStatus, LedgerView};
use portcullis_api::ledger_browse::{BrowsedLedger, CallOrder};
use serde_json::json;
use tokio_util::sync::CancellationToken;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ledger_a_hub_is_writing_is_read_paged_filtered_and_searched() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = std::fs::canonicalize(tmp.path()).unwrap();
    let hub = common::hub(
        &dir,
        r#"{ "commands": { "rules": [ { "id": "no-rm", "pattern": ["rm"], "decision": "forbidden" } ],
             "default": "allow" } }"#,
    )
    .await;
    for i in 0..5 {
        let r = hub
            .call(
                "s1",
                &format!("c{i}"),
                "shell",
                json!({"command": format!("echo zebra{i}q")}),
                "t",
                CancellationToken::new(),
            )
            .await;
        assert!(r.is_finished(), "{r:?}");
    }
    let refused = hub
        .call("s1", "c9", "shell", json!({"command": "rm -rf build"}), "t", CancellationToken::new())
        .await;
    assert!(!refused.is_finished());

    // Read while the hub still holds the ledger open for writing (its rows committed a moment later).
    let view = BrowsedLedger::open(&dir.join("ledger.db")).unwrap();
    let mut total = 0;
    for _ in 0..200 {
        total = view.count(&CallFilter::default()).unwrap();
        if total == 6 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(total, 6);
    let first = view.page(&CallFilter::default(), CallOrder::NewestFirst, None, 4).unwrap();
    assert_eq!(first.calls.len(), 4);
    assert_eq!(first.calls[0].head.call_id, "c9", "newest first");
    let rest = view.page(&CallFilter::default(), CallOrder::NewestFirst, first.next, 4).unwrap();
    assert_eq!(rest.calls.len(), 2);
    assert!(rest.next.is_none());

    let blocked = CallFilter { statuses: vec![CallStatus::Blocked], ..CallFilter::default() };
    let page = view.page(&blocked, CallOrder::NewestFirst, None, 10).unwrap();
    assert_eq!(page.calls.iter().map(|c| c.head.call_id.as_str()).collect::<Vec<_>>(), ["c9"]);
    assert_eq!(page.calls[0].decider.rule.as_deref(), Some("no-rm"));

    // One word (a search for `zebra-3` would be `zebra` and `3`, and `3` is also in some outputs'
    // durations).
    let search = CallFilter { search: Some("zebra3q".into()), ..CallFilter::default() };
    let found = view.page(&search, CallOrder::NewestFirst, None, 10).unwrap();
    assert_eq!(found.calls.iter().map(|c| c.head.call_id.as_str()).collect::<Vec<_>>(), ["c3"]);
    // The snippet: the text the search found, its words marked (in the arguments and in the output).
    let snippet = found.calls[0].snippet.clone().unwrap();
    let text: String = snippet.parts.iter().map(|p| p.text.as_str()).collect();
    assert!(text.starts_with("shell {\"command\":\"echo zebra3q\"}"), "{snippet:?}");
    let hits: Vec<&str> = snippet.parts.iter().filter(|p| p.hit).map(|p| p.text.as_str()).collect();
    // In the arguments, the output's text, and the structured output's `stdout` (issue 52: agents read
    // the structured result, so it carries the output too).
    assert_eq!(hits, ["zebra3q", "zebra3q", "zebra3q"], "{snippet:?}");
    // It starts at the document's start; the structured output after it is cut.
    assert!(!snippet.cut_before && snippet.cut_after, "{snippet:?}");
    // Without a search there is no snippet.
    assert!(first.calls.iter().all(|c| c.snippet.is_none()));

    // A listing row is the projection of the record it stands for (policy decisions, rules and all).
    let browsed = BrowsedLedger::open(&dir.join("ledger.db")).unwrap();
    for row in first.calls.iter().chain(&rest.calls) {
        let [detail] = &browsed.details(&row.head.call_id, Some(&row.head.session_id)).unwrap()[..] else {
            panic!()
        };
        let records: Vec<_> = detail.records.iter().map(|step| step.record.clone()).collect();
        let record = records.iter().find(|r| r.id == row.record_id).unwrap();
        assert_eq!(&portcullis_api::ledger::CallRow::of_call(&records, record.id).unwrap(), row);
        // The detail lists the call as the listing does.
        assert_eq!(detail.call.head.call_id, row.head.call_id);
    }

    // By what the policy said, and by agent (the calls' owner).
    let query = |q: portcullis_api::call_query::CallQuery| {
        let filter = q.filter(portcullis_api::types::Timestamp::now()).unwrap();
        view.page(&filter, CallOrder::NewestFirst, None, 10)
            .unwrap()
            .calls
            .into_iter()
            .map(|c| c.head.call_id)
            .collect::<Vec<_>>()
    };
    use portcullis_api::call_query::CallQuery;
    assert_eq!(
        query(CallQuery { policy_decisions: vec!["forbidden".into()], ..CallQuery::default() }),
        ["c9"]
    );
    assert_eq!(query(CallQuery { policy_decisions: vec!["allow".into()], ..CallQuery::default() }).len(), 5);
    assert_eq!(query(CallQuery { agents: vec!["t".into()], ..CallQuery::default() }).len(), 6);
    assert!(query(CallQuery { agents: vec!["someone-else".into()], ..CallQuery::default() }).is_empty());

    // Stats over the same calls: five finished shell calls, one blocked by the rule; no refusals.
    let stats = view.stats(&CallFilter::default(), None).unwrap();
    assert_eq!(stats.total, 6);
    let count = |counts: &[portcullis_api::ledger::Count], key: &str| {
        counts.iter().find(|c| c.key == key).map(|c| c.count)
    };
    assert_eq!(count(&stats.by_status, "finished"), Some(5), "{:?}", stats.by_status);
    assert_eq!(count(&stats.by_status, "blocked"), Some(1), "{:?}", stats.by_status);
    assert_eq!(count(&stats.by_tool, "shell"), Some(6), "{:?}", stats.by_tool);
    let refusals = view.refusals(None, None, 10).unwrap();
    assert!(refusals.is_empty(), "{refusals:?}");

    let details = browsed.details("c9", Some("s1")).unwrap();
    assert!(!details[0].records.is_empty());
    let unknown = browsed.details("nope", None).err().unwrap();
    assert_eq!(unknown.code, ErrorCode::CallNotFound);
    assert_eq!(unknown.code.http_status(), 404);
    hub.close().await.unwrap();
}

#[test]
fn files_that_are_not_ledgers_are_refused_with_the_ledgers_codes() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = LedgerView::open(&tmp.path().join("none.db")).err().unwrap();
    assert_eq!(missing.code, ErrorCode::LedgerMissing);

    let text = tmp.path().join("notes.db");
    std::fs::write(&text, "not a database").unwrap();
    assert_eq!(LedgerView::open(&text).err().unwrap().code, ErrorCode::NotALedger);

    // A ledger of a newer schema than this build: refused, never altered.
    let newer = tmp.path().join("newer.db");
    drop(portcullis_ledger::SqliteLedger::open(&newer).unwrap());
    let conn = rusqlite::Connection::open(&newer).unwrap();
    let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0)).unwrap();
    conn.execute_batch(&format!("PRAGMA user_version = {}", version + 1)).unwrap();
    drop(conn);
    let e = LedgerView::open(&newer).err().unwrap();
    assert_eq!(e.code, ErrorCode::LedgerSchemaNewer, "{e:?}");
    assert!(e.message.contains(&(version + 1).to_string()), "{}", e.message);
}
