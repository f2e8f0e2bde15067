//! The journal: an append-only file beside the ledger (`<ledger>.journal`) that makes records durable
//! before SQLite has them. The appender writes each group of entries as one checksummed frame with one
//! `write(2)` (survives a crash of the process, as `synchronous=NORMAL` does; `fdatasync` too with
//! `synchronous_full`); the indexer moves frames into SQLite and records, in the same transaction, the
//! journal epoch and offset it reached (`journal_state`). Opening a ledger for writing replays what the
//! journal holds beyond that point, then starts a new epoch with an empty journal. A ledger's first
//! epoch is 40 bits of its random id (`indexer::first_epoch`), so no two ledgers' journals share one.
//!
//! File: a 16-byte header (`PCULJNL2`, epoch as u64 LE; `PCULJNL1` before records carried their link
//! in the chain), then frames: payload length (u32 LE), CRC-32
//! of the payload (u32 LE), payload (the writer id as i64 LE, then entries encoded by `wire.rs`).

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// The mark of a journal whose records end with their link in the chain (`chain.rs`).
const MAGIC: &[u8; 8] = b"PCULJNL2";
/// The mark of a journal written before the chain: replayed, its records chained as they are indexed.
const MAGIC_UNCHAINED: &[u8; 8] = b"PCULJNL1";
/// Bytes before the first frame.
pub(crate) const HEADER: u64 = 16;
/// Bytes before a frame's payload (length, checksum).
pub(crate) const FRAME_HEAD: usize = 8;
/// The largest payload a frame may have.
pub(crate) const MAX_FRAME: usize = 1 << 30;

/// The journal of the ledger at `ledger`.
pub(crate) fn path_of(ledger: &Path) -> PathBuf {
    let mut name = ledger.as_os_str().to_owned();
    name.push(".journal");
    PathBuf::from(name)
}

/// Why a journal cannot be replayed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum JournalError {
    #[error("{0}")]
    Io(#[from] io::Error),
    #[error("not a Portcullis journal (its first bytes are not the journal's mark)")]
    Foreign,
    #[error(
        "the journal (epoch {file}) is older than what the ledger indexed (epoch {indexed}): it is not this ledger's"
    )]
    Older { file: u64, indexed: u64 },
    #[error(
        "the journal ends at byte {len}, before byte {offset} the ledger indexed up to: it was cut or replaced"
    )]
    Shorter { len: u64, offset: u64 },
}

/// The open journal the appender writes.
pub(crate) struct Journal {
    file: File,
    epoch: u64,
    end: u64,
    sync: bool,
}

fn open_file(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    OpenOptions::new().read(true).write(true).create(true).truncate(false).mode(0o600).open(path)
}

impl Journal {
    /// Opens (creating 0600) and empties the journal, starting `epoch`. Only after its frames were
    /// replayed: what it held is in SQLite.
    pub(crate) fn start(path: &Path, epoch: u64, sync: bool) -> io::Result<Journal> {
        let file = open_file(path)?;
        // Owner-only like the ledger, also when an older file was wider.
        {
            use std::os::unix::fs::PermissionsExt;
            if file.metadata()?.permissions().mode() & 0o077 != 0 {
                file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
            }
        }
        let mut journal = Journal { file, epoch, end: HEADER, sync };
        journal.write_header()?;
        Ok(journal)
    }

    fn write_header(&mut self) -> io::Result<()> {
        self.file.set_len(0)?;
        let mut header = [0u8; HEADER as usize];
        header[..8].copy_from_slice(MAGIC);
        header[8..].copy_from_slice(&self.epoch.to_le_bytes());
        self.file.write_all_at(&header, 0)?;
        self.end = HEADER;
        if self.sync {
            self.file.sync_data()?;
        }
        Ok(())
    }

    /// A handle the indexer reads frames back with.
    pub(crate) fn reader(&self) -> io::Result<File> {
        self.file.try_clone()
    }

    pub(crate) fn epoch(&self) -> u64 {
        self.epoch
    }

    /// Bytes written (header included): the offset of the next frame.
    pub(crate) fn end(&self) -> u64 {
        self.end
    }

    /// Writes one frame. `frame` was built with [`begin_frame`] and entries after it; its head is
    /// filled in here. Returns the offset after it. On error, whatever part of it reached the file is
    /// cut off again, so the journal never holds a frame that was not acknowledged.
    pub(crate) fn append(&mut self, frame: &mut [u8]) -> io::Result<u64> {
        let payload = frame.len().saturating_sub(FRAME_HEAD);
        if payload > MAX_FRAME {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "journal frame over 1 GiB"));
        }
        let crc = crc32fast::hash(&frame[FRAME_HEAD..]);
        frame[..4].copy_from_slice(&(payload as u32).to_le_bytes());
        frame[4..8].copy_from_slice(&crc.to_le_bytes());
        let written = self
            .file
            .write_all_at(frame, self.end)
            .and_then(|()| if self.sync { self.file.sync_data() } else { Ok(()) });
        if let Err(e) = written {
            let _ = self.file.set_len(self.end);
            return Err(e);
        }
        self.end += frame.len() as u64;
        Ok(self.end)
    }

    /// Empties the journal and starts the next epoch (everything in it is in SQLite).
    pub(crate) fn restart(&mut self) -> io::Result<()> {
        self.epoch += 1;
        self.write_header()
    }
}

/// Starts a frame for `writer_id` in `buf` (cleared); entries are encoded after it.
pub(crate) fn begin_frame(buf: &mut Vec<u8>, writer_id: i64) {
    buf.clear();
    buf.extend_from_slice(&[0u8; FRAME_HEAD]);
    buf.extend_from_slice(&writer_id.to_le_bytes());
}

/// One frame read back: who wrote it, its entries' bytes, and the offset after it.
pub(crate) struct Frame {
    pub writer_id: i64,
    pub entries: Vec<u8>,
    pub end: u64,
}

/// What a journal holds beyond the point the ledger indexed.
pub(crate) struct Unindexed {
    pub epoch: u64,
    pub frames: Vec<Frame>,
    /// Whether its records carry their links (a journal from before the chain does not).
    pub chained: bool,
    /// Bytes after the last whole frame (a frame cut by a crash while it was written: never
    /// acknowledged, dropped).
    pub torn_bytes: u64,
    /// The frame length the torn bytes start with, when they hold one.
    pub torn_declares: Option<u64>,
}

impl Unindexed {
    /// Whether the bytes after the last whole frame are what a crash leaves: nothing, part of a frame's
    /// head, or a frame whose declared length runs past the end of the file (its write was cut). Anything
    /// else — a frame that fits and fails its checksum — was changed or put there.
    pub(crate) fn torn_by_a_crash(&self) -> bool {
        match self.torn_declares {
            None => true,
            Some(len) => FRAME_HEAD as u64 + len > self.torn_bytes,
        }
    }
}

/// Reads the frames of the journal at `path` that the ledger has not indexed, given the epoch and
/// offset it records. A missing or header-less journal holds nothing.
pub(crate) fn unindexed(
    path: &Path,
    indexed_epoch: u64,
    indexed_offset: u64,
) -> Result<Unindexed, JournalError> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(e.into()),
    };
    let len = bytes.len() as u64;
    if len < HEADER {
        // Never written past a torn header: nothing was acknowledged from it.
        return Ok(Unindexed {
            epoch: indexed_epoch,
            frames: Vec::new(),
            chained: true,
            torn_bytes: 0,
            torn_declares: None,
        });
    }
    let chained = match &bytes[..8] {
        m if m == MAGIC => true,
        m if m == MAGIC_UNCHAINED => false,
        _ => return Err(JournalError::Foreign),
    };
    let mut epoch_bytes = [0u8; 8];
    epoch_bytes.copy_from_slice(&bytes[8..16]);
    let epoch = u64::from_le_bytes(epoch_bytes);
    let start = match epoch.cmp(&indexed_epoch) {
        std::cmp::Ordering::Less => return Err(JournalError::Older { file: epoch, indexed: indexed_epoch }),
        std::cmp::Ordering::Equal => indexed_offset.max(HEADER),
        std::cmp::Ordering::Greater => HEADER,
    };
    if start > len {
        return Err(JournalError::Shorter { len, offset: start });
    }
    let mut frames = Vec::new();
    let mut at = start as usize;
    while let Some((writer_id, entries, next)) = frame_at(&bytes, at) {
        at = next;
        frames.push(Frame { writer_id, entries: entries.to_vec(), end: at as u64 });
    }
    let torn_declares =
        bytes.get(at..at + 4).map(|h| u64::from(u32::from_le_bytes([h[0], h[1], h[2], h[3]])));
    let torn_bytes = len - at as u64;
    let torn_declares = if torn_bytes >= FRAME_HEAD as u64 { torn_declares } else { None };
    Ok(Unindexed { epoch, frames, chained, torn_bytes, torn_declares })
}

/// The whole, intact frame at `at`, if there is one: its writer id, its entries' bytes and the offset
/// after it. Replay and the indexer both read frames with it.
pub(crate) fn frame_at(bytes: &[u8], at: usize) -> Option<(i64, &[u8], usize)> {
    let head = bytes.get(at..at.checked_add(FRAME_HEAD)?)?;
    let len = u32::from_le_bytes([head[0], head[1], head[2], head[3]]) as usize;
    let crc = u32::from_le_bytes([head[4], head[5], head[6], head[7]]);
    let start = at + FRAME_HEAD;
    let payload = bytes.get(start..start.checked_add(len)?)?;
    if payload.len() < 8 || crc32fast::hash(payload) != crc {
        return None;
    }
    let (id, entries) = payload.split_at(8);
    let mut writer = [0u8; 8];
    writer.copy_from_slice(id);
    Some((i64::from_le_bytes(writer), entries, start + len))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(writer: i64, body: &[u8]) -> Vec<u8> {
        let mut buf = Vec::new();
        begin_frame(&mut buf, writer);
        buf.extend_from_slice(body);
        buf
    }

    #[test]
    fn frames_read_back_from_the_indexed_point() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("l.db.journal");
        let mut j = Journal::start(&path, 3, false).unwrap();
        let a = j.append(&mut frame(7, b"first")).unwrap();
        let b = j.append(&mut frame(7, b"second")).unwrap();
        let all = unindexed(&path, 2, 999).unwrap();
        assert_eq!(all.epoch, 3);
        assert_eq!(
            all.frames.iter().map(|f| f.entries.as_slice()).collect::<Vec<_>>(),
            [b"first" as &[u8], b"second"]
        );
        assert_eq!((all.frames[0].end, all.frames[1].end, all.frames[0].writer_id), (a, b, 7));
        let rest = unindexed(&path, 3, a).unwrap();
        assert_eq!(rest.frames.len(), 1);
        assert_eq!(rest.frames[0].entries, b"second");
        assert!(unindexed(&path, 3, b).unwrap().frames.is_empty());
        assert!(matches!(unindexed(&path, 4, 0), Err(JournalError::Older { file: 3, indexed: 4 })));
        assert!(matches!(unindexed(&path, 3, b + 1), Err(JournalError::Shorter { .. })));
        j.restart().unwrap();
        let after = unindexed(&path, 3, b).unwrap();
        assert_eq!((after.epoch, after.frames.len()), (4, 0));
    }

    /// A frame cut anywhere (a crash while it was written), or with a flipped bit, ends the replay
    /// before it; the frames before it are whole.
    #[test]
    fn a_torn_or_damaged_last_frame_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("l.db.journal");
        let mut j = Journal::start(&path, 1, false).unwrap();
        let first = j.append(&mut frame(1, b"kept")).unwrap();
        let end = j.append(&mut frame(1, b"torn-or-damaged")).unwrap();
        let whole = std::fs::read(&path).unwrap();
        for cut in first..end {
            std::fs::write(&path, &whole[..cut as usize]).unwrap();
            let u = unindexed(&path, 0, 0).unwrap();
            assert_eq!(u.frames.len(), 1, "cut at {cut}");
            assert_eq!(u.torn_bytes, cut - first);
            assert!(u.torn_by_a_crash(), "cut at {cut}");
        }
        let mut flipped = whole.clone();
        flipped[end as usize - 2] ^= 1;
        std::fs::write(&path, &flipped).unwrap();
        let u = unindexed(&path, 0, 0).unwrap();
        assert_eq!(u.frames.len(), 1);
        // A whole frame that fails its checksum is no crash's doing.
        assert!(!u.torn_by_a_crash());
    }

    #[test]
    fn missing_short_and_foreign_journals() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("l.db.journal");
        assert!(unindexed(&path, 5, 100).unwrap().frames.is_empty());
        std::fs::write(&path, b"PCUL").unwrap();
        assert!(unindexed(&path, 5, 100).unwrap().frames.is_empty());
        std::fs::write(&path, b"SQLite format 3\0 and more").unwrap();
        assert!(matches!(unindexed(&path, 0, 0), Err(JournalError::Foreign)));
    }
}
