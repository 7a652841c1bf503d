//! What an example block shows, read back as commands and their output: `$ seren-corpus-callosum
//! ...` lines in a `text` block, `curl` lines (and `# ` answer lines under them) in a `sh` block;
//! the words of a command as a POSIX shell splits them; and what truly varies between runs
//! (ports, pids), made equal on both sides.

/// One command of an example, and what the example says it prints.
#[derive(Debug)]
pub struct Step {
    pub words: Vec<String>,
    pub output: String,
}

/// A `text` block as a terminal shows it: each `$ ` line a command, the lines under it its output.
pub fn terminal(body: &str) -> Vec<Step> {
    let mut steps: Vec<Step> = Vec::new();
    for line in body.lines() {
        if let Some(command) = line.strip_prefix("$ ") {
            steps.push(Step {
                words: words(command),
                output: String::new(),
            });
        } else {
            let step = steps
                .last_mut()
                .unwrap_or_else(|| panic!("output before any `$ ` command: {line:?}"));
            step.output.push_str(line);
            step.output.push('\n');
        }
    }
    steps
}

/// A `sh` block of commands: `\` continues a line, and the `# ` lines under a command are what it
/// answers.
pub fn script(body: &str) -> Vec<Step> {
    let joined = body.replace("\\\n", " ");
    let mut steps: Vec<Step> = Vec::new();
    for line in joined.lines().filter(|l| !l.trim().is_empty()) {
        if let Some(answer) = line.trim_start().strip_prefix('#') {
            let step = steps
                .last_mut()
                .unwrap_or_else(|| panic!("an answer before any command: {line:?}"));
            step.output
                .push_str(answer.strip_prefix(' ').unwrap_or(answer));
            step.output.push('\n');
        } else {
            steps.push(Step {
                words: words(line),
                output: String::new(),
            });
        }
    }
    steps
}

/// A command line's words, quoted and escaped as a POSIX shell reads them; a `#` that starts a
/// word starts a comment. No expansion: an example that needs one cannot be run as shown.
pub fn words(line: &str) -> Vec<String> {
    let (mut out, mut word, mut in_word) = (Vec::new(), String::new(), false);
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                for c in chars.by_ref() {
                    if c == '\'' {
                        break;
                    }
                    word.push(c);
                }
            }
            '"' => {
                in_word = true;
                while let Some(c) = chars.next() {
                    match c {
                        '"' => break,
                        '\\' => word.extend(chars.next()),
                        '$' | '`' => panic!("an expansion in {line:?}: write the value"),
                        c => word.push(c),
                    }
                }
            }
            '\\' => {
                in_word = true;
                word.extend(chars.next());
            }
            '$' | '`' | '~' | '*' | '|' | '>' | '<' | ';' | '&' => {
                panic!("{c:?} in {line:?}: the test runs commands as written, with no shell")
            }
            '#' if !in_word => break,
            c if c.is_whitespace() => {
                if in_word {
                    out.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        out.push(word);
    }
    out
}

/// A `curl` command as the test sends it.
#[derive(Debug)]
pub struct Curl {
    pub method: String,
    /// Path and query, from the url as written (its host and port are the docs', not the test's).
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Option<String>,
}

/// Reads the flags the docs use (`-s`, `-X`, `-H`, `-d`); any other is refused, so an example
/// cannot show a command the test does not run.
pub fn curl(words: &[String]) -> Curl {
    assert_eq!(words.first().map(String::as_str), Some("curl"), "{words:?}");
    let (mut method, mut url, mut headers, mut body) = (None, None, Vec::new(), None);
    let mut rest = words[1..].iter();
    while let Some(word) = rest.next() {
        let mut value = || {
            rest.next()
                .unwrap_or_else(|| panic!("{word} without a value"))
                .clone()
        };
        match word.as_str() {
            "-s" => {}
            "-X" => method = Some(value()),
            "-H" => {
                let header = value();
                let (name, v) = header.split_once(':').expect("a header is name: value");
                headers.push((name.trim().to_owned(), v.trim().to_owned()));
            }
            "-d" => body = Some(value()),
            flag if flag.starts_with('-') => panic!("curl {flag} is not run by the docs test"),
            _ => {
                assert!(url.is_none(), "two urls in {words:?}");
                url = Some(word.clone());
            }
        }
    }
    let url = url.expect("a url");
    let without_scheme = url.split_once("://").map_or(url.as_str(), |(_, rest)| rest);
    let path = without_scheme
        .find('/')
        .map_or("/", |at| &without_scheme[at..])
        .to_owned();
    let method = method.unwrap_or_else(|| if body.is_some() { "POST" } else { "GET" }.into());
    Curl {
        method,
        path,
        headers,
        body,
    }
}

/// What truly varies from run to run, made the same on both sides: a loopback port
/// (`127.0.0.1:PORT`, `localhost:PORT`) and the demo's process id in its temp folder's name.
pub fn varying(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    loop {
        let next = ["127.0.0.1:", "localhost:", "seren-corpus-callosum-demo-"]
            .iter()
            .filter_map(|needle| rest.find(needle).map(|at| (at, *needle)))
            .min();
        let Some((at, needle)) = next else {
            out.push_str(rest);
            return out;
        };
        out.push_str(&rest[..at + needle.len()]);
        rest = &rest[at + needle.len()..];
        let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        if digits > 0 {
            out.push_str(if needle.ends_with(':') { "PORT" } else { "PID" });
            rest = &rest[digits..];
        }
    }
}

/// Text as compared: trailing spaces on a line and trailing blank lines do not count.
pub fn lines(text: &str) -> String {
    let mut out: Vec<&str> = text.lines().map(str::trim_end).collect();
    while out.last().is_some_and(|l| l.is_empty()) {
        out.pop();
    }
    out.join("\n")
}

#[test]
fn commands_read_as_a_shell_reads_them() {
    assert_eq!(
        words(r#"search -c my.yaml -n 4 "that CUDA thing" 'a b'\ c # note"#),
        [
            "search",
            "-c",
            "my.yaml",
            "-n",
            "4",
            "that CUDA thing",
            "a b c"
        ]
    );
    let steps = script(
        "curl -s localhost:7423/stores -H 'content-type: application/json' \\\n     -d '{\"a\": 1}'\n# {\"ok\": true}\ncurl -s -X DELETE localhost:7423/stores/x\n",
    );
    assert_eq!(steps.len(), 2);
    assert_eq!(steps[0].output, "{\"ok\": true}\n");
    let first = curl(&steps[0].words);
    assert_eq!(
        (first.method.as_str(), first.path.as_str()),
        ("POST", "/stores")
    );
    assert_eq!(first.body.as_deref(), Some("{\"a\": 1}"));
    let second = curl(&steps[1].words);
    assert_eq!(
        (second.method.as_str(), second.path.as_str()),
        ("DELETE", "/stores/x")
    );
    assert_eq!(
        varying("http://127.0.0.1:41681 /tmp/seren-corpus-callosum-demo-18433/x localhost:7423/"),
        "http://127.0.0.1:PORT /tmp/seren-corpus-callosum-demo-PID/x localhost:PORT/"
    );
}
