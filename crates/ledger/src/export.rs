//! Streaming export of the records of the filtered calls, as JSON Lines or CSV, row by row (a million
//! calls never sit in memory).

use crate::chain;
use crate::error::{AtPath, LedgerStoreError};
use crate::export_proof::ProofSource;
use crate::query::{CallFilter, call_where};
use crate::reader::LedgerReader;
use crate::row::{RECORD_COLUMNS, StoredRecord, stored_record};

use crate::timefmt::format_rfc3339;
use rusqlite::params_from_iter;
use std::io::Write;

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub enum ExportFormat {
    Jsonl,
    Csv,
}

impl std::str::FromStr for ExportFormat {
    type Err = LedgerStoreError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "jsonl" => Ok(ExportFormat::Jsonl),
            "csv" => Ok(ExportFormat::Csv),
            other => Err(LedgerStoreError::BadFilter(format!(
                "unknown export format {other:?}: expected jsonl or csv"
            ))),
        }
    }
}

/// CSV columns, in order.
pub const CSV_HEADER: &str = "id,at,session_id,run_id,call_id,owner,tool,kind,reason,error_code,decided_by,\
decided_rule,decided_source,decided_operator,started_at,duration_us,redacted,body";

fn csv_field(out: &mut String, value: &str) {
    if value.contains([',', '"', '\n', '\r']) {
        out.push('"');
        out.push_str(&value.replace('"', "\"\""));
        out.push('"');
    } else {
        out.push_str(value);
    }
}

/// One record as a line of `format` (without its newline), in `line` (cleared first).
pub fn record_line(
    format: ExportFormat,
    record: &StoredRecord,
    line: &mut String,
) -> Result<(), LedgerStoreError> {
    line.clear();
    match format {
        ExportFormat::Jsonl => {
            *line = serde_json::to_string(record).map_err(|e| LedgerStoreError::Export(e.to_string()))?;
        }
        ExportFormat::Csv => {
            let body =
                serde_json::to_string(&record.body).map_err(|e| LedgerStoreError::Export(e.to_string()))?;
            let (decided, rule, source, operator) = crate::row::decided_columns(&record.body.decided_by);
            let head = &record.head;
            let fields: [String; 18] = [
                record.id.to_string(),
                format_rfc3339(head.at),
                head.session_id.clone(),
                head.run_id.clone(),
                head.call_id.clone(),
                head.owner.clone(),
                head.tool.clone(),
                record.kind.as_str().to_owned(),
                head.reason.map(|r| r.as_str().to_owned()).unwrap_or_default(),
                head.error_code.as_ref().map(|c| c.as_str().to_owned()).unwrap_or_default(),
                decided.to_owned(),
                rule.unwrap_or_default().to_owned(),
                source.unwrap_or_default().to_owned(),
                operator.unwrap_or_default(),
                head.started_at.map(format_rfc3339).unwrap_or_default(),
                head.duration_us.map(|d| d.to_string()).unwrap_or_default(),
                head.redacted.to_string(),
                body,
            ];
            for (i, field) in fields.iter().enumerate() {
                if i > 0 {
                    line.push(',');
                }
                csv_field(line, field);
            }
        }
    }
    Ok(())
}

/// Appends CSV fields to a line (each quoted when it must be).
pub fn push_csv_fields(line: &mut String, fields: &[&str]) {
    for field in fields {
        line.push(',');
        csv_field(line, field);
    }
}

impl LedgerReader {
    /// Writes every record of the filtered calls (all their lifecycle records, in id order).
    /// `progress(done, total)` is called every 1,000 records. Returns the number of records written.
    pub fn export(
        &self,
        filter: &CallFilter,
        format: ExportFormat,
        out: &mut dyn Write,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<u64, LedgerStoreError> {
        let path = self.path().to_owned();
        let io = |e: std::io::Error| LedgerStoreError::Export(e.to_string());
        let w = call_where(filter)?;
        let total: i64 = self
            .conn
            .query_row(
                &format!(
                    "SELECT count(*) FROM records x JOIN (SELECT DISTINCT r.call_key AS k, r.session_id AS s,
                         r.call_id AS c FROM records r WHERE {}) f
                     ON x.call_key = f.k AND x.session_id = f.s AND x.call_id = f.c",
                    w.sql
                ),
                params_from_iter(w.params.iter()),
                |r| r.get(0),
            )
            .at(&path)?;
        let total = u64::try_from(total).unwrap_or(0);
        // Calls in append order; for each, its records in order.
        let calls_sql = format!(
            "SELECT r.call_key, r.session_id, r.call_id FROM records r WHERE {} ORDER BY r.id",
            w.sql
        );
        let mut calls_stmt = self.conn.prepare(&calls_sql).at(&path)?;
        let mut calls = calls_stmt.query(params_from_iter(w.params.iter())).at(&path)?;
        // JSON Lines carry each record's proof (`export_proof.rs`): its link and canonical columns.
        // JSON Lines read each record with its proof; CSV carries none.
        let columns = if format == ExportFormat::Jsonl {
            chain::linked_record_columns()
        } else {
            RECORD_COLUMNS.into()
        };
        let records_sql = format!(
            "SELECT {columns} FROM records WHERE call_key = ?1 AND session_id = ?2 AND call_id = ?3 ORDER BY id"
        );
        let proofs = match format {
            ExportFormat::Jsonl => Some(ProofSource::load(&self.conn, &path)?),
            ExportFormat::Csv => None,
        };
        let mut records_stmt = self.conn.prepare(&records_sql).at(&path)?;
        if format == ExportFormat::Csv {
            writeln!(out, "{CSV_HEADER}").map_err(io)?;
        }
        let mut written = 0u64;
        let mut line = String::new();
        while let Some(call) = calls.next().at(&path)? {
            let key: i64 = call.get(0).at(&path)?;
            let session: String = call.get(1).at(&path)?;
            let call_id: String = call.get(2).at(&path)?;
            let records = records_stmt
                .query_map(rusqlite::params![key, session, call_id], |row| match format {
                    ExportFormat::Jsonl => chain::linked_record(row),
                    ExportFormat::Csv => Ok((stored_record(row)?, None)),
                })
                .at(&path)?
                .collect::<Result<Vec<_>, _>>()
                .at(&path)?;
            for (record, columns) in records {
                record_line(format, &record, &mut line)?;
                if let (Some(proofs), Some((link, columns))) = (&proofs, columns) {
                    let proof = proofs.link_of(&self.conn, record.id, &link, columns).at(&path)?;
                    let proof =
                        serde_json::to_string(&proof).map_err(|e| LedgerStoreError::Export(e.to_string()))?;
                    // The record's object, with its proof as one more field.
                    if line.ends_with('}') {
                        line.pop();
                        line.push_str(",\"chain\":");
                        line.push_str(&proof);
                        line.push('}');
                    }
                }
                line.push('\n');
                out.write_all(line.as_bytes()).map_err(io)?;
                written += 1;
                if written.is_multiple_of(1000) {
                    progress(written, total);
                }
            }
        }
        out.flush().map_err(io)?;
        progress(written, total);
        Ok(written)
    }
}
