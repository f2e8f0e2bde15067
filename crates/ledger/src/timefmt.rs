//! Timestamps for people: RFC 3339 UTC out; RFC 3339, dates, relative ages (`90s`, `15m`, `2h`, `7d`) and
//! raw microseconds in. Written here to keep the ledger free of a date-time dependency.

use portcullis_harness::Timestamp;

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian (H. Hinnant's algorithm).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let m = i64::from(m);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// `2026-11-30T03:40:04.123456Z`.
pub fn format_rfc3339(t: Timestamp) -> String {
    let secs = t.0.div_euclid(1_000_000);
    let micros = t.0.rem_euclid(1_000_000);
    let (y, m, d) = civil_from_days(secs.div_euclid(86_400));
    let rem = secs.rem_euclid(86_400);
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{micros:06}Z", rem / 3600, rem % 3600 / 60, rem % 60)
}

/// Parses a point in time. `now` anchors relative ages (`15m` = fifteen minutes ago).
pub fn parse_time(text: &str, now: Timestamp) -> Result<Timestamp, String> {
    let t = text.trim();
    let bad = || {
        format!(
            "cannot read time {text:?}: use RFC 3339 (2026-11-30T12:00:00Z), a date (2026-11-30), an age (90s, 15m, 2h, 7d) or microseconds since 1970"
        )
    };
    if t.is_empty() {
        return Err(bad());
    }
    if let Some(unit) = t.chars().last().filter(|c| matches!(c, 's' | 'm' | 'h' | 'd'))
        && let Ok(n) = t[..t.len() - 1].parse::<i64>()
    {
        let per = match unit {
            's' => 1,
            'm' => 60,
            'h' => 3600,
            _ => 86_400,
        };
        return Ok(Timestamp(now.0.saturating_sub(n.saturating_mul(per).saturating_mul(1_000_000))));
    }
    if t.bytes().all(|b| b.is_ascii_digit()) && t.len() > 10 {
        return t.parse::<i64>().map(Timestamp).map_err(|_| bad());
    }
    let (date, time) = match t.split_once(['T', ' ']) {
        Some((d, rest)) => (d, Some(rest)),
        None => (t, None),
    };
    let mut parts = date.splitn(3, '-');
    let (Some(y), Some(m), Some(d)) = (parts.next(), parts.next(), parts.next()) else { return Err(bad()) };
    let (y, m, d) = (
        y.parse::<i64>().map_err(|_| bad())?,
        m.parse::<u32>().map_err(|_| bad())?,
        d.parse::<u32>().map_err(|_| bad())?,
    );
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) {
        return Err(bad());
    }
    let mut micros = days_from_civil(y, m, d) * 86_400 * 1_000_000;
    if let Some(time) = time {
        let time = time.strip_suffix('Z').or_else(|| time.strip_suffix("+00:00")).ok_or_else(bad)?;
        let mut hms = time.splitn(3, ':');
        let h: i64 = hms.next().ok_or_else(bad)?.parse().map_err(|_| bad())?;
        let min: i64 = hms.next().ok_or_else(bad)?.parse().map_err(|_| bad())?;
        let sec: f64 = hms.next().unwrap_or("0").parse().map_err(|_| bad())?;
        if h > 23 || min > 59 || !(0.0..61.0).contains(&sec) {
            return Err(bad());
        }
        micros += (h * 3600 + min * 60) * 1_000_000 + (sec * 1e6).round() as i64;
    }
    Ok(Timestamp(micros))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_and_parses_round_trip() {
        let t = Timestamp(1_796_009_204_123_456);
        let text = format_rfc3339(t);
        assert_eq!(text, "2026-11-30T03:26:44.123456Z");
        assert_eq!(parse_time(&text, Timestamp(0)), Ok(t));
        assert_eq!(format_rfc3339(Timestamp(0)), "1970-01-01T00:00:00.000000Z");
        assert_eq!(
            parse_time("2024-02-29", Timestamp(0)).map(format_rfc3339),
            Ok("2024-02-29T00:00:00.000000Z".into())
        );
    }

    #[test]
    fn relative_ages_and_errors() {
        let now = Timestamp(10_000_000_000);
        assert_eq!(parse_time("90s", now), Ok(Timestamp(10_000_000_000 - 90_000_000)));
        assert_eq!(parse_time("2h", now), Ok(Timestamp(10_000_000_000 - 7_200_000_000)));
        for bad in ["", "yesterday", "2026-13-01", "2026-11-30T25:00:00Z", "2026-11-30T10:00:00+02:00", "5w"]
        {
            assert!(parse_time(bad, now).is_err(), "{bad}");
        }
    }
}
