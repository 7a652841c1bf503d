//! Text fit for messages, logs and terminals: cut short, escaped, or stripped of what would act on
//! a terminal, and serde's messages without the values they quote. One owner for each way text from
//! elsewhere (a store, a header, a config name) is made safe to show.

/// `text` cut to at most `max` characters, with `...` when something was cut.
pub fn cut(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_owned(),
        Some((end, _)) => format!("{}...", &text[..end]),
    }
}

/// Text fit to quote in a message or a log line: printable ASCII as is, anything else (a newline,
/// a bidi control, a tag) as `\u{..}`, cut at 80 characters.
pub fn escaped(text: &str) -> String {
    let mut out = String::from("'");
    for (i, c) in text.chars().enumerate() {
        if i == 80 {
            out.push_str("...");
            break;
        }
        if c.is_ascii_graphic() || c == ' ' {
            out.push(c);
        } else {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        }
    }
    out.push('\'');
    out
}

/// A search's query as its log line shows it (with `server.log_queries`): cut, then escaped.
/// The REST request line and the MCP tool call's both go through here.
pub fn logged_query(query: &str) -> String {
    escaped(&cut(query, 200))
}

/// Milliseconds, to two decimals, as log lines give a request's time.
pub fn millis(elapsed: std::time::Duration) -> f64 {
    (elapsed.as_secs_f64() * 1000.0 * 100.0).round() / 100.0
}

/// Text fit for a terminal: a control character (an escape sequence that sets the title or writes
/// the clipboard, a carriage return that overwrites the line) or a bidi override becomes a space,
/// so what a store sends cannot act on the terminal or fake a line of output.
pub fn printable(text: &str) -> String {
    text.chars()
        .map(|c| {
            let bidi = matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}');
            if c.is_control() || bidi { ' ' } else { c }
        })
        .collect()
}

/// serde's messages quote the value they met (`invalid type: string "x", expected f64`, `invalid
/// value: integer `7`, ...`, `unknown variant `x``); this keeps the kind and drops the value.
pub fn without_values(message: &str) -> String {
    for prefix in ["invalid type: ", "invalid value: "] {
        if let Some(rest) = message.strip_prefix(prefix) {
            // serde writes "<unexpected>, expected <what>"; the expected part is ours.
            let (unexpected, expected) = match rest.rfind(", expected ") {
                Some(at) => (&rest[..at], &rest[at..]),
                None => (rest, ""),
            };
            let kind = unexpected
                .split(['"', '`'])
                .next()
                .unwrap_or_default()
                .trim();
            return format!("{prefix}{kind}{expected}");
        }
    }
    if message.starts_with("unknown variant") || message.starts_with("unknown field") {
        return message
            .split(", expected")
            .next()
            .map_or_else(String::new, |head| {
                head.split('`').next().unwrap_or_default().trim().to_owned()
            });
    }
    // Syntax errors, "missing field", "nested deeper than", "number out of range" and the like
    // name no value. Anything else is cut short, to be safe.
    cut(message, 120)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cut_escape_and_print() {
        assert_eq!(cut("abcdef", 3), "abc...");
        assert_eq!(cut("abc", 3), "abc");
        assert_eq!(cut("ééé", 2), "éé...");
        assert_eq!(escaped("a\nb\u{202e}"), "'a\\u{a}b\\u{202e}'");
        assert_eq!(printable("a\u{1b}]0;x\u{7}\rb"), "a ]0;x  b");
    }
}
