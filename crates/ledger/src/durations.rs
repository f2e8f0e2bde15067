//! Log-scale histograms of call durations, as the hourly rollups keep them (see `rollup.rs`): a count per
//! bucket of relative width 2^(1/8) (≈ 9 %), so a percentile read back from a histogram is within
//! [`RELATIVE_ERROR`] (2^(1/16) − 1 ≈ 4.43 %) of the exact one, give or take half a microsecond of
//! rounding. Kept apart from the rollups because the writer, the readers and the SQL merge function all
//! use it, and its error bound is what the stats promise.

/// Buckets per power of two.
const STEPS: f64 = 8.0;

/// The largest bucket number (|duration| up to 2^63 µs).
pub const MAX_BUCKET: i32 = 505;

/// Largest relative error of a value read back from its bucket (before rounding to a whole µs): half a
/// bucket, geometrically, 2^(1/16) − 1.
pub const RELATIVE_ERROR: f64 = 0.044_273_782_427_413_84;

/// First byte of an encoded histogram (the format's version).
const FORMAT: u8 = 1;

/// The bucket of a duration (µs): 0 for 0; `1 + ⌊8·log2 d⌋` for d > 0; the negative of that for d < 0
/// (a clock that stepped back), so bucket order is value order.
pub fn bucket_of(duration_us: i64) -> i32 {
    if duration_us == 0 {
        return 0;
    }
    let magnitude = duration_us.unsigned_abs() as f64;
    let step = ((magnitude.log2() * STEPS).floor() as i32).clamp(0, MAX_BUCKET - 1);
    if duration_us > 0 { 1 + step } else { -(1 + step) }
}

/// The value a bucket stands for: the geometric middle of its range, rounded to a whole µs.
pub fn representative(bucket: i32) -> i64 {
    if bucket == 0 {
        return 0;
    }
    let step = f64::from(bucket.unsigned_abs().saturating_sub(1));
    let value = ((step + 0.5) / STEPS).exp2().round() as i64; // `as` saturates
    if bucket > 0 { value } else { -value }
}

/// A histogram as a sorted list of (bucket, count), for the few values of a batch or a rollup row.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Histogram {
    cells: Vec<(i32, u64)>,
}

impl Histogram {
    pub fn is_empty(&self) -> bool {
        self.cells.is_empty()
    }

    /// Counts one more duration.
    pub fn add(&mut self, duration_us: i64) {
        self.add_bucket(bucket_of(duration_us), 1);
    }

    fn add_bucket(&mut self, bucket: i32, count: u64) {
        match self.cells.binary_search_by_key(&bucket, |(b, _)| *b) {
            Ok(i) => {
                if let Some(cell) = self.cells.get_mut(i) {
                    cell.1 = cell.1.saturating_add(count);
                }
            }
            Err(i) => self.cells.insert(i, (bucket, count)),
        }
    }

    /// Adds every count of `other`.
    pub fn merge(&mut self, other: &Histogram) {
        for &(bucket, count) in &other.cells {
            self.add_bucket(bucket, count);
        }
    }

    /// The compact form stored in `call_hours.durations`: a format byte, then per bucket (ascending) the
    /// zigzag varint of its distance from the previous one and the varint of its count.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(1 + 3 * self.cells.len());
        out.push(FORMAT);
        let mut previous = 0i64;
        for &(bucket, count) in &self.cells {
            let delta = i64::from(bucket) - previous;
            previous = i64::from(bucket);
            put_varint(&mut out, ((delta << 1) ^ (delta >> 63)) as u64);
            put_varint(&mut out, count);
        }
        out
    }

    /// Reads an encoded histogram (`None`: not one).
    pub fn decode(bytes: &[u8]) -> Option<Histogram> {
        let mut histogram = Histogram::default();
        each_bucket(bytes, |bucket, count| histogram.add_bucket(bucket, count))?;
        Some(histogram)
    }
}

/// Calls `f` with each (bucket, count) of an encoded histogram; `None` if the bytes are not one.
pub fn each_bucket(bytes: &[u8], mut f: impl FnMut(i32, u64)) -> Option<()> {
    let (&format, mut rest) = bytes.split_first()?;
    if format != FORMAT {
        return None;
    }
    let mut bucket = 0i64;
    while !rest.is_empty() {
        let zigzag = take_varint(&mut rest)?;
        let delta = ((zigzag >> 1) as i64) ^ -((zigzag & 1) as i64);
        bucket = bucket.checked_add(delta)?;
        let count = take_varint(&mut rest)?;
        let b = i32::try_from(bucket).ok().filter(|b| b.abs() <= MAX_BUCKET)?;
        f(b, count);
    }
    Some(())
}

fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

fn take_varint(bytes: &mut &[u8]) -> Option<u64> {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let (&byte, rest) = bytes.split_first()?;
        *bytes = rest;
        value |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Some(value);
        }
    }
    None
}

/// Merges two encoded histograms (the SQL function the rollup upsert calls). An operand that does not
/// decode counts as empty: the rollup's durations are derived data, and the writer must not stall on them.
pub fn merge_encoded(old: Option<&[u8]>, new: Option<&[u8]>) -> Option<Vec<u8>> {
    let decode = |bytes: Option<&[u8]>| {
        let bytes = bytes?;
        let decoded = Histogram::decode(bytes);
        if decoded.is_none() {
            tracing::warn!(bytes = bytes.len(), "a duration histogram of the ledger rollups does not decode");
        }
        decoded
    };
    match (decode(old), decode(new)) {
        (Some(mut a), Some(b)) => {
            a.merge(&b);
            Some(a.encode())
        }
        (Some(a), None) | (None, Some(a)) => Some(a.encode()),
        (None, None) => None,
    }
}

/// A histogram being summed from many rows: one counter per possible bucket.
#[derive(Debug, Clone)]
pub struct DenseHistogram {
    counts: Vec<u64>,
    total: u64,
}

impl Default for DenseHistogram {
    fn default() -> Self {
        DenseHistogram { counts: vec![0; (2 * MAX_BUCKET + 1) as usize], total: 0 }
    }
}

impl DenseHistogram {
    pub fn total(&self) -> u64 {
        self.total
    }

    pub fn add_bucket(&mut self, bucket: i32, count: u64) {
        if let Some(slot) = usize::try_from(bucket + MAX_BUCKET).ok().and_then(|i| self.counts.get_mut(i)) {
            *slot = slot.saturating_add(count);
            self.total = self.total.saturating_add(count);
        }
    }

    pub fn add(&mut self, duration_us: i64) {
        self.add_bucket(bucket_of(duration_us), 1);
    }

    /// Adds an encoded histogram; `false` if it does not decode (its buckets before the fault may have
    /// been added: the caller gives up on this histogram then).
    pub fn add_encoded(&mut self, bytes: &[u8]) -> bool {
        each_bucket(bytes, |b, c| self.add_bucket(b, c)).is_some()
    }

    /// The nearest-rank `q`-quantile, read back as its bucket's representative value (0 when empty).
    /// The exact nearest-rank value lies in the same bucket, so the two differ by at most
    /// [`RELATIVE_ERROR`] of it plus half a µs.
    pub fn quantile(&self, q: f64) -> i64 {
        if self.total == 0 {
            return 0;
        }
        let rank = ((q * self.total as f64).ceil() as u64).clamp(1, self.total);
        let mut seen = 0u64;
        for (i, &count) in self.counts.iter().enumerate() {
            seen += count;
            if seen >= rank {
                return representative(i as i32 - MAX_BUCKET);
            }
        }
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Values spread over the whole range, small ones all included.
    fn samples() -> Vec<i64> {
        let mut values: Vec<i64> = (0..5000).collect();
        let mut v = 5000.0f64;
        while v < 9.0e18 {
            values.push(v as i64);
            values.push(v as i64 + 1);
            v *= 1.013;
        }
        values.extend([i64::MAX, i64::MAX - 1, 1 << 62, (1 << 62) - 1]);
        let negatives: Vec<i64> = values.iter().map(|v| -v).collect();
        values.extend(negatives);
        values.push(i64::MIN);
        values
    }

    #[test]
    fn a_value_read_back_from_its_bucket_is_within_the_bound() {
        for v in samples() {
            let back = representative(bucket_of(v));
            let error = (back as f64 - v as f64).abs();
            assert!(
                error <= RELATIVE_ERROR * (v as f64).abs() * (1.0 + 1e-9) + 0.5,
                "{v} read back as {back}"
            );
        }
        for v in 0..16 {
            assert_eq!(representative(bucket_of(v)), v, "small values are exact");
        }
    }

    #[test]
    fn bucket_order_is_value_order() {
        let mut values = samples();
        values.sort_unstable();
        for pair in values.windows(2) {
            assert!(bucket_of(pair[0]) <= bucket_of(pair[1]), "{pair:?}");
        }
        assert_eq!(bucket_of(i64::MAX), MAX_BUCKET);
        assert_eq!(bucket_of(i64::MIN), -MAX_BUCKET);
    }

    #[test]
    fn encoding_round_trips_and_merges() {
        let mut a = Histogram::default();
        for v in [0, 1, 5, 5, 900, 1_000_000, -3, i64::MAX] {
            a.add(v);
        }
        let bytes = a.encode();
        assert_eq!(Histogram::decode(&bytes), Some(a.clone()));
        let mut b = Histogram::default();
        b.add(5);
        b.add(77);
        let merged = merge_encoded(Some(&bytes), Some(&b.encode())).unwrap();
        let mut expected = a.clone();
        expected.merge(&b);
        assert_eq!(Histogram::decode(&merged), Some(expected));
        assert_eq!(
            merge_encoded(Some(b"\x07junk"), Some(&bytes)),
            Some(bytes.clone()),
            "junk counts as empty"
        );
        assert_eq!(merge_encoded(None, None), None);
        assert_eq!(Histogram::decode(&[]), None);
        assert_eq!(Histogram::decode(&[FORMAT, 0x80]), None, "a cut varint");
        assert_eq!(Histogram::decode(&[FORMAT]), Some(Histogram::default()));
    }

    #[test]
    fn quantiles_are_within_the_bound_of_the_exact_ones() {
        let mut values: Vec<i64> = (0..2000).map(|i| (i * i * 37 + 11) % 3_000_000).collect();
        values.sort_unstable();
        let mut dense = DenseHistogram::default();
        for &v in &values {
            dense.add(v);
        }
        for q in [0.0, 0.01, 0.5, 0.9, 0.95, 0.99, 1.0] {
            let rank = ((q * values.len() as f64).ceil() as usize).clamp(1, values.len());
            let exact = values[rank - 1];
            let estimate = dense.quantile(q);
            assert!(
                (estimate - exact).abs() as f64 <= RELATIVE_ERROR * exact as f64 + 0.5,
                "q {q}: {estimate} vs {exact}"
            );
        }
        assert_eq!(DenseHistogram::default().quantile(0.5), 0);
        let mut from_bytes = DenseHistogram::default();
        let mut h = Histogram::default();
        h.add(42);
        assert!(from_bytes.add_encoded(&h.encode()));
        assert!(!from_bytes.add_encoded(b"nope"));
        assert_eq!(from_bytes.total(), 1);
    }
}
