//! What operators see of a supervised server beyond its status — since when it is in its state, how
//! often it was restarted, its last error, the tail of its stderr — kept apart from the supervisor so
//! that the connection logic and the bookkeeping around it each stay readable.

use super::UpstreamStatus;
use portcullis_harness::Timestamp;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};

/// How many of a server's last stderr lines are kept.
pub const STDERR_TAIL_LINES: usize = 50;
/// How many bytes of one stderr line are kept (longer lines are cut, with `…`).
pub const STDERR_LINE_BYTES: usize = 1024;

/// A server's state and its recent history, as operators see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpstreamReport {
    pub status: UpstreamStatus,
    /// When the server entered its current state (`connecting`, `ready`...; a tools refresh while
    /// ready does not move it).
    pub since: Timestamp,
    /// Its tools in the registry now: the last listed ones while it reconnects.
    pub tools: usize,
    /// Connection attempts the supervisor began after its first: every reconnect after the server went
    /// down or failed to connect, and every restart an operator asked for.
    pub restarts: u64,
    /// The last error that took the server down or kept it from connecting; kept once it is back.
    pub last_error: Option<UpstreamFailure>,
    /// Its last stderr lines, oldest first, across restarts (stdio servers only). Untrusted text as
    /// the server wrote it (invalid UTF-8 replaced): whoever shows it to a person escapes it.
    pub stderr_tail: Vec<String>,
}

/// An error that took a server down, and when.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpstreamFailure {
    pub message: String,
    pub at: Timestamp,
}

/// The last [`STDERR_TAIL_LINES`] lines a server wrote to stderr.
#[derive(Debug)]
pub(super) struct StderrTail {
    lines: VecDeque<String>,
    capacity: usize,
}

impl StderrTail {
    pub(super) fn new(capacity: usize) -> Self {
        StderrTail { lines: VecDeque::with_capacity(capacity), capacity }
    }

    /// Adds a line, dropping the oldest when full.
    pub(super) fn push(&mut self, line: String) {
        if self.capacity == 0 {
            return;
        }
        if self.lines.len() == self.capacity {
            self.lines.pop_front();
        }
        self.lines.push_back(line);
    }

    pub(super) fn lines(&self) -> Vec<String> {
        self.lines.iter().cloned().collect()
    }
}

pub(super) type SharedStderrTail = Arc<Mutex<StderrTail>>;

/// Reads a server's stderr to its end, line by line, into `tail` (and the debug log). A line is held to
/// [`STDERR_LINE_BYTES`] however long the server makes it, and bytes that are not UTF-8 do not stop the
/// reading, so the pipe is always drained and the server never blocks on a full stderr.
pub(super) async fn read_stderr(stderr: impl AsyncRead + Unpin, tail: SharedStderrTail, server: String) {
    let mut reader = BufReader::new(stderr);
    // A few bytes past the bound, so that a character cut in the middle is not what decides the cut.
    let keep = STDERR_LINE_BYTES + 4;
    let mut line: Vec<u8> = Vec::new();
    let mut longer = false;
    loop {
        let (used, ended) = match reader.fill_buf().await {
            Ok([]) | Err(_) => break,
            Ok(buf) => {
                let (text, used, ended) = match buf.iter().position(|b| *b == b'\n') {
                    Some(i) => (&buf[..i], i + 1, true),
                    None => (buf, buf.len(), false),
                };
                let room = keep.saturating_sub(line.len());
                longer |= text.len() > room;
                line.extend_from_slice(&text[..text.len().min(room)]);
                (used, ended)
            }
        };
        reader.consume(used);
        if ended {
            keep_line(&tail, &server, &line, longer);
            line.clear();
            longer = false;
        }
    }
    if !line.is_empty() {
        keep_line(&tail, &server, &line, longer);
    }
}

fn keep_line(tail: &SharedStderrTail, server: &str, bytes: &[u8], longer: bool) {
    let text = String::from_utf8_lossy(bytes);
    let text = text.strip_suffix('\r').unwrap_or(&text);
    let mut line = super::cut(text, STDERR_LINE_BYTES);
    if longer && !line.ends_with('…') {
        line.push('…');
    }
    tracing::debug!(server = %server, "stderr: {line}");
    tail.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(line);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tail_keeps_the_last_lines_only() {
        let mut tail = StderrTail::new(3);
        for i in 0..10 {
            tail.push(format!("line {i}"));
        }
        assert_eq!(tail.lines(), ["line 7", "line 8", "line 9"]);
        let mut full = StderrTail::new(STDERR_TAIL_LINES);
        for i in 0..(STDERR_TAIL_LINES * 3) {
            full.push(i.to_string());
        }
        let lines = full.lines();
        assert_eq!(lines.len(), STDERR_TAIL_LINES);
        assert_eq!(lines.last().unwrap(), &(STDERR_TAIL_LINES * 3 - 1).to_string());
    }

    #[tokio::test]
    async fn lines_are_bounded_kept_as_written_and_bad_bytes_do_not_stop_the_reading() {
        let mut input = Vec::new();
        input.extend_from_slice(b"first\r\n");
        input.extend(std::iter::repeat_n(b'x', 1_000_000));
        input.extend_from_slice(b"\n\x1b[31mred\xff\xfe\n");
        input.extend_from_slice("é".repeat(STDERR_LINE_BYTES).as_bytes());
        input.extend_from_slice(b"\nlast, without a newline");
        let tail: SharedStderrTail = Arc::new(Mutex::new(StderrTail::new(STDERR_TAIL_LINES)));
        read_stderr(input.as_slice(), tail.clone(), "t".into()).await;
        let lines = tail.lock().unwrap().lines();
        assert_eq!(lines.len(), 5, "{lines:?}");
        assert_eq!(lines[0], "first");
        assert!(lines[1].len() <= STDERR_LINE_BYTES + '…'.len_utf8(), "{}", lines[1].len());
        assert!(lines[1].starts_with("xxx") && lines[1].ends_with('…'));
        // Escapes stay as written (renderers escape them); bytes that are not UTF-8 are replaced.
        assert_eq!(lines[2], "\u{1b}[31mred\u{fffd}\u{fffd}");
        assert!(lines[3].len() <= STDERR_LINE_BYTES + '…'.len_utf8());
        assert!(lines[3].trim_end_matches('…').chars().all(|c| c == 'é'), "cut on a character boundary");
        assert_eq!(lines[4], "last, without a newline");
    }
}
