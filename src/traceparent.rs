//! W3C Trace Context (<https://www.w3.org/TR/trace-context/>): the `traceparent` and `tracestate`
//! a search comes with and every store call it makes carries, as values ([`Trace`]). Read
//! strictly (a malformed `traceparent` is no parent at all, and takes its `tracestate` with it;
//! a `tracestate` that is too long or not printable is dropped alone), written as version `00`.
//!
//! Pure: it makes no span and decides nothing about sampling (`telemetry` does both). The chain
//! carries a [`Trace`] from the edges to the store calls.

use crate::limits::MAX_TRACESTATE_BYTES;
use std::fmt;

/// The header (and MCP `_meta` member) that names a search's parent span.
pub const TRACEPARENT: &str = "traceparent";
/// The header (and MCP `_meta` member) of vendors' trace state.
pub const TRACESTATE: &str = "tracestate";

/// A `traceparent`: the trace, the parent span in it, and the trace flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceParent {
    pub trace_id: [u8; 16],
    pub parent_id: [u8; 8],
    pub flags: u8,
}

impl TraceParent {
    /// Reads a `traceparent` value: `version-traceid-parentid-flags`, lower-case hex, neither id
    /// all zeros, version `ff` refused; a later version may carry more fields after the four,
    /// version `00` may not (the spec's rules for a receiver).
    pub fn parse(text: &str) -> Option<Self> {
        let text = text.trim_matches([' ', '\t']).as_bytes();
        if text.len() < 55 || [2, 35, 52].iter().any(|&at| text[at] != b'-') {
            return None;
        }
        let version = hex::<1>(&text[..2])?[0];
        let extra_fields_ok = version != 0 && text.get(55).is_some_and(|b| *b == b'-');
        if version == 0xff || (text.len() > 55 && !extra_fields_ok) {
            return None;
        }
        let trace_id = hex::<16>(&text[3..35])?;
        let parent_id = hex::<8>(&text[36..52])?;
        let flags = hex::<1>(&text[53..55])?[0];
        if trace_id == [0; 16] || parent_id == [0; 8] {
            return None;
        }
        Some(Self {
            trace_id,
            parent_id,
            flags,
        })
    }

    /// Whether the caller kept (is recording) this trace.
    pub fn sampled(&self) -> bool {
        self.flags & 1 == 1
    }
}

impl fmt::Display for TraceParent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("00-")?;
        for byte in self.trace_id {
            write!(f, "{byte:02x}")?;
        }
        f.write_str("-")?;
        for byte in self.parent_id {
            write!(f, "{byte:02x}")?;
        }
        write!(f, "-{:02x}", self.flags)
    }
}

/// `N` bytes from `2 * N` lower-case hex digits.
fn hex<const N: usize>(digits: &[u8]) -> Option<[u8; N]> {
    if digits.len() != 2 * N {
        return None;
    }
    let nibble = |d: u8| match d {
        b'0'..=b'9' => Some(d - b'0'),
        b'a'..=b'f' => Some(d - b'a' + 10),
        _ => None,
    };
    let mut bytes = [0; N];
    for (byte, pair) in bytes.iter_mut().zip(digits.chunks_exact(2)) {
        *byte = nibble(pair[0])? << 4 | nibble(pair[1])?;
    }
    Some(bytes)
}

/// A trace context as it travels: the parent and the vendors' state beside it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trace {
    pub parent: TraceParent,
    /// The `tracestate` as received (or as the span that sends it has it), when there is one.
    pub state: Option<Box<str>>,
}

impl Trace {
    /// Reads the two values through `value` (a lookup by name: a header, an MCP `_meta` member);
    /// `None` without a valid `traceparent`.
    pub fn read<'a>(value: impl Fn(&str) -> Option<&'a str>) -> Option<Self> {
        let parent = TraceParent::parse(value(TRACEPARENT)?)?;
        let state = value(TRACESTATE)
            .map(|text| text.trim_matches([' ', '\t']))
            .filter(|text| {
                !text.is_empty()
                    && text.len() <= MAX_TRACESTATE_BYTES
                    && text.bytes().all(|b| (0x20..=0x7e).contains(&b))
            })
            .map(Box::from);
        Some(Self { parent, state })
    }

    /// The two values to send, by name: `traceparent`, and `tracestate` when there is one.
    pub fn values(&self) -> impl Iterator<Item = (&'static str, String)> + '_ {
        std::iter::once((TRACEPARENT, self.parent.to_string()))
            .chain((self.state.as_deref()).map(|state| (TRACESTATE, state.to_owned())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    fn check(text: &str, expected: Option<&str>) {
        let parsed = TraceParent::parse(text).map(|p| p.to_string());
        assert_eq!(parsed.as_deref(), expected, "{text:?}");
    }

    #[test]
    fn a_traceparent_is_read_by_the_spec_s_rules() {
        check(GOOD, Some(GOOD));
        check(&format!("  {GOOD}\t"), Some(GOOD));
        let unsampled = GOOD.replace("-01", "-00");
        check(&unsampled, Some(&unsampled));
        assert!(!TraceParent::parse(&unsampled).unwrap().sampled());
        assert!(TraceParent::parse(GOOD).unwrap().sampled());
        // A later version: its first four fields are read, more fields may follow a dash; it is
        // written back as version 00.
        check(&GOOD.replacen("00", "01", 1), Some(GOOD));
        check(
            &format!("{}-what-next", GOOD.replacen("00", "cc", 1)),
            Some(GOOD),
        );
        for bad in [
            "",
            "00",
            &GOOD.to_uppercase(),
            &GOOD.replacen("00", "ff", 1),
            &format!("{GOOD}-extra"),
            &format!("{GOOD}0"),
            &format!("{}x", GOOD.replacen("00", "cc", 1)),
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",
            "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-1",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0x",
            "00-4bf92f3577b34da6a3ce929d0e0e47-3600f067aa0ba902b7-01",
            "é0-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        ] {
            check(bad, None);
        }
    }

    #[test]
    fn tracestate_comes_only_with_a_parent_and_within_its_bounds() {
        let read = |pairs: &[(&str, &str)]| {
            Trace::read(|name| pairs.iter().find(|(n, _)| *n == name).map(|(_, v)| *v))
        };
        assert_eq!(read(&[(TRACESTATE, "a=b")]), None);
        let trace = read(&[(TRACEPARENT, GOOD), (TRACESTATE, " a=b,c=d ")]).unwrap();
        assert_eq!(trace.state.as_deref(), Some("a=b,c=d"));
        let sent: Vec<_> = trace.values().collect();
        assert_eq!(
            sent,
            [
                (TRACEPARENT, GOOD.to_owned()),
                (TRACESTATE, "a=b,c=d".to_owned())
            ]
        );
        let long = "k=".to_owned() + &"v".repeat(MAX_TRACESTATE_BYTES);
        for dropped in ["", "a=\u{1}", "a=é", long.as_str()] {
            let trace = read(&[(TRACEPARENT, GOOD), (TRACESTATE, dropped)]).unwrap();
            assert_eq!(trace.state, None, "{dropped:?}");
            assert_eq!(trace.values().count(), 1);
        }
        assert_eq!(read(&[(TRACEPARENT, "junk"), (TRACESTATE, "a=b")]), None);
    }
}
