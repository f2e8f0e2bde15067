//! `portcullis ledger verify`: the ledger's (or an export's) hash chain and signed checkpoints checked
//! against the hub's key or the ones given (an export of a team ledger: one per hub, each hub's ledger
//! verified on its own), the first break named, as text or JSON.

use crate::args::VerifyArgs;
use crate::error::CliError;
use crate::render::clean;
use portcullis_api::ledger::{BreakKind, Verdict, VerifyReport, verify_export_file, verify_ledger_file};
use std::io::Write;
use std::process::ExitCode;

/// What a break is called where a person reads it.
fn break_word(kind: BreakKind) -> &'static str {
    match kind {
        BreakKind::Changed => "changed",
        BreakKind::Deleted => "deleted",
        BreakKind::Unlinked => "unlinked",
        BreakKind::Malformed => "malformed",
        BreakKind::Derived => "derived column changed",
        BreakKind::SealMismatch => "checkpoint mismatch",
        BreakKind::SealSignature => "bad signature",
        BreakKind::Truncated => "truncated",
        BreakKind::Unsealed => "unsealed",
        BreakKind::Journal => "journal",
        BreakKind::Unproven => "tail unproven",
    }
}

pub fn verify(args: &VerifyArgs, out: &mut dyn Write) -> Result<ExitCode, CliError> {
    let (what, report) = match &args.export {
        Some(file) => (format!("export: {}", file.display()), verify_export_file(file, &args.key)?),
        None => {
            let key = match args.key.as_slice() {
                [] => None,
                [key] => Some(key.as_str()),
                _ => {
                    return Err(CliError::BadArgument(
                        "a ledger file is verified against one --key (several go with --export)".into(),
                    ));
                }
            };
            let file = args.db.file()?;
            (format!("ledger: {}", file.display()), verify_ledger_file(&file, key)?)
        }
    };
    let holds = report.verdict != Verdict::Broken;
    if args.json {
        writeln!(out, "{}", serde_json::to_string(&report)?)?;
    } else {
        write_report(out, &what, &report)?;
    }
    Ok(if holds { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

fn write_report(out: &mut dyn Write, what: &str, report: &VerifyReport) -> Result<(), CliError> {
    writeln!(out, "{}", clean(what))?;
    match &report.key_missing {
        Some(missing) => writeln!(
            out,
            "key: none: {}; checkpoint signatures NOT checked (give the hub's public key with --key)",
            clean(missing)
        )?,
        None => writeln!(out, "key: {}", report.key)?,
    }
    writeln!(
        out,
        "records: {} chained, {} sealed by {} of {} checkpoints; {} unchained (written before the chain)",
        report.chained, report.sealed, report.checkpoints_valid, report.checkpoints, report.unchained
    )?;
    if report.ledgers.is_empty() {
        writeln!(
            out,
            "sessions, approvals, refusals, tool-definition events, effect marks: {} side entries chained, {} sealed{}",
            report.side_chained,
            report.side_sealed,
            if report.side_legacy > 0 {
                format!(
                    "; {} rows not chained (older ledger): taken in as they were when it was migrated",
                    report.side_legacy
                )
            } else {
                String::new()
            }
        )?;
    }
    if report.journaled > 0 {
        writeln!(out, "in the journal, not yet indexed: {}", report.journaled)?;
    }
    for ledger in &report.ledgers {
        writeln!(
            out,
            "  ledger {}: {}, {} chained, {} sealed by {} of {} checkpoints, {} unchained; signed with {}",
            clean(&ledger.ledger_id),
            if ledger.verdict == Verdict::Broken { "BROKEN" } else { "verified" },
            ledger.chained,
            ledger.sealed,
            ledger.checkpoints_valid,
            ledger.checkpoints,
            ledger.unchained,
            ledger.key.as_deref().unwrap_or("none of the keys")
        )?;
    }
    match report.verdict {
        Verdict::IntactUnsealedTail if report.key_missing.is_some() => writeln!(
            out,
            "linked, unsigned: every chained record links, but without the key nothing proves the records were not rewritten with their links recomputed"
        )?,
        Verdict::Intact => writeln!(out, "verified: every chained record links and is sealed with the key")?,
        Verdict::IntactUnsealedTail if report.sealed == 0 => writeln!(
            out,
            "verified: every record links; none is sealed yet (a hub is writing this ledger: it seals every 1,024 records and when it stops)"
        )?,
        Verdict::IntactUnsealedTail => writeln!(
            out,
            "verified up to record {} of the chain; the {} newest are not sealed yet (a hub is writing this ledger: it seals every 1,024 records and at close)",
            report.sealed,
            report.chained - report.sealed
        )?,
        Verdict::Broken => {
            let first = report.breaks.first();
            match first.and_then(|b| b.record_id) {
                Some(id) => writeln!(out, "BROKEN at record {id}")?,
                None => writeln!(out, "BROKEN")?,
            }
            for b in &report.breaks {
                writeln!(out, "  {}: {}", break_word(b.kind), clean(&b.message))?;
            }
            let more = report.break_count.saturating_sub(report.breaks.len() as u64);
            if more > 0 {
                writeln!(out, "  … and {more} more")?;
            }
        }
    }
    Ok(())
}
