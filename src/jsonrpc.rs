//! JSON-RPC framing in front of rmcp: the answers rmcp leaves out, so a client never waits forever
//! on a message it got wrong, over stdio or at `/mcp`.
//!
//! rmcp (3.11) ignores a stdio line that is not JSON, drops a line over its length cap, and
//! answers a `tools/call` whose `arguments` is not an object with -32601 (method not found), over
//! stdio and HTTP alike; a batch or an object id gets no JSON-RPC answer at all. JSON-RPC 2.0
//! says a parse error is answered -32700 (with a null id), an invalid request -32600 (a batch,
//! which MCP no longer takes, or an id that is not a string or a number), and invalid params
//! -32602. [`judge`] decides about one message; over
//! stdio, [`read_host`] and [`write_host`] read stdin a line at a time, answer those cases
//! themselves, pass every other line to rmcp unchanged, and merge rmcp's lines and their own onto
//! stdout whole, so the two never interleave inside a line; `http.rs` puts [`judge`] in front of
//! `/mcp` posts. This module does not speak MCP: it knows only JSON-RPC.

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

/// The longest line read from the host; longer lines are answered -32600 and skipped.
pub const MAX_LINE: usize = crate::limits::MAX_STDIO_LINE;

/// What to do with one line from the host.
#[derive(Debug, PartialEq)]
pub enum Line {
    /// Pass it to the MCP server as is.
    Forward,
    /// Nothing to do (a blank line).
    Skip,
    /// Answer it with this JSON-RPC error, here.
    Answer(Value),
}

/// Decides about one whole line (without its newline).
pub fn judge(line: &[u8]) -> Line {
    if line.iter().all(u8::is_ascii_whitespace) {
        return Line::Skip;
    }
    let message: Value = match serde_json::from_slice(line) {
        Ok(message) => message,
        Err(e) => {
            return Line::Answer(error(
                Value::Null,
                -32700,
                &format!(
                    "Parse error: {}",
                    e.to_string().split(" at line ").next().unwrap_or("")
                ),
            ));
        }
    };
    // One message is one object (MCP 2025-06-18 removed JSON-RPC batches), and its id, when it has
    // one, a string or a number (JSON-RPC 2.0, section 4): anything else is an invalid request,
    // answered with a null id (section 5).
    let Some(object) = message.as_object() else {
        let why = if message.is_array() {
            "Invalid Request: a batch (a JSON array) is not accepted; send one message at a time"
        } else {
            "Invalid Request: a message is a JSON object"
        };
        return Line::Answer(error(Value::Null, -32600, why));
    };
    if object
        .get("id")
        .is_some_and(|id| !(id.is_string() || id.is_number() || id.is_null()))
    {
        return Line::Answer(error(
            Value::Null,
            -32600,
            "Invalid Request: id must be a string or a number",
        ));
    }
    let is_call = message.get("method").and_then(Value::as_str) == Some("tools/call");
    let arguments = message.get("params").and_then(|p| p.get("arguments"));
    // A message without an id is a notification, which is never answered.
    if let Some(id) = message.get("id").filter(|_| is_call)
        && arguments.is_some_and(|a| !a.is_object() && !a.is_null())
    {
        return Line::Answer(error(
            id.clone(),
            -32602,
            "Invalid params: tools/call arguments must be a JSON object",
        ));
    }
    Line::Forward
}

/// The answer to a line over [`MAX_LINE`], from the part that was read: its id when the line
/// names one early, as clients write `{"jsonrpc", "id", "method", ...}`.
pub fn too_long(prefix: &[u8]) -> Value {
    error(
        leading_id(prefix),
        -32600,
        &format!("Invalid Request: the message is over the {MAX_LINE}-byte line limit"),
    )
}

fn error(id: Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

/// The top-level `id` of a JSON object that may be cut short, found by walking its members until
/// `id` (a number, a string or null) or the end of what is there.
fn leading_id(text: &[u8]) -> Value {
    let mut i = skip_space(text, 0);
    if text.get(i) != Some(&b'{') {
        return Value::Null;
    }
    i += 1;
    loop {
        i = skip_space(text, i);
        let Some(key_end) = string_end(text, i) else {
            return Value::Null;
        };
        let key = &text[i..key_end];
        i = skip_space(text, key_end);
        if text.get(i) != Some(&b':') {
            return Value::Null;
        }
        i = skip_space(text, i + 1);
        let Some(value_end) = value_end(text, i) else {
            return Value::Null;
        };
        if key == b"\"id\"" {
            return serde_json::from_slice::<Value>(&text[i..value_end])
                .ok()
                .filter(|v| v.is_number() || v.is_string())
                .unwrap_or(Value::Null);
        }
        i = skip_space(text, value_end);
        match text.get(i) {
            Some(b',') => i += 1,
            _ => return Value::Null,
        }
    }
}

fn skip_space(text: &[u8], mut i: usize) -> usize {
    while text.get(i).is_some_and(u8::is_ascii_whitespace) {
        i += 1;
    }
    i
}

/// The end (one past the closing quote) of the string starting at `i`.
fn string_end(text: &[u8], i: usize) -> Option<usize> {
    if text.get(i) != Some(&b'"') {
        return None;
    }
    let mut j = i + 1;
    while j < text.len() {
        match text[j] {
            b'\\' => j += 2,
            b'"' => return Some(j + 1),
            _ => j += 1,
        }
    }
    None
}

/// The end of the JSON value starting at `i`, if all of it is there.
fn value_end(text: &[u8], i: usize) -> Option<usize> {
    match text.get(i)? {
        b'"' => string_end(text, i),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut j = i;
            while j < text.len() {
                match text[j] {
                    b'"' => {
                        j = string_end(text, j)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(j + 1);
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
            None
        }
        _ => {
            let end = text[i..]
                .iter()
                .position(|b| matches!(b, b',' | b'}' | b']') || b.is_ascii_whitespace())
                .map(|n| i + n)?;
            Some(end)
        }
    }
}

/// Reads the host's lines from `input`, answering what [`judge`] answers through `answers` and
/// writing every other line to `server` (the MCP server's input). Returns at end of input, after
/// which `server` is dropped and the server sees the end too.
pub async fn read_host<R, W>(input: R, mut server: W, answers: mpsc::Sender<Value>)
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut input = BufReader::new(input);
    let mut line = Vec::new();
    loop {
        line.clear();
        // Two bytes past the cap (for `\r\n`) tell a long line from one exactly at it.
        let read = (&mut input)
            .take(MAX_LINE as u64 + 2)
            .read_until(b'\n', &mut line)
            .await;
        match read {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let ended = line.last() == Some(&b'\n');
        let text = line.strip_suffix(b"\n").unwrap_or(&line);
        let text = text.strip_suffix(b"\r").unwrap_or(text);
        if text.len() > MAX_LINE || (!ended && line.len() > MAX_LINE) {
            // A host that never reads its answers holds this filter here, not its memory.
            if answers.send(too_long(text)).await.is_err() {
                return;
            }
            // Read over the rest of the long line, unless it all came.
            if !ended && !skip_line(&mut input).await {
                return;
            }
            continue;
        }
        match judge(text) {
            Line::Skip => {}
            Line::Answer(answer) => {
                if answers.send(answer).await.is_err() {
                    return;
                }
            }
            Line::Forward => {
                let written = async {
                    server.write_all(text).await?;
                    server.write_all(b"\n").await?;
                    server.flush().await
                };
                if written.await.is_err() {
                    return;
                }
            }
        }
    }
}

/// Reads over the rest of a line; false at the end of input.
async fn skip_line<R: AsyncRead + Unpin>(input: &mut BufReader<R>) -> bool {
    loop {
        let buffer = match input.fill_buf().await {
            Ok([]) | Err(_) => return false,
            Ok(buffer) => buffer,
        };
        match buffer.iter().position(|b| *b == b'\n') {
            Some(at) => {
                input.consume(at + 1);
                return true;
            }
            None => {
                let all = buffer.len();
                input.consume(all);
            }
        }
    }
}

/// Writes the server's lines (read from `server`) and this filter's answers to `output`, each
/// whole. Ends when the server's output ends and no answer is left to send.
pub async fn write_host<R, W>(server: R, mut output: W, mut answers: mpsc::Receiver<Value>)
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut server = BufReader::new(server);
    let mut line = Vec::new();
    let mut server_open = true;
    let mut answers_open = true;
    while server_open || answers_open {
        tokio::select! {
            read = server.read_until(b'\n', &mut line), if server_open => {
                match read {
                    Ok(0) | Err(_) => server_open = false,
                    Ok(_) => {
                        if output.write_all(&line).await.is_err() || output.flush().await.is_err() {
                            return;
                        }
                        line.clear();
                    }
                }
            }
            answer = answers.recv(), if answers_open => {
                match answer {
                    None => answers_open = false,
                    Some(answer) => {
                        let mut text = answer.to_string().into_bytes();
                        text.push(b'\n');
                        if output.write_all(&text).await.is_err() || output.flush().await.is_err() {
                            return;
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_judged() {
        assert_eq!(judge(b"   "), Line::Skip);
        assert_eq!(
            judge(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#),
            Line::Forward
        );
        let Line::Answer(parse) = judge(b"{not json") else {
            panic!("a parse error is answered")
        };
        assert_eq!(parse["id"], Value::Null);
        assert_eq!(parse["error"]["code"], -32700);
        let Line::Answer(params) = judge(
            br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"search","arguments":"jetpack"}}"#,
        ) else {
            panic!("non-object arguments are answered")
        };
        assert_eq!(params["id"], 7);
        assert_eq!(params["error"]["code"], -32602);
        for (invalid, words) in [
            (
                br#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#.as_slice(),
                "batch",
            ),
            (
                br#"{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}"#,
                "id must be",
            ),
            (
                br#"{"jsonrpc":"2.0","id":[1],"method":"ping"}"#,
                "id must be",
            ),
            (
                br#"{"jsonrpc":"2.0","id":true,"method":"ping"}"#,
                "id must be",
            ),
            (br#""ping""#, "a JSON object"),
        ] {
            let Line::Answer(answer) = judge(invalid) else {
                panic!("{} is answered", String::from_utf8_lossy(invalid))
            };
            assert_eq!(answer["id"], Value::Null);
            assert_eq!(answer["error"]["code"], -32600);
            let message = answer["error"]["message"].as_str().unwrap();
            assert!(message.contains(words), "{message}");
        }
        for ok in [
            br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"list_stores"}}"#.as_slice(),
            br#"{"jsonrpc":"2.0","id":"seven","method":"ping"}"#,
            br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x","arguments":null}}"#,
            br#"{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{"arguments":5}}"#,
            // A notification is never answered, however wrong.
            br#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"x","arguments":5}}"#,
        ] {
            assert_eq!(judge(ok), Line::Forward);
        }
    }

    /// Runs `input` through [`read_host`]: what reaches the server, and what is answered.
    async fn framed(input: Vec<u8>) -> (Vec<u8>, Vec<Value>) {
        let (to_server, mut server) = tokio::io::duplex(8 * MAX_LINE);
        let (answers, mut answered) = mpsc::channel(64);
        read_host(&input[..], to_server, answers).await;
        let mut forwarded = Vec::new();
        server.read_to_end(&mut forwarded).await.unwrap();
        let mut all = Vec::new();
        while let Ok(answer) = answered.try_recv() {
            all.push(answer);
        }
        (forwarded, all)
    }

    #[tokio::test]
    async fn lines_at_and_past_the_limit() {
        let at = |end: &[u8]| {
            let mut line = br#"{"id":1,"x":""#.to_vec();
            line.resize(MAX_LINE - 2, b'x');
            line.extend(br#""}"#);
            line.extend(end);
            line
        };
        // Exactly at the limit, with `\n` or `\r\n`: passed on; the next line too.
        for end in [&b"\n"[..], b"\r\n"] {
            let mut input = at(end);
            input.extend(b"{\"id\":2}\n");
            let (forwarded, answers) = framed(input).await;
            assert!(answers.is_empty(), "{answers:?}");
            assert_eq!(forwarded.len(), MAX_LINE + 1 + 9);
        }
        // One byte over, ended: answered, and the next line is still read.
        let mut over = at(b"");
        over.insert(10, b' ');
        over.extend(b"\n{\"id\":2}\n");
        let (forwarded, answers) = framed(over).await;
        assert_eq!(answers.len(), 1);
        assert_eq!(answers[0]["id"], 1);
        assert_eq!(forwarded, b"{\"id\":2}\n");
        // A last line without a newline is passed on with one.
        let (forwarded, _) = framed(b"{\"id\":3}".to_vec()).await;
        assert_eq!(forwarded, b"{\"id\":3}\n");
    }

    #[test]
    fn the_id_of_a_cut_message_is_found_when_it_comes_early() {
        for (prefix, id) in [
            (
                r#"{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"arguments":{"query":"xxxx"#,
                json!(42),
            ),
            (
                r#"{ "jsonrpc" : "2.0" , "id" : "a\"b" , "params": [1, {"x": "}"}"#,
                json!("a\"b"),
            ),
            (
                r#"{"method":"tools/call","params":{"id":9,"a":[1,2,3]},"id":3,"x":"y"#,
                json!(3),
            ),
            (
                r#"{"method":"tools/call","params":{"arguments":{"query":"xxxx"#,
                Value::Null,
            ),
            (r#"[1,2"#, Value::Null),
            ("", Value::Null),
        ] {
            assert_eq!(too_long(prefix.as_bytes())["id"], id, "{prefix}");
        }
        assert_eq!(too_long(b"{")["error"]["code"], -32600);
    }
}
