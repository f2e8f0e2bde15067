//! Behaviour of the shell analyzer on redirections: writes, appends, reads, tee, /dev/tcp, dynamic
//! targets; here-strings and heredocs are not redirections.

// Test helpers run only inside tests; panicking on a missing command is the assertion.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::*;
use portcullis_policy::shell::OpaqueKind;

#[test]
fn write_redirection_to_authorized_keys() {
    let a = clean("echo key > ~/.ssh/authorized_keys");
    assert_eq!(a.redirections.len(), 1);
    let r = &a.redirections[0];
    assert_eq!(
        (r.op.as_str(), r.target.as_str(), r.write, r.dynamic),
        (">", "~/.ssh/authorized_keys", true, false)
    );
    assert_eq!(only(&a, "echo").argv, vec!["echo", "key"]);
}

#[test]
fn append_redirection() {
    let r = &clean("cat a >> b").redirections[0];
    assert_eq!((r.op.as_str(), r.target.as_str(), r.write), (">>", "b", true));
}

#[test]
fn ampersand_redirections() {
    let a = clean("cmd &> log; cmd &>> log2; cmd >| f; cmd 2>&1 >&f3");
    let ops: Vec<_> = a.redirections.iter().map(|r| (r.op.as_str(), r.target.as_str())).collect();
    assert_eq!(ops, vec![("&>", "log"), ("&>>", "log2"), (">|", "f"), (">&", "f3")]);
}

#[test]
fn input_redirection_is_a_read() {
    let r = &clean("wc -l < in.txt").redirections[0];
    assert_eq!((r.op.as_str(), r.target.as_str(), r.write), ("<", "in.txt", false));
}

#[test]
fn here_strings_and_heredocs_are_not_redirections() {
    assert!(clean("cat <<< hi").redirections.is_empty());
    assert!(clean("cat <<EOF\nx\nEOF").redirections.is_empty());
}

#[test]
fn tee_targets_are_writes() {
    let a = clean("echo x | tee -a ~/.bashrc other");
    let ts: Vec<_> = a.redirections.iter().map(|r| (r.op.as_str(), r.target.as_str(), r.write)).collect();
    assert_eq!(ts, vec![("tee -a", "~/.bashrc", true), ("tee -a", "other", true)]);
}

#[test]
fn dev_tcp_is_opaque() {
    let a = clean("exec 3<>/dev/tcp/host/80");
    assert_eq!(kinds(&a), vec![OpaqueKind::NetworkRedirection]);
    assert_eq!(a.redirections[0].op, "<>");
    assert_eq!(a.redirections[0].fd.as_deref(), Some("3"));
    assert_eq!(kinds(&clean("echo x > /dev/udp/h/53")), vec![OpaqueKind::NetworkRedirection]);
}

#[test]
fn dev_null_is_reported_like_any_file() {
    let a = clean("ls 2>/dev/null");
    assert_eq!(argvs(&a), vec![vec!["ls"]]);
    let r = &a.redirections[0];
    assert_eq!((r.fd.as_deref(), r.op.as_str(), r.target.as_str()), (Some("2"), ">", "/dev/null"));
    assert!(a.opaque.is_empty());
}

#[test]
fn dynamic_redirection_target() {
    assert!(clean("echo > \"$HOME/x\"").redirections[0].dynamic);
}
