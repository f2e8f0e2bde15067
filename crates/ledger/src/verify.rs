//! `ledger verify`: walks the chain over every record (and over what the journal holds that SQLite does
//! not yet), checks each link, each derived column, and each checkpoint's signature against the key the
//! verifier trusts, and names the first record where anything breaks. Records from before the chain are
//! counted as unchained, never as valid.

use crate::chain::{self, CHAINED_COLUMNS, Link};
use crate::error::{AtPath, LedgerStoreError};
use crate::journal;
use crate::key::LedgerPublicKey;
use crate::reader::LedgerReader;
use crate::seal::message;
use crate::verify_report::{BreakKind, ChainBreak, MAX_BREAKS, Verdict, VerifyReport};
use crate::wire::{self, Decoded};

/// A checkpoint as read back.
struct StoredSeal {
    id: i64,
    count: u64,
    head: Link,
    at: i64,
    writer_id: i64,
    why: String,
    signature: Signature,
}

/// What a checkpoint's signature is worth.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Signature {
    /// Made with the key verified against, over what the checkpoint says.
    Valid,
    /// None (its writer had no key): it proves nothing, and is no sign of a change either.
    Unsigned,
    /// Made with another key, or not over what the checkpoint says (why).
    Invalid(String),
}

impl Signature {
    fn of(
        key: Option<&LedgerPublicKey>,
        public: Option<&[u8]>,
        signature: Option<&[u8]>,
        signed: &[u8],
    ) -> Signature {
        match (key, public, signature) {
            (Some(key), Some(public), Some(signature)) => {
                if public != key.as_bytes() {
                    Signature::Invalid(format!(
                        "signed with key {}, not with the key verified against ({key}): re-signed with another key",
                        portcullis_harness::receipt::hex(public)
                    ))
                } else if key.verifies(signed, signature) {
                    Signature::Valid
                } else {
                    Signature::Invalid("its signature does not verify: the checkpoint was altered".into())
                }
            }
            _ => Signature::Unsigned,
        }
    }
}

/// Where in the chain a record is, as a break names it (made into words only when something breaks).
#[derive(Debug, Clone, Copy)]
enum Place<'a> {
    /// A row of the file, by id.
    Record(i64),
    /// A record still only in the journal.
    Journaled { position: u64, call_id: &'a str, frame_end: u64 },
    /// A checkpoint in the journal: it follows the journal's last record before it.
    JournalSeal,
}

impl Place<'_> {
    fn record_id(self) -> Option<i64> {
        match self {
            Place::Record(id) => Some(id),
            _ => None,
        }
    }
}

impl std::fmt::Display for Place<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Place::Record(id) => write!(f, "record {id}"),
            Place::Journaled { position, call_id, frame_end } => write!(
                f,
                "the journal's record {position} (call {call_id:?}, in the frame ending at byte {frame_end})"
            ),
            Place::JournalSeal => f.write_str("the journal's last record before it"),
        }
    }
}

/// The walk's state: the chain as recomputed, and what was found.
struct Walk<'k> {
    /// None: no key was found; signatures are not checked.
    key: Option<&'k LedgerPublicKey>,
    ledger_id: String,
    head: Link,
    position: u64,
    /// Position up to which a signed, matching checkpoint proves the chain.
    sealed_to: u64,
    seals: Vec<StoredSeal>,
    next_seal: usize,
    checkpoints_valid: u64,
    breaks: Vec<ChainBreak>,
    break_count: u64,
    last_id: Option<i64>,
    /// The hub's witness of its latest checkpoint: (count, head, when signed).
    witness: Option<(u64, Link, i64)>,
}

impl Walk<'_> {
    fn broke(&mut self, kind: BreakKind, record_id: Option<i64>, position: Option<u64>, message: String) {
        self.break_count += 1;
        if self.breaks.len() < MAX_BREAKS {
            self.breaks.push(ChainBreak { kind, record_id, position, message });
        }
    }

    /// A chain that ends before `count` records that `whose` checkpoint (signed `at`) covered.
    fn truncated(&mut self, whose: &str, count: u64, at: i64, removed: &str) {
        let after = self.last_id.map(|id| format!(" (after record {id})")).unwrap_or_default();
        let message = format!(
            "{whose} signed at {} covers {count} records; the chain has {}: the newest {} {removed}{after}",
            crate::timefmt::format_rfc3339(portcullis_harness::Timestamp(at)),
            self.position,
            count - self.position
        );
        self.broke(BreakKind::Truncated, None, Some(self.position + 1), message);
    }

    /// Moves the chain on by one record whose stored link is `stored` and canonical bytes `bytes`.
    fn step(&mut self, place: Place<'_>, bytes: &[u8], stored: &Link) {
        let (id, what) = (place.record_id(), place);
        self.position += 1;
        let computed = chain::link(&self.head, bytes);
        if computed != *stored {
            let gap = match (self.last_id, id) {
                (Some(last), Some(id)) if id > last + 1 => Some((last + 1, id - 1)),
                _ => None,
            };
            match gap {
                Some((from, to)) => self.broke(
                    BreakKind::Deleted,
                    id,
                    Some(self.position),
                    format!(
                        "{what} does not follow the record before it: record{} {} {} missing (deleted)",
                        if from == to { "" } else { "s" },
                        if from == to { from.to_string() } else { format!("{from}..{to}") },
                        if from == to { "is" } else { "are" }
                    ),
                ),
                None => self.broke(
                    BreakKind::Changed,
                    id,
                    Some(self.position),
                    format!(
                        "{what} does not match its link in the chain: it was edited, inserted, or moved from another place"
                    ),
                ),
            }
        }
        // From here on the stored links are followed, so a later, separate change shows too.
        self.head = *stored;
        if id.is_some() {
            self.last_id = id;
        }
        self.check_seals(place);
        if let Some((count, link, at)) = self.witness
            && self.position == count
            && self.head != link
        {
            self.broke(
                BreakKind::SealMismatch,
                id,
                Some(self.position),
                format!(
                    "the hub's witness (its config folder) of the checkpoint signed at {} gives {what} another link: the records up to it were changed, or the ledger was cut back and written on",
                    crate::timefmt::format_rfc3339(portcullis_harness::Timestamp(at))
                ),
            );
        }
    }

    /// The checkpoints at the current position.
    fn check_seals(&mut self, what: Place<'_>) {
        let id = what.record_id();
        while let Some(seal) = self.seals.get(self.next_seal) {
            if seal.count != self.position {
                break;
            }
            self.next_seal += 1;
            let (seal_id, seal_at, why, head, writer) =
                (seal.id, seal.at, seal.why.clone(), seal.head, seal.writer_id);
            let signature = seal.signature.clone();
            if head != self.head {
                self.broke(
                    BreakKind::SealMismatch,
                    id,
                    Some(self.position),
                    format!(
                        "checkpoint {seal_id} ({why}, writer {writer}, at {}) sealed the chain up to {what}, and the records up to it no longer hash to what it signed",
                        crate::timefmt::format_rfc3339(portcullis_harness::Timestamp(seal_at))
                    ),
                );
                continue;
            }
            match signature {
                Signature::Valid => {
                    self.checkpoints_valid += 1;
                    if self.break_count == 0 {
                        self.sealed_to = self.position;
                    }
                }
                Signature::Unsigned => {}
                Signature::Invalid(why_not) => self.broke(
                    BreakKind::SealSignature,
                    id,
                    Some(self.position),
                    format!("checkpoint {seal_id} (sealing up to {what}): {why_not}"),
                ),
            }
        }
    }
}

fn read_seals(
    reader: &LedgerReader,
    key: Option<&LedgerPublicKey>,
    ledger_id: &str,
) -> rusqlite::Result<Vec<StoredSeal>> {
    let mut stmt = reader.conn.prepare(
        "SELECT id, count, head, at, writer_id, why, public_key, signature FROM chain_checkpoints
         ORDER BY count, id",
    )?;
    let rows = stmt.query_map([], |r| {
        let count: i64 = r.get(1)?;
        let head = chain::to_link(&r.get::<_, Vec<u8>>(2)?);
        let at: i64 = r.get(3)?;
        let writer_id: i64 = r.get(4)?;
        let public_key: Option<Vec<u8>> = r.get(6)?;
        let signature: Option<Vec<u8>> = r.get(7)?;
        let signed = message(ledger_id, count as u64, &head, at, writer_id);
        let signature = Signature::of(key, public_key.as_deref(), signature.as_deref(), &signed);
        Ok(StoredSeal {
            id: r.get(0)?,
            count: count.max(0) as u64,
            head,
            at,
            writer_id,
            why: r.get::<_, String>(5)?,
            signature,
        })
    })?;
    rows.collect()
}

/// Whether another process (or this one, through another handle) holds the ledger's writer lock.
/// Why a row's call marks (`changes`, `contained`: derived from its body, see `call_marks.rs`) disagree
/// with its body, if they do; the row was selected with `id, status, chain`, the chained columns (the
/// body last), then `changes, contained`. Records that are not calls have none.
fn marks_disagree(row: &rusqlite::Row<'_>, terminal: bool) -> rusqlite::Result<Option<String>> {
    let first = 3 + crate::chain::CHAINED_COLUMNS.split(", ").count();
    let stored: (Option<String>, i64) = (row.get(first)?, row.get(first + 1)?);
    let body = row.get_ref(first - 1)?.as_str().unwrap_or_default();
    let marks = if terminal { crate::call_marks::marks_of_body(body) } else { Default::default() };
    let derived = (marks.changes_column().map(str::to_owned), i64::from(marks.contained));
    Ok((stored != derived).then(|| {
        format!(
            "its changes and contained columns ({:?}, {}) do not agree with its body ({:?}, {}): the call would be hidden from or added to the calls a filter lists",
            stored.0, stored.1, derived.0, derived.1
        )
    }))
}

fn writer_running(path: &std::path::Path) -> bool {
    let Ok(file) = std::fs::File::open(path) else { return false };
    matches!(file.try_lock_shared(), Err(std::fs::TryLockError::WouldBlock))
}

impl LedgerReader {
    /// Verifies the chain and its checkpoints against `key` (see the module's doc).
    pub fn verify(&self, key: &LedgerPublicKey) -> Result<VerifyReport, LedgerStoreError> {
        self.verify_with(key, None)
    }

    /// [`LedgerReader::verify`], and against the witness the config folder `witnesses` keeps for this
    /// ledger (see `witness.rs`), when it keeps one: a chain that ends before the witnessed checkpoint,
    /// or has another link where it was, is broken even if every checkpoint left in the file holds.
    pub fn verify_with(
        &self,
        key: &LedgerPublicKey,
        witnesses: Option<&std::path::Path>,
    ) -> Result<VerifyReport, LedgerStoreError> {
        self.verify_walk(Some(key), witnesses)
    }

    /// Checks every link without signatures, for a ledger whose key is not at `key_file` (nor its
    /// public half beside it, see [`LedgerPublicKey::find`]); the report says where the key was looked
    /// for ([`VerifyReport::key_missing`]) and counts nothing as sealed.
    pub fn verify_without_key(
        &self,
        key_file: &std::path::Path,
        witnesses: Option<&std::path::Path>,
    ) -> Result<VerifyReport, LedgerStoreError> {
        let mut report = self.verify_walk(None, witnesses)?;
        report.key_missing = Some(format!(
            "no ledger key found (looked in {} and {})",
            key_file.display(),
            crate::key::public_path(key_file).display()
        ));
        Ok(report)
    }

    fn verify_walk(
        &self,
        key: Option<&LedgerPublicKey>,
        witnesses: Option<&std::path::Path>,
    ) -> Result<VerifyReport, LedgerStoreError> {
        let path = self.path().to_owned();
        let ledger_id = chain::ledger_id(&self.conn).at(&path)?;
        let loaded = match witnesses {
            Some(dir) => crate::witness::Witness::load(dir, &ledger_id)
                .map_err(|source| LedgerStoreError::Io { path: dir.to_owned(), source })?,
            None => None,
        };
        // A witness must carry its checkpoint's signature by this ledger's key: one made by hand (to
        // hide a cut tail, or to blame an intact ledger) is reported and not used.
        let forged = match (&loaded, key) {
            (Some(w), Some(key)) if w.signature.is_some() && !w.signed_by(key) => Some(w.count),
            _ => None,
        };
        // With a key, only a signed witness counts (an unsigned one, an older hub's, is rewritten signed
        // at the hub's next start or stop).
        let witness = loaded
            .filter(|w| forged.is_none() && (key.is_none() || w.signature.is_some()))
            .and_then(|w| w.link().map(|link| (w.count, link, w.at)));
        let seals = read_seals(self, key, &ledger_id).at(&path)?;
        let checkpoints = seals.len() as u64;
        let mut walk = Walk {
            key,
            head: chain::genesis(&ledger_id),
            ledger_id,
            position: 0,
            sealed_to: 0,
            seals,
            next_seal: 0,
            checkpoints_valid: 0,
            breaks: Vec::new(),
            break_count: 0,
            last_id: None,
            witness,
        };
        if let Some(count) = forged {
            walk.broke(
                BreakKind::SealSignature,
                None,
                None,
                format!(
                    "the hub's witness (its config folder) of a checkpoint of {count} records does not verify with the ledger's key: it was written or changed by hand, and is not used"
                ),
            );
        }
        let mut unchained = 0u64;
        // The journal's copy of the records it still holds: a record that differs from it was changed
        // after it was written (named here, not the next record a running writer links to it).
        let mut journal_copy = crate::tail_proof::JournalCopy::read(&path);
        journal_copy.anchor(&self.conn).at(&path)?;
        let mut stmt = self
            .conn
            .prepare(&format!(
                "SELECT id, status, chain, {CHAINED_COLUMNS}, changes, contained FROM records ORDER BY id"
            ))
            .at(&path)?;
        let mut rows = stmt.query([]).at(&path)?;
        let mut bytes = Vec::with_capacity(4096);
        while let Some(row) = rows.next().at(&path)? {
            let id: i64 = row.get(0).at(&path)?;
            let what = Place::Record(id);
            let stored = match row.get_ref(2).at(&path)? {
                rusqlite::types::ValueRef::Null => None,
                rusqlite::types::ValueRef::Blob(b) => Some(chain::to_link(b)),
                // A link of the wrong type: no record has it.
                _ => Some([0xff; 32]),
            };
            let Some(stored) = stored else {
                if walk.position == 0 {
                    unchained += 1;
                } else {
                    walk.broke(
                        BreakKind::Unlinked,
                        Some(id),
                        None,
                        format!("{what} has no link but comes after chained records: it was inserted, or its link removed"),
                    );
                }
                continue;
            };
            bytes.clear();
            if let Err(bad) = chain::canonical_from_sql(row, 3, &mut bytes).at(&path)? {
                walk.broke(
                    BreakKind::Malformed,
                    Some(id),
                    Some(walk.position + 1),
                    format!("{what}: its column {} holds a value no record has", bad.column),
                );
                bytes.clear();
            }
            let has_status = row.get_ref(1).at(&path)? != rusqlite::types::ValueRef::Null;
            let kind = row.get_ref(3 + 7).at(&path)?.as_str().unwrap_or_default();
            let terminal = crate::row::StoredKind::parse(kind).is_some_and(|k| k.is_terminal());
            if has_status != terminal {
                let status: Option<String> = row.get(1).at(&path)?;
                walk.broke(
                    BreakKind::Derived,
                    Some(id),
                    Some(walk.position + 1),
                    format!("{what}: its status column ({status:?}) does not agree with its kind ({kind}): the call would be hidden from or added to the calls listed"),
                );
            }
            if let Some(why) = marks_disagree(row, has_status).at(&path)? {
                walk.broke(BreakKind::Derived, Some(id), Some(walk.position + 1), format!("{what}: {why}"));
            }
            if let Some((journaled, link)) = journal_copy.at(walk.position + 1)
                && (*journaled != bytes || *link != stored)
            {
                walk.broke(
                    BreakKind::Changed,
                    Some(id),
                    Some(walk.position + 1),
                    format!(
                        "{what} differs from the journal's copy of it (what its writer wrote): it was changed after it was written"
                    ),
                );
            }
            walk.step(what, &bytes, &stored);
        }
        drop(rows);
        drop(stmt);
        let journaled = self.verify_journal(&mut walk)?;
        if let Some((count, _, at)) = walk.witness
            && walk.position < count
        {
            walk.truncated(
                "the hub's witness (its config folder) of the checkpoint",
                count,
                at,
                "were removed together with their checkpoints, or this is an older copy",
            );
        }
        // Checkpoints past the end of the chain: their records are gone.
        while let Some(seal) = walk.seals.get(walk.next_seal) {
            walk.next_seal += 1;
            let (seal_id, count, why, at) = (seal.id, seal.count, seal.why.clone(), seal.at);
            if seal.signature != Signature::Valid {
                continue;
            }
            walk.truncated(&format!("checkpoint {seal_id} ({why})"), count, at, "were removed");
        }
        let running = writer_running(&path);
        let side =
            crate::side_verify::verify_side(&self.conn, walk.key, &walk.ledger_id, running).at(&path)?;
        let unsealed = walk.position.saturating_sub(walk.sealed_to);
        // Without a key nothing is sealed, and that is no break: the report says no key was found.
        if unsealed > 0 && walk.break_count == 0 && !running && walk.key.is_some() {
            walk.broke(
                BreakKind::Unsealed,
                walk.last_id,
                Some(walk.sealed_to + 1),
                format!(
                    "the last {unsealed} chained records are covered by no checkpoint signed with the key, and no writer holds the ledger: they were added after it closed, or its writer stopped and the ledger was not opened since (opening it seals what a stopped writer left)"
                ),
            );
        }
        for (kind, position, message) in &side.breaks {
            walk.broke(*kind, None, *position, message.clone());
        }
        let verdict = match (walk.break_count, unsealed + side.unsealed()) {
            (0, 0) => Verdict::Intact,
            (0, _) => Verdict::IntactUnsealedTail,
            _ => Verdict::Broken,
        };
        Ok(VerifyReport {
            verdict,
            ledger_id: walk.ledger_id.clone(),
            key: walk.key.map(|k| k.to_string()).unwrap_or_default(),
            unchained,
            chained: walk.position,
            sealed: walk.sealed_to,
            checkpoints,
            checkpoints_valid: walk.checkpoints_valid,
            journaled,
            writer_running: running,
            break_count: walk.break_count,
            breaks: walk.breaks,
            side_chained: side.chained,
            side_sealed: side.sealed,
            side_legacy: side.legacy,
            key_missing: None,
            ledgers: Vec::new(),
        })
    }

    /// Walks on over the journal's records SQLite does not have yet (a writer stopped before indexing
    /// them, or is indexing them now). Returns how many there were.
    fn verify_journal(&self, walk: &mut Walk<'_>) -> Result<u64, LedgerStoreError> {
        let path = self.path();
        let (epoch, offset) = crate::indexer::journal_point(&self.conn).at(path)?;
        let journal_path = journal::path_of(path);
        let unindexed = match journal::unindexed(&journal_path, epoch, offset) {
            Ok(u) => u,
            Err(e) => {
                walk.broke(BreakKind::Journal, None, None, format!("{}: {e}", journal_path.display()));
                return Ok(0);
            }
        };
        if !unindexed.torn_by_a_crash() {
            walk.broke(
                BreakKind::Journal,
                None,
                None,
                format!(
                    "{}: the {} bytes after its last whole frame are not a frame a crash cut off: the journal was changed or replaced",
                    journal_path.display(),
                    unindexed.torn_bytes
                ),
            );
        }
        let mut n = 0;
        let mut bytes = Vec::new();
        for frame in &unindexed.frames {
            let mut reader = if unindexed.chained {
                wire::Reader::new(&frame.entries)
            } else {
                wire::Reader::unchained(&frame.entries)
            };
            while !reader.is_empty() {
                match reader.entry() {
                    Ok(Decoded::Record(row)) => {
                        n += 1;
                        bytes.clear();
                        chain::canonical_of_ref(&mut bytes, frame.writer_id, &row);
                        let what = Place::Journaled {
                            position: walk.position + 1,
                            call_id: row.call_id,
                            frame_end: frame.end,
                        };
                        // A journal from before the chain: its records are linked as they are indexed.
                        let stored = row.chain.copied().unwrap_or_else(|| chain::link(&walk.head, &bytes));
                        walk.step(what, &bytes, &stored);
                    }
                    Ok(Decoded::Other(crate::prepared::Entry::Seal(seal))) => {
                        let signed =
                            message(&walk.ledger_id, seal.count, &seal.head, seal.at, seal.writer_id);
                        let signature = Signature::of(
                            walk.key,
                            seal.public_key.as_ref().map(|k| &k[..]),
                            seal.signature.as_ref().map(|s| &s[..]),
                            &signed,
                        );
                        let at = walk.next_seal;
                        walk.seals.insert(
                            at,
                            StoredSeal {
                                id: 0,
                                count: seal.count,
                                head: seal.head,
                                at: seal.at,
                                writer_id: seal.writer_id,
                                why: seal.why.as_str().to_owned(),
                                signature,
                            },
                        );
                        walk.check_seals(Place::JournalSeal);
                    }
                    Ok(Decoded::Other(_)) => {}
                    Err(e) => {
                        walk.broke(
                            BreakKind::Journal,
                            None,
                            None,
                            format!("{}: frame ending at byte {}: {e}", journal_path.display(), frame.end),
                        );
                        break;
                    }
                }
            }
        }
        Ok(n)
    }
}
