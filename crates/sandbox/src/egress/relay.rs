//! The inside end of a command's way out, run by the launcher's second stage in the command's network
//! namespace (whose only interface is loopback): a TCP listener on the proxy port, whose connections are
//! relayed one by one to the hub's gate (a Unix socket outside), and a stub resolver on port 53 that
//! answers every question REFUSED and reports the name (a lookup is how a command smuggles data out by
//! DNS: it is recorded, never sent). The gate's folder is reached through a descriptor opened before the
//! walls hid it, so the path exists for the relay alone. One thread, one event loop: the relay takes one
//! task ID from the namespace's process budget whatever the command opens.

use super::{PROXY_PORT, TAG_DNS, TAG_STREAM};
use crate::failure::Failure;
use nix::fcntl::{OFlag, open};
use nix::sys::socket::{
    AddressFamily, MsgFlags, NetlinkAddr, SockFlag, SockProtocol, SockType, recv, sendto, socket,
};
use nix::sys::stat::Mode;
use std::collections::HashSet;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::Path;
use tokio::io::AsyncWriteExt;

/// DNS names reported once each; past this many, no more are reported (the first ones tell the story).
const NAMES_REPORTED: usize = 256;

/// What the relay needs, made while the second stage is still root of the namespace (loopback brought
/// up, the ports bound) and before the walls hide the gate's folder.
#[derive(Debug)]
pub(crate) struct Plumbing {
    listener: std::net::TcpListener,
    dns: std::net::UdpSocket,
    /// The gate's folder, open: `/proc/self/fd/<n>/<name>` reaches the gate after the walls are up.
    _dir: OwnedFd,
    gate: String,
}

/// Brings up loopback, binds the proxy port and the stub resolver, opens the gate's folder.
pub(crate) fn prepare(gate: &Path) -> Result<Plumbing, Failure> {
    let step = "the egress relay";
    loopback_up().map_err(|e| (step, format!("bringing up loopback: {e}")))?;
    let listener = std::net::TcpListener::bind(("127.0.0.1", PROXY_PORT))
        .map_err(|e| (step, format!("the proxy port {PROXY_PORT}: {e}")))?;
    let dns = std::net::UdpSocket::bind(("127.0.0.1", 53)).map_err(|e| (step, format!("port 53: {e}")))?;
    let (Some(folder), Some(name)) = (gate.parent(), gate.file_name().and_then(|n| n.to_str())) else {
        return Err((step, format!("{} is not a socket's path", gate.display())));
    };
    let dir = open(folder, OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC, Mode::empty())
        .map_err(|e| (step, format!("{}: {e}", folder.display())))?;
    let gate = format!("/proc/self/fd/{}/{name}", dir.as_raw_fd());
    Ok(Plumbing { listener, dns, _dir: dir, gate })
}

/// Starts the relay's thread. Call it after the walls are up (the thread keeps them: Landlock's domain
/// is inherited) and before the command's seccomp filter (the relay makes Unix sockets, which the
/// command may not).
pub(crate) fn start(plumbing: Plumbing) -> Result<(), String> {
    plumbing.listener.set_nonblocking(true).map_err(|e| format!("egress relay: {e}"))?;
    plumbing.dns.set_nonblocking(true).map_err(|e| format!("egress relay: {e}"))?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()
        .map_err(|e| format!("egress relay: {e}"))?;
    std::thread::Builder::new()
        .name("egress-relay".into())
        .spawn(move || runtime.block_on(serve(plumbing)))
        .map(drop)
        .map_err(|e| format!("egress relay: {e}"))
}

async fn serve(plumbing: Plumbing) {
    let Plumbing { listener, dns, _dir, gate } = plumbing;
    let (Ok(listener), Ok(dns)) =
        (tokio::net::TcpListener::from_std(listener), tokio::net::UdpSocket::from_std(dns))
    else {
        return;
    };
    let gate2 = gate.clone();
    tokio::spawn(async move { answer_dns(dns, &gate2).await });
    while let Ok((mut tcp, _)) = listener.accept().await {
        let gate = gate.clone();
        tokio::spawn(async move {
            // No gate, no way out: the command's connection is closed.
            let Ok(mut out) = tokio::net::UnixStream::connect(&gate).await else { return };
            if out.write_all(&[TAG_STREAM]).await.is_ok() {
                let _ = tokio::io::copy_bidirectional(&mut tcp, &mut out).await;
            }
        });
    }
}

/// Answers every question REFUSED at once (so lookups fail fast, with no retries to wait for) and
/// reports each name asked to the gate.
async fn answer_dns(socket: tokio::net::UdpSocket, gate: &str) {
    let mut reported = HashSet::new();
    let mut buf = vec![0u8; 1500];
    while let Ok((n, from)) = socket.recv_from(&mut buf).await {
        let Some((answer, name)) = refusal(&buf[..n]) else { continue };
        let _ = socket.send_to(&answer, from).await;
        if reported.len() < NAMES_REPORTED
            && reported.insert(name.clone())
            && let Ok(mut out) = tokio::net::UnixStream::connect(gate).await
        {
            let _ = out.write_all(format!("{}{name}\n", TAG_DNS as char).as_bytes()).await;
        }
    }
}

/// The REFUSED answer to a DNS query, and the name it asked (its bytes outside letters, digits, `-`,
/// `_` and `.` escaped as `\xNN`); `None` for what is not a query.
pub(crate) fn refusal(query: &[u8]) -> Option<(Vec<u8>, String)> {
    if query.len() < 12 || query[2] & 0x80 != 0 {
        return None;
    }
    let mut at = 12;
    let mut name = String::new();
    loop {
        let len = usize::from(*query.get(at)?);
        at += 1;
        if len == 0 {
            break;
        }
        if len > 63 || name.len() > 1024 {
            return None;
        }
        let label = query.get(at..at + len)?;
        if !name.is_empty() {
            name.push('.');
        }
        for &b in label {
            if b.is_ascii_alphanumeric() || b == b'-' || b == b'_' {
                name.push(char::from(b.to_ascii_lowercase()));
            } else {
                name.push_str(&format!("\\x{b:02x}"));
            }
        }
        at += len;
    }
    let question_end = at.checked_add(4).filter(|end| *end <= query.len())?;
    let mut answer = Vec::with_capacity(question_end);
    answer.extend_from_slice(&query[..2]);
    // QR, the query's opcode and RD kept; RCODE 5 (REFUSED).
    answer.push(0x80 | (query[2] & 0x79));
    answer.push(0x05);
    answer.extend_from_slice(&[0, 1, 0, 0, 0, 0, 0, 0]);
    answer.extend_from_slice(&query[12..question_end]);
    Some((answer, name))
}

/// Sets loopback up (`RTM_NEWLINK` with `IFF_UP` over rtnetlink): a new network namespace has it down.
fn loopback_up() -> Result<(), String> {
    let index = nix::net::if_::if_nametoindex("lo").map_err(|e| format!("no loopback interface: {e}"))?;
    let index = i32::try_from(index).map_err(|e| e.to_string())?;
    let fd =
        socket(AddressFamily::Netlink, SockType::Raw, SockFlag::SOCK_CLOEXEC, SockProtocol::NetlinkRoute)
            .map_err(|e| format!("netlink: {e}"))?;
    const RTM_NEWLINK: u16 = 16;
    const NLM_F_REQUEST_ACK: u16 = 0x1 | 0x4;
    const IFF_UP: u32 = 0x1;
    let mut message = Vec::with_capacity(32);
    message.extend_from_slice(&32u32.to_ne_bytes());
    message.extend_from_slice(&RTM_NEWLINK.to_ne_bytes());
    message.extend_from_slice(&NLM_F_REQUEST_ACK.to_ne_bytes());
    message.extend_from_slice(&1u32.to_ne_bytes());
    message.extend_from_slice(&0u32.to_ne_bytes());
    // ifinfomsg: family, padding, type, index, flags, change.
    message.extend_from_slice(&[0, 0, 0, 0]);
    message.extend_from_slice(&index.to_ne_bytes());
    message.extend_from_slice(&IFF_UP.to_ne_bytes());
    message.extend_from_slice(&IFF_UP.to_ne_bytes());
    sendto(fd.as_raw_fd(), &message, &NetlinkAddr::new(0, 0), MsgFlags::empty())
        .map_err(|e| format!("netlink: {e}"))?;
    let mut reply = [0u8; 1024];
    let n = recv(fd.as_raw_fd(), &mut reply, MsgFlags::empty()).map_err(|e| format!("netlink: {e}"))?;
    // NLMSG_ERROR (2) with error 0 is the acknowledgement.
    let kind = reply.get(4..6).map(|b| u16::from_ne_bytes([b[0], b[1]]));
    let error = reply.get(16..20).map(|b| i32::from_ne_bytes([b[0], b[1], b[2], b[3]]));
    match (n >= 20, kind, error) {
        (true, Some(2), Some(0)) => Ok(()),
        (true, Some(2), Some(e)) => Err(format!("the kernel refused: {}", nix::errno::Errno::from_raw(-e))),
        _ => Err("no acknowledgement from the kernel".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query(name: &str) -> Vec<u8> {
        let mut q = vec![0xab, 0xcd, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0];
        for label in name.split('.') {
            q.push(label.len() as u8);
            q.extend_from_slice(label.as_bytes());
        }
        q.extend_from_slice(&[0, 0, 1, 0, 1]);
        q
    }

    #[test]
    fn a_question_is_answered_refused_with_its_id_and_question_and_its_name_read() {
        let q = query("c2VjcmV0.Paste.example");
        let (answer, name) = refusal(&q).unwrap();
        assert_eq!(name, "c2vjcmv0.paste.example");
        assert_eq!(&answer[..2], &[0xab, 0xcd]);
        assert_eq!(answer[2] & 0x80, 0x80, "a response");
        assert_eq!(answer[2] & 0x01, 0x01, "recursion desired kept");
        assert_eq!(answer[3] & 0x0f, 5, "REFUSED");
        assert_eq!(&answer[12..], &q[12..]);
    }

    #[test]
    fn odd_bytes_are_escaped_and_what_is_not_a_query_is_ignored() {
        let mut q = query("a.b");
        q[13] = b'\n';
        assert_eq!(refusal(&q).unwrap().1, "\\x0a.b");
        assert!(refusal(&q[..10]).is_none());
        let mut response = query("a.b");
        response[2] |= 0x80;
        assert!(refusal(&response).is_none());
        let mut truncated = query("a.b");
        truncated.truncate(truncated.len() - 2);
        assert!(refusal(&truncated).is_none());
    }
}
