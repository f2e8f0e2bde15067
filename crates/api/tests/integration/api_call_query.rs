//! Queries as a person types them, through the operator API: statuses, blocked reasons and times as
//! words become the ledger's filters, the same in every front end; an unknown word is `bad_filter`, a
//! time that cannot be read `bad_time` naming its field; ledger times and widths for people.
// Test helpers outside #[test] fns may unwrap and panic.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use portcullis_api::ErrorCode;
use portcullis_api::call_query::{CallQuery, TimeRange};
use portcullis_api::ledger::CallStatus;
use portcullis_api::times::{format_duration, format_time, format_width, parse_time, parse_width};
use portcullis_api::types::Timestamp;

const HOUR: i64 = 3_600_000_000;
/// 2025-03-01T10:00:00Z.
const NOW: Timestamp = Timestamp(1_740_823_200_000_000);

#[test]
fn a_query_becomes_the_ledgers_filter() {
    let query = CallQuery {
        tools: vec!["shell".into()],
        statuses: vec!["blocked".into(), "error".into()],
        reasons: vec!["tool_denied".into()],
        decided_by: vec!["rule".into()],
        rule: Some("git-push".into()),
        since: Some("2h".into()),
        until: Some("2025-03-01".into()),
        search: Some("cargo build".into()),
        ..CallQuery::default()
    };
    let filter = query.filter(NOW).unwrap();
    assert_eq!(filter.statuses, [CallStatus::Blocked, CallStatus::Error]);
    assert_eq!(filter.reasons.len(), 1);
    assert_eq!(filter.reasons[0].as_str(), "tool_denied");
    assert_eq!(filter.since, Some(Timestamp(NOW.0 - 2 * HOUR)));
    assert_eq!(filter.until, Some(Timestamp(NOW.0 - 10 * HOUR)));
    assert_eq!((filter.tools, filter.rule, filter.search), (query.tools, query.rule, query.search));
    assert_eq!(CallQuery::default().filter(NOW).unwrap(), Default::default());

    // As the HTTP API and the desktop app send it; unknown fields are refused.
    let sent: CallQuery = serde_json::from_str(r#"{"statuses": ["running"], "since": "15m"}"#).unwrap();
    assert_eq!(sent.filter(NOW).unwrap().statuses, [CallStatus::Running]);
    assert!(serde_json::from_str::<CallQuery>(r#"{"status": ["running"]}"#).is_err());
    // Policy decisions and agents pass through; an unknown decision is `bad_filter`.
    let q = CallQuery {
        policy_decisions: vec!["prompt".into()],
        agents: vec!["claude-code".into()],
        ..CallQuery::default()
    };
    let filter = q.filter(NOW).unwrap();
    assert_eq!(filter.policy_decisions.iter().map(|d| d.as_str()).collect::<Vec<_>>(), ["prompt"]);
    assert_eq!(filter.owners, ["claude-code"]);
    // Every decider kind is a word of the one closed set, `protected_place` too; others are refused.
    for kind in portcullis_harness::DeciderKind::ALL {
        let q = CallQuery { decided_by: vec![kind.as_str().into()], ..CallQuery::default() };
        assert_eq!(q.filter(NOW).unwrap().decided_by, [kind]);
    }
    let wizard = CallQuery { decided_by: vec!["wizard".into()], ..CallQuery::default() };
    let e = wizard.filter(NOW).unwrap_err();
    assert_eq!(e.code, ErrorCode::BadFilter);
    assert!(e.message.contains("unknown decider kind \"wizard\""), "{e}");
    let bad = CallQuery { policy_decisions: vec!["maybe".into()], ..CallQuery::default() };
    let e = bad.filter(NOW).unwrap_err();
    assert_eq!(e.code, ErrorCode::BadFilter);
    assert!(e.message.contains("maybe"), "{e}");
}

#[test]
fn unknown_words_and_unreadable_times_are_refused_with_their_codes() {
    let bad_status = CallQuery { statuses: vec!["done".into()], ..CallQuery::default() };
    let e = bad_status.filter(NOW).unwrap_err();
    assert_eq!(e.code, ErrorCode::BadFilter);
    assert!(e.message.contains("unknown status \"done\""), "{}", e.message);

    let bad_reason = CallQuery { reasons: vec!["too_loud".into()], ..CallQuery::default() };
    let e = bad_reason.filter(NOW).unwrap_err();
    assert_eq!(e.code, ErrorCode::BadFilter);
    assert!(
        e.message.contains("unknown reason \"too_loud\": expected one of guardrail_blocked"),
        "{}",
        e.message
    );

    for (range, field) in [
        (TimeRange { since: Some("yesterday".into()), until: None }, "since"),
        (TimeRange { since: Some("1h".into()), until: Some("2026-13-01".into()) }, "until"),
    ] {
        let e = range.session_filter(NOW).unwrap_err();
        assert_eq!((e.code, e.code.http_status()), (ErrorCode::BadTime, 400));
        assert_eq!(e.field(), Some(field));
        assert!(e.message.starts_with("cannot read time"), "{}", e.message);
        let query =
            CallQuery { since: range.since.clone(), until: range.until.clone(), ..CallQuery::default() };
        assert_eq!(query.filter(NOW).unwrap_err().field(), Some(field));
        assert_eq!(range.refusal_filter(NOW).unwrap_err().field(), Some(field));
    }
    let sessions = TimeRange { since: Some("7d".into()), until: None }.session_filter(NOW).unwrap();
    assert_eq!(sessions.since, Some(Timestamp(NOW.0 - 7 * 24 * HOUR)));
}

#[test]
fn ledger_times_and_widths_for_people() {
    assert_eq!(format_time(NOW), "2025-03-01T10:00:00.000000Z");
    assert_eq!(parse_time("2025-03-01T10:00:00Z", Timestamp(0)).unwrap(), NOW);
    assert_eq!(parse_time("90s", NOW).unwrap(), Timestamp(NOW.0 - 90_000_000));
    let e = parse_time("soon", NOW).unwrap_err();
    assert_eq!((e.code, e.details["value"].as_str()), (ErrorCode::BadTime, Some("soon")));
    assert_eq!(e.field(), None);

    assert_eq!(parse_width("15m").unwrap(), HOUR / 4);
    assert_eq!(format_width(HOUR / 4), "15m");
    assert_eq!(format_width(1_500), "~1.5ms");
    let e = parse_width("0h").unwrap_err();
    assert_eq!(e.code, ErrorCode::BadArgument);
    assert!(e.message.starts_with("cannot read \"0h\" as a time width"), "{}", e.message);
    assert_eq!(format_duration(125_000_000), "2m05s");
}
