//! Refused requests in the ledger. The gateway's guard hands every refusal (no or a wrong bearer token,
//! the wrong credential for a route, a foreign Origin, an unknown Host) to a [`RefusalRecorder`], which
//! queues it without waiting; a background task writes it. Identical refusals within a minute are one
//! ledger row with a count, and a minute adds at most [`MAX_ROWS_PER_MINUTE`] rows (further distinct
//! refusals are counted in one row per code, without their details), so a flood of refusals neither
//! slows the refusals nor fills the disk. Nothing the guard hands over is a credential (it never reads
//! the Authorization header for this), and what it hands over is redacted with the hub's secrets.

use portcullis_harness::Redactor;
use portcullis_ledger::SqliteLedger;
use portcullis_ledger::refusals::{REFUSAL_WINDOW_US, RefusalRow};
use portcullis_mcp::http::{RefusalLog, RefusedRequest};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Refusals waiting for the recorder; beyond, they are counted as not recorded (and logged).
pub const REFUSAL_QUEUE: usize = 1024;
/// Distinct refusal rows one minute may add; further refusals of that minute are counted per code.
pub const MAX_ROWS_PER_MINUTE: usize = 20;
/// How often counts of repeated refusals are written (a new kind of refusal is written at once).
const FLUSH_EVERY: Duration = Duration::from_secs(1);

/// The refusal log the hub's guard writes to: queues, never waits.
pub struct RefusalRecorder {
    queue: mpsc::Sender<RefusedRequest>,
    /// Refusals the full queue turned away, not yet reported.
    dropped: Arc<AtomicU64>,
}

impl RefusalLog for RefusalRecorder {
    fn refused(&self, request: RefusedRequest) {
        if self.queue.try_send(request).is_err() {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }
}

impl RefusalRecorder {
    /// Starts the task writing refusals into `ledger` until `stop` (its counts are written then).
    pub fn start(ledger: Arc<SqliteLedger>, redactor: Redactor, stop: CancellationToken) -> Arc<Self> {
        let (queue, received) = mpsc::channel(REFUSAL_QUEUE);
        let dropped = Arc::new(AtomicU64::new(0));
        let writer = RefusalWriter { ledger, redactor, window: Window::default(), dropped: dropped.clone() };
        tokio::spawn(writer.run(received, stop));
        Arc::new(RefusalRecorder { queue, dropped })
    }
}

/// One minute's refusals: which rows it has made, and the counts not yet written.
#[derive(Default)]
struct Window {
    minute: i64,
    rows: HashSet<i64>,
    pending: HashMap<i64, RefusalRow>,
}

impl Window {
    /// Counts a refusal; true when it makes a new row (to be written at once).
    fn count(&mut self, mut row: RefusalRow) -> bool {
        let mut key = row.identity();
        let new = !self.rows.contains(&key);
        if new && self.rows.len() >= MAX_ROWS_PER_MINUTE {
            // Over the cap: counted in the code's row without details.
            row = RefusalRow {
                method: None,
                path: None,
                peer: None,
                origin: None,
                host: None,
                user_agent: None,
                ..row
            };
            key = row.identity();
        }
        let new = self.rows.insert(key);
        match self.pending.get_mut(&key) {
            Some(counted) => {
                counted.count += row.count;
                counted.last_at = counted.last_at.max(row.last_at);
            }
            None => {
                self.pending.insert(key, row);
            }
        }
        new
    }
}

struct RefusalWriter {
    ledger: Arc<SqliteLedger>,
    redactor: Redactor,
    window: Window,
    dropped: Arc<AtomicU64>,
}

impl RefusalWriter {
    async fn run(mut self, mut received: mpsc::Receiver<RefusedRequest>, stop: CancellationToken) {
        let mut tick = tokio::time::interval(FLUSH_EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                request = received.recv() => match request {
                    Some(request) => {
                        let row = self.row_of(request);
                        let minute = row.first_at.0.div_euclid(REFUSAL_WINDOW_US);
                        if minute != self.window.minute {
                            self.flush().await;
                            self.window = Window { minute, ..Window::default() };
                        }
                        if self.window.count(row) {
                            self.flush().await;
                        }
                    }
                    None => break,
                },
                _ = tick.tick() => self.flush().await,
                () = stop.cancelled() => break,
            }
        }
        self.flush().await;
    }

    /// The ledger row of one refusal, its fields redacted with the hub's secrets.
    fn row_of(&self, request: RefusedRequest) -> RefusalRow {
        let redact = |text: String| self.redactor.redact_str(&text).unwrap_or(text);
        RefusalRow {
            first_at: request.at,
            last_at: request.at,
            count: 1,
            status: request.status,
            code: request.code.to_owned(),
            method: Some(redact(request.method)),
            path: Some(redact(request.path)),
            peer: request.peer.map(|ip| ip.to_string()),
            origin: request.origin.map(redact),
            host: request.host.map(redact),
            user_agent: request.user_agent.map(redact),
        }
    }

    /// Writes the counts not yet written.
    async fn flush(&mut self) {
        let dropped = self.dropped.swap(0, Ordering::Relaxed);
        if dropped > 0 {
            tracing::warn!(refusals = dropped, "refused requests not recorded: the refusal queue was full");
        }
        for (_, row) in self.window.pending.drain() {
            if let Err(e) = self.ledger.record_refusals(row).await {
                tracing::warn!(error = %e, "refused requests not recorded");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use portcullis_harness::Timestamp;

    fn at_second(s: i64) -> Timestamp {
        Timestamp(s * 1_000_000)
    }

    fn refusal(path: &str, at: i64) -> RefusalRow {
        RefusalRow {
            first_at: at_second(at),
            last_at: at_second(at),
            count: 1,
            status: 401,
            code: "unauthorized".into(),
            method: Some("POST".into()),
            path: Some(path.into()),
            peer: Some("127.0.0.1".into()),
            origin: None,
            host: Some("127.0.0.1:7391".into()),
            user_agent: Some("curl/8".into()),
        }
    }

    #[test]
    fn identical_refusals_are_counted_in_one_row() {
        let mut window = Window::default();
        assert!(window.count(refusal("/mcp", 1)));
        assert!(!window.count(refusal("/mcp", 2)));
        assert!(!window.count(refusal("/mcp", 3)));
        assert_eq!(window.pending.len(), 1);
        let row = window.pending.values().next().unwrap();
        assert_eq!((row.count, row.first_at, row.last_at), (3, at_second(1), at_second(3)));
    }

    #[test]
    fn a_minute_makes_at_most_so_many_rows() {
        let mut window = Window::default();
        for i in 0..(MAX_ROWS_PER_MINUTE + 50) {
            window.count(refusal(&format!("/probe/{i}"), 1));
        }
        assert_eq!(window.rows.len(), MAX_ROWS_PER_MINUTE + 1);
        let total: u64 = window.pending.values().map(|r| r.count).sum();
        assert_eq!(total, MAX_ROWS_PER_MINUTE as u64 + 50);
        let overflow = window.pending.values().find(|r| r.path.is_none()).unwrap();
        assert_eq!(overflow.count, 50);
    }
}
