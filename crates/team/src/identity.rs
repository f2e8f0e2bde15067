//! Who ships: the hub's ledger id (made with the ledger file), its host and its OS user, stamped on
//! every row of the team ledger so a team can ask "which machine, which user".

use serde::{Deserialize, Serialize};

/// The identity of a hub's rows in the team ledger.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HubIdentity {
    /// The ledger's own id (`portcullis_ledger::LedgerReader::ledger_id`).
    pub ledger_id: String,
    pub host: String,
    pub os_user: String,
    /// The operating system (`linux`, `macos`).
    pub os: String,
}

impl HubIdentity {
    /// This process's host and user, for the ledger `ledger_id`.
    pub fn of_this_process(ledger_id: &str) -> HubIdentity {
        HubIdentity {
            ledger_id: ledger_id.to_owned(),
            host: host_name(),
            os_user: os_user(),
            os: std::env::consts::OS.to_owned(),
        }
    }
}

fn host_name() -> String {
    rustix::system::uname().nodename().to_string_lossy().into_owned()
}

/// The name of the effective user (from the user database, not `$USER`, which an environment can say
/// anything in), or its uid when it has no name.
fn os_user() -> String {
    let uid = nix::unistd::geteuid();
    match nix::unistd::User::from_uid(uid) {
        Ok(Some(user)) => user.name,
        _ => format!("uid {uid}"),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    #[test]
    fn this_process_has_a_host_and_a_user() {
        let me = HubIdentity::of_this_process("abc");
        assert_eq!(me.ledger_id, "abc");
        assert!(!me.host.is_empty());
        assert!(!me.os_user.is_empty());
        assert_eq!(me.os, std::env::consts::OS);
    }
}
