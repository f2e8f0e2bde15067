//! Bounded capture of a stream: the first half of the budget is kept as the head, the last half as a
//! rolling tail, and the bytes dropped in between are counted.

use std::collections::VecDeque;

#[derive(Debug, Clone)]
pub struct BoundedOutput {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    head_cap: usize,
    tail_cap: usize,
    dropped: u64,
    total: u64,
}

impl BoundedOutput {
    /// Keeps at most `limit` bytes in all.
    pub fn new(limit: usize) -> Self {
        let head_cap = limit / 2;
        BoundedOutput {
            head: Vec::new(),
            tail: VecDeque::new(),
            head_cap,
            tail_cap: limit - head_cap,
            dropped: 0,
            total: 0,
        }
    }

    pub fn push(&mut self, mut bytes: &[u8]) {
        self.total += bytes.len() as u64;
        let room = self.head_cap.saturating_sub(self.head.len());
        let take = room.min(bytes.len());
        self.head.extend_from_slice(&bytes[..take]);
        bytes = &bytes[take..];
        if bytes.is_empty() {
            return;
        }
        if bytes.len() >= self.tail_cap {
            self.dropped += (self.tail.len() + bytes.len() - self.tail_cap) as u64;
            self.tail.clear();
            self.tail.extend(&bytes[bytes.len() - self.tail_cap..]);
            return;
        }
        let overflow = (self.tail.len() + bytes.len()).saturating_sub(self.tail_cap);
        self.tail.drain(..overflow);
        self.dropped += overflow as u64;
        self.tail.extend(bytes);
    }

    /// Bytes dropped from the middle.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// Bytes seen in all.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// The kept text (lossy UTF-8), with a marker saying how many bytes were dropped, if any.
    pub fn render(&self) -> String {
        let mut text = String::from_utf8_lossy(&self.head).into_owned();
        if self.dropped > 0 {
            text.push_str(&format!("\n[... {} bytes omitted ...]\n", self.dropped));
        }
        let (a, b) = self.tail.as_slices();
        let mut tail = Vec::with_capacity(a.len() + b.len());
        tail.extend_from_slice(a);
        tail.extend_from_slice(b);
        text.push_str(&String::from_utf8_lossy(&tail));
        text
    }
}

#[cfg(test)]
mod tests {
    use super::BoundedOutput;

    #[test]
    fn keeps_head_and_tail_and_counts_the_rest() {
        let mut out = BoundedOutput::new(10);
        for chunk in [b"abc".as_slice(), b"defgh", b"ijklmnop", b"qrstuvwxyz"] {
            out.push(chunk);
        }
        assert_eq!(out.total(), 26);
        assert_eq!(out.dropped(), 16);
        assert_eq!(out.render(), "abcde\n[... 16 bytes omitted ...]\nvwxyz");
    }

    #[test]
    fn small_output_is_kept_whole() {
        let mut out = BoundedOutput::new(10);
        out.push(b"hello");
        out.push(b"12");
        assert_eq!(out.dropped(), 0);
        assert_eq!(out.render(), "hello12");
    }
}
