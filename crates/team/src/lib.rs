//! Portcullis team ledger: every hub's ledger shipped to one PostgreSQL database (a sink of the
//! ledger's tail, at least once, idempotent), so a team asks one database which agent ran what,
//! where, and who approved it. The local SQLite ledger stays the record a call waits for.

mod connect;
pub mod error;
pub mod identity;
mod ledger_read;
pub mod read;
mod read_proof;
mod read_rollups;
mod read_stats;
mod rows;
pub mod schema;
pub mod ship;
mod ship_sql;
pub mod target;
#[cfg(feature = "testing")]
pub mod testing;

pub use connect::connect;
pub use error::TeamError;
pub use identity::HubIdentity;
pub use read::TeamReader;
pub use ship::PostgresSink;
pub use target::{TeamDb, TlsMode, is_team_url};
