//! The team ledger against a real PostgreSQL server (Debian's, private to each test).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod call_marks;
mod chain;
mod connecting;
mod deciders;
mod effect_marks;
mod rollup_durations;
mod rollups;

use portcullis_ledger::RecordSink;
use portcullis_team::testing::PrivatePostgres;
use portcullis_team::{PostgresSink, TeamDb};

/// A private server with an empty team ledger `team` and a sink bound to the hub ledger `ledger-one`;
/// the folder holds the password file (keep it while the ledger is used).
pub(crate) fn team_with_sink() -> (PrivatePostgres, TeamDb, PostgresSink, tempfile::TempDir) {
    let pg = PrivatePostgres::start();
    pg.create_db("team");
    let dir = tempfile::tempdir().unwrap();
    let db = pg.team_db("team", dir.path());
    let sink = PostgresSink::new(db.clone());
    sink.bind("ledger-one");
    (pg, db, sink, dir)
}
