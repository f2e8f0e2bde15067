//! The socket on a stage's standard input: the walls and the request come down it, reports go up it.

use crate::protocol::{LaunchReport, LaunchRequest, Walls};
use std::io::{BufRead, BufReader, Read, Write};
use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;

/// The largest request read (a profile lists at most a few thousand paths).
const MAX_REQUEST: u64 = 16 << 20;

/// A second handle on the socket at standard input.
pub(crate) fn from_stdin() -> std::io::Result<UnixStream> {
    let fd = std::io::stdin().as_fd().try_clone_to_owned()?;
    Ok(UnixStream::from(fd))
}

/// What comes first down the socket.
pub(crate) enum First {
    /// The walls to build before the request (a launcher started ahead for a profile).
    Walls(Box<Walls>),
    /// The request itself, walls and all.
    Request(Box<LaunchRequest>),
}

/// The hub's side of the socket as the second stage reads it.
pub(crate) struct Incoming {
    reader: BufReader<UnixStream>,
}

impl Incoming {
    pub(crate) fn new(stream: UnixStream) -> Self {
        Incoming { reader: BufReader::new(stream) }
    }

    /// The walls (a line) or the request (everything until the other side stops writing: a request
    /// is compact JSON, which holds no newline).
    pub(crate) fn first(&mut self) -> Result<First, String> {
        let mut raw = Vec::new();
        (&mut self.reader)
            .take(MAX_REQUEST)
            .read_until(b'\n', &mut raw)
            .map_err(|e| format!("reading the request: {e}"))?;
        if raw.ends_with(b"\n") {
            let walls = serde_json::from_slice(&raw).map_err(|e| format!("the walls are not valid: {e}"))?;
            return Ok(First::Walls(Box::new(walls)));
        }
        let request = serde_json::from_slice(&raw).map_err(|e| format!("the request is not valid: {e}"))?;
        Ok(First::Request(Box::new(request)))
    }

    /// The request after the walls: everything until the other side stops writing.
    pub(crate) fn request(&mut self) -> Result<LaunchRequest, String> {
        let mut raw = Vec::new();
        (&mut self.reader)
            .take(MAX_REQUEST)
            .read_to_end(&mut raw)
            .map_err(|e| format!("reading the request: {e}"))?;
        serde_json::from_slice(&raw).map_err(|e| format!("the request is not valid: {e}"))
    }
}

/// Sends one report line; a hub that went away is not an error here.
pub(crate) fn send(stream: &mut UnixStream, report: &LaunchReport) {
    if let Ok(mut line) = serde_json::to_vec(report) {
        line.push(b'\n');
        let _ = stream.write_all(&line);
    }
}
