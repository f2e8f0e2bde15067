//! Ledgers through the operator API: any ledger file opened read-only (also while a hub writes it),
//! calls paged newest first by a cursor with filters and full-text search, one call with every record
//! and approval, sessions with how they ended, refusals, stats and export; and a file's upkeep: its
//! health, its schema, its migration.
//!
//! The shapes are the ledger reader's own (`CallRow` for a call's latest state in a listing,
//! `StoredRecord` for each record of its timeline, both with the call's `CallHead`): they are the
//! transport types of this part of the API, re-exported here so front ends name them through the API.

use super::error::{ApiError, ErrorCode};
pub use super::ledger_address::LedgerAddress;
use super::ledger_address::open_reader;
use portcullis_ledger::{LedgerRead, LedgerReader, LedgerStoreError, SqliteLedger};
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

pub use portcullis_harness::Timestamp;
pub use portcullis_ledger::SinkLag;
pub use portcullis_ledger::export::CSV_HEADER;
pub use portcullis_ledger::stats::{Bucket, Count, ToolDurations};
pub use portcullis_ledger::{
    ApprovalOutcome, ApprovalRecord, ApprovalSummary, CallFilter, CallHead, CallOrigin, CallPage, CallRow,
    CallStatus, CallTimeline, CheckReport, CommandCount, CommandOutcome, Cursor, ExportFormat, RecordBody,
    RefusalFilter, RefusalRow, SessionEnd, SessionFilter, SessionRow, Stats, StoredKind,
    StoredPolicyDecision, StoredRecord,
};
pub use portcullis_ledger::{BreakKind, ChainBreak, LedgerVerdict, Verdict, VerifyReport};

/// A sink this many records and rows behind its ledger is warned about.
pub const SHIPPING_LAG_WARNING: i64 = portcullis_ledger::tail::LAG_WARNING;

/// The most calls one page holds.
pub const MAX_PAGE: usize = 1000;

/// The ledger schema version this build reads and writes; older files are migrated by
/// [`migrate_ledger`], newer ones refused (`ledger_schema_newer`).
pub const SCHEMA_VERSION: i64 = portcullis_ledger::schema::SCHEMA_VERSION;

/// Most histogram buckets [`fill_histogram`] draws with their empty neighbours filled in.
pub const MAX_FILLED_BUCKETS: i64 = 200;

/// A ledger opened for reading: a hub's own file, or a team's ledger in PostgreSQL.
pub struct LedgerView {
    reader: Box<dyn LedgerRead>,
}

impl LedgerView {
    /// Opens `path` read-only: refused (with the ledger's code) when it is missing, not a ledger, or of
    /// another schema version.
    pub fn open(path: &Path) -> Result<Self, ApiError> {
        LedgerView::open_at(&LedgerAddress::File(path.to_owned()))
    }

    /// Opens the ledger `address` names (a team ledger: connects and checks its schema).
    pub fn open_at(address: &LedgerAddress) -> Result<Self, ApiError> {
        Ok(LedgerView { reader: open_reader(address)? })
    }

    /// One call as the detail view shows it (the newest with this id, or `session`'s), with where it
    /// ran on a team ledger; `call_not_found` when there is none.
    pub fn call_detail(
        &self,
        call_id: &str,
        session: Option<&str>,
    ) -> Result<(super::call_detail::CallDetail, Option<CallOrigin>), ApiError> {
        let (timeline, origin) = self.timeline(call_id, session)?;
        match super::call_detail::CallDetail::of(timeline.records, timeline.approvals) {
            Some(detail) => Ok((detail, origin)),
            None => {
                let within = session.map(|s| format!(" in session {s:?}")).unwrap_or_default();
                Err(ApiError::new(
                    ErrorCode::CallNotFound,
                    format!("no call {call_id:?}{within}"),
                    json!({ "call_id": call_id, "session": session }),
                ))
            }
        }
    }

    /// One call with every record and approval (`None`: no such call), and on a team ledger, where it ran.
    pub fn timeline(
        &self,
        call_id: &str,
        session: Option<&str>,
    ) -> Result<(CallTimeline, Option<CallOrigin>), ApiError> {
        Ok(self.reader.timeline(call_id, session)?)
    }

    /// Writes every record of the matching calls to `out`; `progress(done, total)` every 1,000 records.
    pub fn export(
        &self,
        filter: &CallFilter,
        format: ExportFormat,
        out: &mut dyn Write,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<u64, ApiError> {
        Ok(self.reader.export(filter, format, out, progress)?)
    }

    /// Writes every record of the matching calls to the file `out`, owner-only (exports hold what the
    /// ledger holds), never the ledger itself (`bad_argument`). The records go to a hidden file beside
    /// `out` that is renamed over it only when all were written, so a failed or stopped export never
    /// leaves a part that passes for the whole, nor spoils a file `out` already was. Returns the
    /// records written.
    pub fn export_to_file(
        &self,
        filter: &CallFilter,
        format: ExportFormat,
        out: &Path,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<u64, ApiError> {
        self.export_to_file_until(filter, format, out, &AtomicBool::new(false), progress)
    }

    /// [`LedgerView::export_to_file`], ended early (with no file left behind) once `stop` is set.
    pub fn export_to_file_until(
        &self,
        filter: &CallFilter,
        format: ExportFormat,
        out: &Path,
        stop: &AtomicBool,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<u64, ApiError> {
        if let Some(ledger) = self.reader.file()
            && let (Ok(a), Ok(b)) = (ledger.canonicalize(), out.canonicalize())
            && a == b
        {
            return Err(ApiError::new(
                ErrorCode::BadArgument,
                format!("{} is the ledger itself", out.display()),
                json!({ "file": out }),
            ));
        }
        if out.is_dir() {
            return Err(ApiError::new(
                ErrorCode::BadArgument,
                format!("{} is a folder: name a file to export to", out.display()),
                json!({ "file": out }),
            ));
        }
        let part = part_file(out);
        let file = create_owner_only(&part).map_err(|e| output_failed(out, &e))?;
        let mut sink = Stoppable { inner: BufWriter::with_capacity(1 << 16, file), stop };
        let written = self
            .export(filter, format, &mut sink, progress)
            .and_then(|n| sink.flush().map(|()| n).map_err(|e| output_failed(out, &e)))
            .and_then(|n| {
                sink.inner.get_ref().sync_all().map_err(|e| output_failed(out, &e))?;
                std::fs::rename(&part, out).map(|()| n).map_err(|e| output_failed(out, &e))
            });
        drop(sink);
        if written.is_err() {
            let _ = std::fs::remove_file(&part);
        }
        written
    }
}

/// The hidden file an export is written to before it is renamed to `out`.
fn part_file(out: &Path) -> PathBuf {
    let name = out.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    out.with_file_name(format!(".{name}.{}.part", std::process::id()))
}

/// A writer that fails once `stop` is set (the export then ends and removes its file).
struct Stoppable<'a, W: Write> {
    inner: W,
    stop: &'a AtomicBool,
}

impl<W: Write> Write for Stoppable<'_, W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.stop.load(Ordering::Relaxed) {
            return Err(std::io::Error::other("export stopped"));
        }
        self.inner.write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// Creates (or truncates) a file, owner-only when new.
fn create_owner_only(path: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    OpenOptions::new().write(true).create(true).truncate(true).mode(0o600).open(path)
}

fn output_failed(path: &Path, e: &std::io::Error) -> ApiError {
    ApiError::new(
        ErrorCode::OutputFailed,
        format!("cannot write output: {}: {e}", path.display()),
        json!({ "file": path }),
    )
}

/// Reads a page cursor (the `next` of a page, `<time>.<id>`); anything else is `bad_filter`.
pub fn parse_cursor(text: &str) -> Result<Cursor, ApiError> {
    Ok(text.parse::<Cursor>()?)
}

/// Reads an export format: `jsonl` or `csv`; anything else is `bad_filter`.
pub fn parse_export_format(text: &str) -> Result<ExportFormat, ApiError> {
    Ok(text.parse::<ExportFormat>()?)
}

/// The health of the ledger file at `path` (opened read-only): refused as [`LedgerView::open`] refuses.
/// The public key checkpoints are verified against: `key` (a file holding its hex, or the hex), else the
/// hub's (the config folder's ledger key).
pub fn verifying_key(key: Option<&str>) -> Result<portcullis_ledger::LedgerPublicKey, ApiError> {
    let unusable = |e: portcullis_ledger::KeyError| {
        ApiError::new(ErrorCode::LedgerKeyUnusable, e.to_string(), json!({ "key": key }))
    };
    match key {
        Some(key) => portcullis_ledger::LedgerPublicKey::read(key).map_err(unusable),
        None => {
            let dir = portcullis_hub::config_dir()
                .map_err(|e| ApiError::new(ErrorCode::LedgerKeyUnusable, e.to_string(), json!({})))?;
            portcullis_hub::ledger_public_key(&dir).map_err(unusable)
        }
    }
}

/// Verifies the ledger file at `path` against `key` (see [`verifying_key`]) and the witness the user's
/// config folder keeps for it, if any.
/// Without `key` and without a ledger key in the config folder, every link is checked without
/// signatures and the report says where the key was looked for.
pub fn verify_ledger_file(path: &Path, key: Option<&str>) -> Result<VerifyReport, ApiError> {
    let witnesses = portcullis_hub::config_dir().ok();
    let reader = LedgerReader::open(path)?;
    if key.is_none()
        && let Some(dir) = &witnesses
        && let key_file = portcullis_hub::ledger_key_path(dir)
        && portcullis_ledger::LedgerPublicKey::find(&key_file)
            .map_err(|e| ApiError::new(ErrorCode::LedgerKeyUnusable, e.to_string(), json!({})))?
            .is_none()
    {
        return Ok(reader.verify_without_key(&key_file, witnesses.as_deref())?);
    }
    Ok(reader.verify_with(&verifying_key(key)?, witnesses.as_deref())?)
}

/// Verifies a JSON Lines export (its records' links and the checkpoints it carries) against `keys` (see
/// [`verifying_key`]; none: the hub's). A team ledger's export holds several hubs' ledgers: each is
/// verified on its own, its checkpoints against any of the keys.
pub fn verify_export_file(file: &Path, keys: &[String]) -> Result<VerifyReport, ApiError> {
    let keys = match keys {
        [] => vec![verifying_key(None)?],
        keys => keys.iter().map(|k| verifying_key(Some(k))).collect::<Result<Vec<_>, _>>()?,
    };
    let opened = std::fs::File::open(file).map_err(|e| {
        ApiError::new(ErrorCode::BadArgument, format!("{}: {e}", file.display()), json!({ "file": file }))
    })?;
    Ok(portcullis_ledger::export_proof::verify_export_keys(std::io::BufReader::new(opened), &keys)?)
}

pub fn check_ledger(path: &Path) -> Result<CheckReport, ApiError> {
    Ok(LedgerReader::open(path)?.check()?)
}

/// What migrating a ledger did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MigrateReport {
    /// The file's schema version now ([`SCHEMA_VERSION`]).
    pub schema_version: i64,
    /// Calls a writer that stopped left open, now marked interrupted.
    pub interrupted_calls: u64,
    /// Sessions a writer that stopped left open, now marked cut.
    pub cut_sessions: u64,
}

/// Opens the ledger at `path` for writing once and closes it: an older schema is migrated, what a
/// stopped writer left open is settled. A missing file is not created (`ledger_missing`); a file this
/// build refuses (another application's, a newer schema, one a writer holds) is left as it was.
pub async fn migrate_ledger(path: &Path) -> Result<MigrateReport, ApiError> {
    if !path.exists() {
        return Err(LedgerStoreError::Missing { path: path.to_path_buf() }.into());
    }
    tracing::debug!(path = %path.display(), "opening ledger for writing");
    let ledger = SqliteLedger::open(path)?;
    let interrupted_calls = ledger.interrupted_on_open();
    let cut_sessions = ledger.cut_sessions_on_open();
    ledger.close().await?;
    drop(ledger);
    // Reading it back proves the schema is now the one this build reads.
    LedgerReader::open(path)?;
    Ok(MigrateReport { schema_version: SCHEMA_VERSION, interrupted_calls, cut_sessions })
}

/// A histogram ready to draw.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Histogram {
    pub buckets: Vec<Bucket>,
    /// The empty buckets between them are left out (there would be more than [`MAX_FILLED_BUCKETS`]).
    pub empty_left_out: bool,
}

/// The stats' buckets (only the non-empty ones) with the empty buckets between them filled in, when
/// there are no more than [`MAX_FILLED_BUCKETS`] in all.
pub fn fill_histogram(buckets: &[Bucket], bucket_us: i64) -> Histogram {
    let (Some(first), Some(last)) = (buckets.first(), buckets.last()) else {
        return Histogram { buckets: Vec::new(), empty_left_out: false };
    };
    let width = bucket_us.max(1);
    let span = (last.start.0 - first.start.0) / width + 1;
    if span > MAX_FILLED_BUCKETS {
        return Histogram { buckets: buckets.to_vec(), empty_left_out: true };
    }
    let mut all = Vec::new();
    let mut given = buckets.iter().peekable();
    for i in 0..span {
        let start = Timestamp(first.start.0 + i * bucket_us);
        let bucket = match given.peek() {
            Some(b) if b.start == start => given.next().cloned().unwrap_or_else(|| Bucket::empty(start)),
            _ => Bucket::empty(start),
        };
        all.push(bucket);
    }
    Histogram { buckets: all, empty_left_out: false }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fills_gaps_between_buckets() {
        let b = |s, count| Bucket { start: Timestamp(s), count, ..Bucket::default() };
        let filled = fill_histogram(&[b(0, 2), b(30, 1)], 10);
        assert!(!filled.empty_left_out);
        let counts: Vec<u64> = filled.buckets.iter().map(|b| b.count).collect();
        assert_eq!(counts, [2, 0, 0, 1]);
        let sparse = fill_histogram(&[b(0, 2), b(10_000, 1)], 10);
        assert!(sparse.empty_left_out);
        assert_eq!(sparse.buckets.len(), 2);
        assert_eq!(fill_histogram(&[], 10).buckets, []);
    }
}
