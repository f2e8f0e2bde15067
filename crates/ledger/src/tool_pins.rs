//! Pinned upstream tool definitions (the "rug pull" defence): the definition of each upstream tool the
//! operator has accepted (first seen, or accepted after a change), and every event on it — `pinned`
//! (first seen), `changed` (a server offered another definition; the tool is held back), `accepted`
//! (an operator accepted the offered one, with who).

use crate::error::{AtPath, LedgerStoreError};
use crate::reader::LedgerReader;
use portcullis_harness::Timestamp;
use rusqlite::{Connection, params};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What happened to a tool's definition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PinKind {
    /// First seen: this definition is the pinned one.
    Pinned,
    /// The server offered another definition; the tool is held back until accepted.
    Changed,
    /// An operator accepted the offered definition: it is the pinned one now.
    Accepted,
}

impl PinKind {
    pub fn as_str(self) -> &'static str {
        match self {
            PinKind::Pinned => "pinned",
            PinKind::Changed => "changed",
            PinKind::Accepted => "accepted",
        }
    }

    fn parse(text: &str) -> PinKind {
        match text {
            "changed" => PinKind::Changed,
            "accepted" => PinKind::Accepted,
            _ => PinKind::Pinned,
        }
    }
}

/// One event on an upstream tool's definition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolPinEvent {
    pub at: Timestamp,
    pub server: String,
    /// The tool's name on its server.
    pub tool: String,
    pub kind: PinKind,
    /// The definition's digest (hex) and the definition (`{name, description, input_schema,
    /// annotations}`: the server's text, untrusted).
    pub digest: String,
    pub definition: Value,
    /// Who accepted (`accepted` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operator: Option<String>,
}

/// The pinned definition of one tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolPin {
    pub server: String,
    pub tool: String,
    pub digest: String,
    pub definition: Value,
    pub pinned_at: Timestamp,
}

/// Writes an event, and the pin it sets (`pinned`, `accepted`).
/// Returns the event's id (the side chain's key of it).
pub(crate) fn write(conn: &Connection, event: &ToolPinEvent) -> rusqlite::Result<i64> {
    let definition = event.definition.to_string();
    conn.prepare_cached(
        "INSERT INTO tool_pin_events (at, server, tool, kind, digest, definition, operator)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?
    .execute(params![
        event.at.0,
        event.server,
        event.tool,
        event.kind.as_str(),
        event.digest,
        definition,
        event.operator
    ])?;
    let id = conn.last_insert_rowid();
    if event.kind != PinKind::Changed {
        conn.prepare_cached(
            "INSERT INTO tool_pins (server, tool, digest, definition, pinned_at) VALUES (?1, ?2, ?3, ?4, ?5)
             ON CONFLICT (server, tool) DO UPDATE SET digest = excluded.digest,
                 definition = excluded.definition, pinned_at = excluded.pinned_at",
        )?
        .execute(params![event.server, event.tool, event.digest, definition, event.at.0])?;
    }
    Ok(id)
}

impl LedgerReader {
    /// Every pinned definition.
    pub fn tool_pins(&self) -> Result<Vec<ToolPin>, LedgerStoreError> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT server, tool, digest, definition, pinned_at FROM tool_pins ORDER BY server, tool",
            )
            .at(self.path())?;
        let rows = stmt
            .query_map([], |r| {
                let definition: String = r.get(3)?;
                Ok(ToolPin {
                    server: r.get(0)?,
                    tool: r.get(1)?,
                    digest: r.get(2)?,
                    definition: serde_json::from_str(&definition).unwrap_or(Value::Null),
                    pinned_at: Timestamp(r.get(4)?),
                })
            })
            .at(self.path())?;
        rows.collect::<Result<Vec<_>, _>>().at(self.path())
    }

    /// The events on definitions, oldest first (at most `limit`, the newest kept).
    pub fn tool_pin_events(&self, limit: usize) -> Result<Vec<ToolPinEvent>, LedgerStoreError> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT at, server, tool, kind, digest, definition, operator FROM
                   (SELECT * FROM tool_pin_events ORDER BY id DESC LIMIT ?1) ORDER BY id",
            )
            .at(self.path())?;
        let rows = stmt
            .query_map([i64::try_from(limit).unwrap_or(i64::MAX)], |r| {
                let kind: String = r.get(3)?;
                let definition: String = r.get(5)?;
                Ok(ToolPinEvent {
                    at: Timestamp(r.get(0)?),
                    server: r.get(1)?,
                    tool: r.get(2)?,
                    kind: PinKind::parse(&kind),
                    digest: r.get(4)?,
                    definition: serde_json::from_str(&definition).unwrap_or(Value::Null),
                    operator: r.get(6)?,
                })
            })
            .at(self.path())?;
        rows.collect::<Result<Vec<_>, _>>().at(self.path())
    }
}
