//! A number from the file checked against its range: a count ([`within`]) or seconds by the one
//! duration rule ([`seconds`]). Out of range is a problem noted, with the default standing in.

use super::store::checked_seconds;
use std::fmt;
use std::time::Duration;

/// Checks a number against a range, naming the key when it is out of it.
pub(super) fn within<T: PartialOrd + fmt::Display + Copy>(
    key: &str,
    value: T,
    range: std::ops::RangeInclusive<T>,
    problems: &mut Vec<String>,
) -> T {
    if !range.contains(&value) {
        problems.push(format!(
            "{key} must be within {}..={}, got {value}",
            range.start(),
            range.end()
        ));
    }
    value
}

/// Seconds read as a duration by the one rule ([`checked_seconds`]), or the default (and a
/// problem naming `key`) when out of its range.
pub(super) fn seconds(
    key: &str,
    value: Option<f64>,
    default: Duration,
    problems: &mut Vec<String>,
) -> Duration {
    match value {
        None => default,
        Some(s) => checked_seconds(s).unwrap_or_else(|why| {
            problems.push(format!("{key} {why}"));
            default
        }),
    }
}
