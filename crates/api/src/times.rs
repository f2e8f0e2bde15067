//! Ledger times for people and from people, the same in every front end: instants as RFC 3339 UTC
//! out and RFC 3339, dates or ages (`2h`) in; time widths (`15m`) for histogram buckets; call durations
//! (`1.50s`).

use super::error::{ApiError, ErrorCode};
use portcullis_harness::Timestamp;
use serde_json::json;

/// `2026-11-30T03:40:04.123456Z`.
pub fn format_time(at: Timestamp) -> String {
    portcullis_ledger::timefmt::format_rfc3339(at)
}

/// Reads a point in time: RFC 3339 (`2026-11-30T12:00:00Z`), a date (`2026-11-30`), an age (`90s`,
/// `15m`, `2h`, `7d`: that long before `now`) or microseconds since 1970. Refused as `bad_time`.
pub fn parse_time(text: &str, now: Timestamp) -> Result<Timestamp, ApiError> {
    portcullis_ledger::timefmt::parse_time(text, now)
        .map_err(|why| ApiError::new(ErrorCode::BadTime, why, json!({ "value": text })))
}

/// Microseconds per unit of a time width, largest first.
const UNITS: [(char, i64); 4] =
    [('d', 86_400_000_000), ('h', 3_600_000_000), ('m', 60_000_000), ('s', 1_000_000)];

/// Reads a time width such as `90s`, `15m`, `1h`, `7d` as microseconds (a whole, positive number of
/// one unit). Refused as `bad_argument`.
pub fn parse_width(text: &str) -> Result<i64, ApiError> {
    let bad = || {
        ApiError::new(
            ErrorCode::BadArgument,
            format!(
                "cannot read {text:?} as a time width: use a whole number and s, m, h or d (90s, 15m, 1h, 7d)"
            ),
            json!({ "value": text }),
        )
    };
    let t = text.trim();
    let unit = t.chars().last().ok_or_else(bad)?;
    let per = UNITS.iter().find(|(u, _)| *u == unit).map(|(_, per)| *per).ok_or_else(bad)?;
    let n: i64 = t[..t.len() - unit.len_utf8()].parse().map_err(|_| bad())?;
    if n <= 0 {
        return Err(bad());
    }
    n.checked_mul(per).ok_or_else(bad)
}

/// A time width for people: `1h`, `90s`, or `~` and a rounded duration when it is not whole seconds.
pub fn format_width(us: i64) -> String {
    UNITS
        .iter()
        .find(|(_, per)| us > 0 && us % per == 0)
        .map(|(unit, per)| format!("{}{unit}", us / per))
        .unwrap_or_else(|| format!("~{}", format_duration(us)))
}

/// A duration for people: `850us`, `12.3ms`, `1.50s`, `2m05s`, `3h07m` (negative counts as 0).
pub fn format_duration(us: i64) -> String {
    let us = us.max(0);
    match us {
        0..1_000 => format!("{us}us"),
        1_000..1_000_000 => format!("{:.1}ms", us as f64 / 1e3),
        1_000_000..60_000_000 => format!("{:.2}s", us as f64 / 1e6),
        60_000_000..3_600_000_000 => {
            let s = us / 1_000_000;
            format!("{}m{:02}s", s / 60, s % 60)
        }
        _ => {
            let m = us / 60_000_000;
            format!("{}h{:02}m", m / 60, m % 60)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(format_duration(-5), "0us");
        assert_eq!(format_duration(850), "850us");
        assert_eq!(format_duration(12_340), "12.3ms");
        assert_eq!(format_duration(1_500_000), "1.50s");
        assert_eq!(format_duration(125_000_000), "2m05s");
        assert_eq!(format_duration(3 * 3_600_000_000 + 7 * 60_000_000), "3h07m");
    }

    #[test]
    fn widths() {
        assert_eq!(parse_width("1h").unwrap(), 3_600_000_000);
        assert_eq!(parse_width("90s").unwrap(), 90_000_000);
        assert_eq!(parse_width("7d").unwrap(), 7 * 86_400_000_000);
        for bad in ["", "h", "0h", "-1h", "1w", "1.5h", "99999999999999d", "1é"] {
            let e = parse_width(bad).unwrap_err();
            assert_eq!(e.code, ErrorCode::BadArgument, "{bad}");
        }
        assert_eq!(format_width(3_600_000_000), "1h");
        assert_eq!(format_width(90_000_000), "90s");
        assert_eq!(format_width(1_500), "~1.5ms");
        assert_eq!(format_width(919_808_932_547), "~255h30m");
    }
}
