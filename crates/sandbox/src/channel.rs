//! The socket on a stage's standard input: the request comes down it, reports go up it.

use crate::protocol::{LaunchReport, LaunchRequest};
use std::io::{Read, Write};
use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;

/// The largest request read (a profile lists at most a few thousand paths).
const MAX_REQUEST: u64 = 16 << 20;

/// A second handle on the socket at standard input.
pub(crate) fn from_stdin() -> std::io::Result<UnixStream> {
    let fd = std::io::stdin().as_fd().try_clone_to_owned()?;
    Ok(UnixStream::from(fd))
}

/// Reads the request (everything until the other side stops writing).
pub(crate) fn read_request(stream: &mut UnixStream) -> Result<(Vec<u8>, LaunchRequest), String> {
    let mut raw = Vec::new();
    stream.take(MAX_REQUEST).read_to_end(&mut raw).map_err(|e| format!("reading the request: {e}"))?;
    let request = serde_json::from_slice(&raw).map_err(|e| format!("the request is not valid: {e}"))?;
    Ok((raw, request))
}

/// Sends one report line; a hub that went away is not an error here.
pub(crate) fn send(stream: &mut UnixStream, report: &LaunchReport) {
    if let Ok(mut line) = serde_json::to_vec(report) {
        line.push(b'\n');
        let _ = stream.write_all(&line);
    }
}
