//! `portcullis ledger export`: streams the records of the selected calls to stdout or a file, with a
//! progress bar on stderr when stderr is a terminal.

use crate::args::ExportArgs;
use crate::error::CliError;
use crate::ledger_cmd::open_reader;
use crate::render::count;
use portcullis_api::ErrorCode;
use portcullis_api::ledger::parse_export_format;
use portcullis_api::types::Timestamp;
use std::io::{self, IsTerminal, Write};
use std::process::ExitCode;

/// Characters between the brackets of the progress bar.
const BAR_WIDTH: u64 = 30;

/// `\r[#####     ] 12,000/50,000 records`.
fn progress_line(done: u64, total: u64) -> String {
    let total = total.max(done);
    let filled = (done.saturating_mul(BAR_WIDTH)).checked_div(total).unwrap_or(BAR_WIDTH);
    let filled = filled as usize;
    format!(
        "\r[{}{}] {}/{} records",
        "#".repeat(filled),
        " ".repeat(BAR_WIDTH as usize - filled),
        count(done),
        count(total)
    )
}

/// Draws the progress bar on stderr, or nothing when stderr is not a terminal.
struct ProgressBar {
    enabled: bool,
    drawn: bool,
}

impl ProgressBar {
    fn draw(&mut self, done: u64, total: u64) {
        if self.enabled {
            let mut err = io::stderr().lock();
            let _ = write!(err, "{}", progress_line(done, total));
            let _ = err.flush();
            self.drawn = true;
        }
    }

    /// Leaves the bar full (the export's own count is the true total) and ends its line.
    fn finish(&mut self, written: u64) {
        if self.drawn {
            self.draw(written, written);
            let _ = writeln!(io::stderr().lock());
        }
    }
}

/// Passes writes through and remembers whether the reader went away: the ledger's export error keeps
/// only the message of I/O errors, not their kind.
struct PipeWatch<'a> {
    inner: &'a mut dyn Write,
    broken: bool,
}

impl PipeWatch<'_> {
    fn watch<T>(&mut self, result: io::Result<T>) -> io::Result<T> {
        if let Err(e) = &result
            && e.kind() == io::ErrorKind::BrokenPipe
        {
            self.broken = true;
        }
        result
    }
}

impl Write for PipeWatch<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let result = self.inner.write(buf);
        self.watch(result)
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        let result = self.inner.write_all(buf);
        self.watch(result)
    }

    fn flush(&mut self) -> io::Result<()> {
        let result = self.inner.flush();
        self.watch(result)
    }
}

pub fn export(args: &ExportArgs, stdout: &mut dyn Write) -> Result<ExitCode, CliError> {
    let format = parse_export_format(&args.format)?;
    let filter = args.filter.to_filter(Timestamp::now())?;
    let reader = open_reader(&args.db.address()?)?;
    let mut bar = ProgressBar { enabled: io::stderr().is_terminal(), drawn: false };
    let Some(out_path) = &args.out else {
        let mut sink = PipeWatch { inner: stdout, broken: false };
        let result = reader.export(&filter, format, &mut sink, &mut |done, total| bar.draw(done, total));
        return match result {
            Ok(written) => {
                bar.finish(written);
                Ok(ExitCode::SUCCESS)
            }
            Err(e) if sink.broken && e.code == ErrorCode::ExportFailed => Err(CliError::BrokenPipe),
            Err(e) => Err(e.into()),
        };
    };
    // Owner-only, never the ledger itself; a failed export leaves no file it created.
    let written = reader
        .export_to_file(&filter, format, out_path, &mut |done, total| bar.draw(done, total))
        .map_err(|e| match e.code {
            ErrorCode::BadArgument => CliError::BadArgument(format!("--out {}", e.message)),
            _ => CliError::Api(e),
        })?;
    bar.finish(written);
    let _ = writeln!(io::stderr().lock(), "exported {written} records to {}", out_path.display());
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::progress_line;

    #[test]
    fn progress_bar_text() {
        assert_eq!(
            progress_line(12_000, 50_000),
            format!("\r[{}{}] 12,000/50,000 records", "#".repeat(7), " ".repeat(23))
        );
        assert_eq!(progress_line(0, 0), format!("\r[{}] 0/0 records", "#".repeat(30)));
        // A total below what was written never draws past the end.
        assert_eq!(progress_line(5, 3), format!("\r[{}] 5/5 records", "#".repeat(30)));
    }
}
