//! The Markdown as GitHub reads it, as far as the docs tests need: fenced blocks and the example
//! marks before them, headings and their anchors (GitHub's slug rules), and relative links. Pure:
//! text in, findings out.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// One Markdown file of the repository.
pub struct Page {
    /// Relative to the repository root, with `/` (as it is linked).
    pub path: String,
    pub text: String,
}

impl Page {
    pub fn read(root: &Path, path: &str) -> Self {
        let text = std::fs::read_to_string(root.join(path))
            .unwrap_or_else(|e| panic!("cannot read {path}: {e}"));
        Self {
            path: path.to_owned(),
            text,
        }
    }
}

/// A fenced code block.
#[derive(Clone, Debug)]
pub struct Block {
    /// `README.md:42`: the page and the line of the opening fence.
    pub at: String,
    /// The info string's first word (`json`, `sh`, ...), or "".
    pub lang: String,
    /// The lines between the fences, each with its newline.
    pub body: String,
    /// The name of the `<!-- example: NAME -->` on the line before the fence (blank lines may
    /// stand between).
    pub mark: Option<String>,
}

/// The README and every page under docs/: the pages whose examples are checked.
pub fn doc_pages(root: &Path) -> Vec<Page> {
    let mut paths = vec!["README.md".to_owned()];
    let mut docs: Vec<String> = std::fs::read_dir(root.join("docs"))
        .expect("a docs/ folder")
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".md"))
        .map(|name| format!("docs/{name}"))
        .collect();
    docs.sort();
    paths.extend(docs);
    paths.iter().map(|path| Page::read(root, path)).collect()
}

/// Every Markdown file of the repository but what tools bring (`target/`, `node_modules/`,
/// hidden folders): the pages whose links are checked.
pub fn all_pages(root: &Path) -> Vec<Page> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        entries.sort();
        for path in entries {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if path.is_dir() {
                if !(name.starts_with('.') || name == "target" || name == "node_modules") {
                    walk(root, &path, out);
                }
            } else if name.ends_with(".md") {
                let relative = path.strip_prefix(root).unwrap();
                out.push(relative.to_string_lossy().replace('\\', "/"));
            }
        }
    }
    let mut paths = Vec::new();
    walk(root, root, &mut paths);
    paths.iter().map(|path| Page::read(root, path)).collect()
}

/// The name in `<!-- example: NAME -->`, when `line` is such a mark.
pub fn mark_in(line: &str) -> Option<&str> {
    let inner = line
        .trim()
        .strip_prefix("<!--")?
        .strip_suffix("-->")?
        .trim();
    Some(inner.strip_prefix("example:")?.trim())
}

/// An opening or closing fence: its info string.
fn fence(line: &str) -> Option<&str> {
    let indent = line.len() - line.trim_start_matches(' ').len();
    (indent <= 3)
        .then(|| line.trim_start().strip_prefix("```"))
        .flatten()
}

/// Whether line `i` is inside a fenced block (the fences themselves count as inside).
fn fenced_lines(lines: &[&str]) -> Vec<bool> {
    let mut inside = false;
    lines
        .iter()
        .map(|line| {
            if fence(line).is_some() {
                inside = !inside;
                true
            } else {
                inside
            }
        })
        .collect()
}

/// The page's fenced blocks, and what is wrong with its marks and code blocks: a mark with no
/// block after it, a fence left open, an indented code block (an example hides there unseen).
pub fn blocks(page: &Page) -> (Vec<Block>, Vec<String>) {
    let lines: Vec<&str> = page.text.lines().collect();
    let (mut blocks, mut problems) = (Vec::new(), Vec::new());
    let mut i = 0;
    while i < lines.len() {
        let at = format!("{}:{}", page.path, i + 1);
        if let Some(info) = fence(lines[i]) {
            let lang = info.split_whitespace().next().unwrap_or("").to_owned();
            let mark = lines[..i]
                .iter()
                .rev()
                .find(|l| !l.trim().is_empty())
                .and_then(|l| mark_in(l))
                .map(str::to_owned);
            let mut body = String::new();
            let mut j = i + 1;
            while j < lines.len() && fence(lines[j]).is_none_or(|rest| !rest.trim().is_empty()) {
                body.push_str(lines[j]);
                body.push('\n');
                j += 1;
            }
            if j == lines.len() {
                problems.push(format!("{at}: a fenced block that is never closed"));
            }
            blocks.push(Block {
                at,
                lang,
                body,
                mark,
            });
            i = j + 1;
            continue;
        }
        if mark_in(lines[i]).is_some() {
            let next = lines[i + 1..].iter().find(|l| !l.trim().is_empty());
            if next.is_none_or(|l| fence(l).is_none()) {
                problems.push(format!(
                    "{at}: an example mark with no fenced block after it"
                ));
            }
        }
        if is_indented_code(&lines, i) {
            problems.push(format!(
                "{at}: an indented code block; fence it (```text ...), so the docs tests see it"
            ));
        }
        i += 1;
    }
    (blocks, problems)
}

/// Whether line `i` starts an indented code block: four spaces in, after a blank line, under a
/// paragraph or heading that is not inside a list (list text goes on indented).
fn is_indented_code(lines: &[&str], i: usize) -> bool {
    let indent = |l: &str| l.len() - l.trim_start().len();
    let line = lines[i];
    if line.trim().is_empty() || !(line.starts_with("    ") || line.starts_with('\t')) {
        return false;
    }
    if i == 0 || !lines[i - 1].trim().is_empty() {
        return false;
    }
    let Some(above) = lines[..i].iter().rev().find(|l| !l.trim().is_empty()) else {
        return true;
    };
    let list_item = {
        let t = above.trim_start();
        t.starts_with("- ")
            || t.starts_with("* ")
            || t.starts_with("+ ")
            || t.split_once(". ")
                .is_some_and(|(n, _)| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
    };
    indent(above) < 2 && !list_item
}

/// The anchors a page offers: every heading's slug (GitHub's rules, `-1`, `-2` ... for repeats)
/// and every `<a id="...">` / `<a name="...">`.
pub fn anchors(page: &Page) -> BTreeSet<String> {
    let lines: Vec<&str> = page.text.lines().collect();
    let fenced = fenced_lines(&lines);
    let mut seen = std::collections::HashMap::<String, usize>::new();
    let mut anchors = BTreeSet::new();
    for (line, fenced) in lines.iter().zip(fenced) {
        if fenced {
            continue;
        }
        if let Some(heading) = heading(line) {
            let slug = slug(heading);
            let count = seen.entry(slug.clone()).or_insert(0);
            anchors.insert(if *count == 0 {
                slug.clone()
            } else {
                format!("{slug}-{count}")
            });
            *count += 1;
        }
        for attr in ["id=\"", "name=\""] {
            for (at, _) in line.match_indices(&format!("<a {attr}")) {
                let rest = &line[at + 3 + attr.len()..];
                if let Some(end) = rest.find('"') {
                    anchors.insert(rest[..end].to_owned());
                }
            }
        }
    }
    anchors
}

/// The text of an ATX heading (`## Text ##`), when the line is one.
fn heading(line: &str) -> Option<&str> {
    let hashes = line.len() - line.trim_start_matches('#').len();
    if !(1..=6).contains(&hashes) {
        return None;
    }
    let rest = &line[hashes..];
    if !(rest.is_empty() || rest.starts_with(' ')) {
        return None;
    }
    Some(rest.trim().trim_end_matches('#').trim_end())
}

/// GitHub's anchor for a heading: the rendered text (code spans, emphasis and links reduced to
/// their words), lower-cased, every character that is not a letter, a digit, `-`, `_` or a space
/// dropped, and each space a `-`.
pub fn slug(heading: &str) -> String {
    let mut text = String::new();
    let mut rest = heading;
    // A link shows its text only: `[words](target)` -> `words`.
    while let Some(open) = rest.find('[') {
        let Some(close) = rest[open..].find("](").map(|c| open + c) else {
            break;
        };
        let Some(end) = rest[close..].find(')').map(|e| close + e) else {
            break;
        };
        text.push_str(&rest[..open]);
        text.push_str(&rest[open + 1..close]);
        rest = &rest[end + 1..];
    }
    text.push_str(rest);
    text.to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            '-' | '_' => Some(c),
            c if c.is_alphanumeric() => Some(c),
            _ => None,
        })
        .collect()
}

/// A relative link: where it is, and its target as written.
pub struct Link {
    pub at: String,
    pub target: String,
}

/// The page's relative links (`[text](target)`, images too), outside code blocks and code spans;
/// links with a scheme (`https:`, `mailto:`) are not ours to check.
pub fn relative_links(page: &Page) -> Vec<Link> {
    let lines: Vec<&str> = page.text.lines().collect();
    let fenced = fenced_lines(&lines);
    let mut links = Vec::new();
    for (n, (line, fenced)) in lines.iter().zip(fenced).enumerate() {
        if fenced {
            continue;
        }
        let text = without_code_spans(line);
        let mut rest = text.as_str();
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            // The target ends at the `)` that closes the one `(` opened here.
            let mut depth = 1;
            let end = after.char_indices().find_map(|(i, c)| {
                match c {
                    '(' => depth += 1,
                    ')' => depth -= 1,
                    _ => {}
                }
                (depth == 0).then_some(i)
            });
            let Some(end) = end else { break };
            let target = after[..end].split_whitespace().next().unwrap_or("");
            let target = target.trim_start_matches('<').trim_end_matches('>');
            if !target.contains("://") && !target.starts_with("mailto:") {
                links.push(Link {
                    at: format!("{}:{}", page.path, n + 1),
                    target: target.to_owned(),
                });
            }
            rest = &after[end..];
        }
    }
    links
}

/// The line with every `` `code span` `` blanked out (a link written in one is text).
fn without_code_spans(line: &str) -> String {
    let mut out = String::new();
    let mut in_code = false;
    for c in line.chars() {
        if c == '`' {
            in_code = !in_code;
            out.push(' ');
        } else {
            out.push(if in_code { ' ' } else { c });
        }
    }
    out
}

/// `base/../x/./y` made plain, without touching the file system; `None` when it climbs above the
/// root.
pub fn normalized(path: &Path) -> Option<PathBuf> {
    let mut parts: Vec<&std::ffi::OsStr> = Vec::new();
    for part in path.components() {
        match part {
            std::path::Component::ParentDir => {
                parts.pop()?;
            }
            std::path::Component::CurDir => {}
            other => parts.push(other.as_os_str()),
        }
    }
    Some(parts.iter().collect())
}

#[test]
fn slugs_follow_github() {
    for (heading, expected) in [
        ("Why Reciprocal Rank Fusion", "why-reciprocal-rank-fusion"),
        (
            "The packet: pages, seats, authority, edges, hops",
            "the-packet-pages-seats-authority-edges-hops",
        ),
        (
            "Fanning any MCP server (`mcp`)",
            "fanning-any-mcp-server-mcp",
        ),
        (
            "Live knobs: `/configure` and `/knobs`",
            "live-knobs-configure-and-knobs",
        ),
        ("The Bridge (web viewer)", "the-bridge-web-viewer"),
        (
            "A tree of callosums (2026-12-01)",
            "a-tree-of-callosums-2026-12-01",
        ),
        (
            "`seren_memory` and [its](x.md) *store*",
            "seren_memory-and-its-store",
        ),
        ("Searching: `POST /search`", "searching-post-search"),
    ] {
        assert_eq!(slug(heading), expected, "{heading}");
    }
}

#[test]
fn indented_code_is_found_and_list_text_is_not() {
    let page = |text: &str| Page {
        path: "x.md".to_owned(),
        text: text.to_owned(),
    };
    let (_, problems) = blocks(&page("A paragraph:\n\n    some output\n"));
    assert_eq!(problems.len(), 1, "{problems:?}");
    let (_, problems) = blocks(&page(
        "- an item\n  - a nested item\n\n    its second paragraph\n",
    ));
    assert!(problems.is_empty(), "{problems:?}");
    let (blocks, problems) = blocks(&page(
        "<!-- example: one -->\n```json\n{}\n```\n\n<!-- example: two -->\ntext\n",
    ));
    assert_eq!(blocks[0].mark.as_deref(), Some("one"));
    assert_eq!(problems.len(), 1, "{problems:?}");
}
