//! Reading the columns of this crate's own stats queries: a column that does not read as this build
//! expects is a `TeamError::BadRow`, never a panic. A leaf both stats readers (`read_stats` and the
//! rollups it asks, `read_rollups`) use.

use crate::error::TeamError;

/// Column `i` of a row of this crate's own queries, or an error naming what did not read.
pub(crate) fn col<'r, T: tokio_postgres::types::FromSql<'r>>(
    r: &'r tokio_postgres::Row,
    i: usize,
) -> Result<T, TeamError> {
    r.try_get(i).map_err(|e| TeamError::BadRow(format!("column {i}: {e}")))
}

/// A count column (`bigint`) as a count.
pub(crate) fn count_at(r: &tokio_postgres::Row, i: usize) -> Result<u64, TeamError> {
    Ok(u64::try_from(col::<i64>(r, i)?).unwrap_or(0))
}
