//! Which hits are one document (contract §2c): a search's [`Identity`] (`none`, `key`,
//! `content`), a store's `identity_key` ([`KeyPath`]), and the [`Document`] a hit is under them.
//!
//! Fusion (§2) treats every hit as its own store's: that stays the default. With identity on,
//! hits of several stores that name one document are summed into one row; which ones do is
//! decided here and nowhere else. Summing them is `fusion`'s; this room only says "these are the
//! same". Pure: no IO, no async, and no text of a hit kept in a key longer than it must be (a
//! content key is a SHA-256 of the normal form, never the text, so it may be logged or counted).

use crate::metadata::Metadata;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fmt;
use unicode_normalization::UnicodeNormalization;

/// Which hits of a search are one document.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Identity {
    /// Every hit is its own store's (5.3.0's behaviour, and the default).
    #[default]
    None,
    /// Hits whose stores' `identity_key` values are equal strings (after trimming) are one.
    Key,
    /// Hits whose contents are equal after Unicode NFKC, case folding and collapsing whitespace
    /// are one.
    Content,
}

impl Identity {
    /// The words it is written with, in the config, on `/configure` and on a search.
    pub const WORDS: &[&str] = &["none", "key", "content"];

    /// The identity written `word`, if it is one.
    pub fn parse(word: &str) -> Option<Self> {
        match word {
            "none" => Some(Self::None),
            "key" => Some(Self::Key),
            "content" => Some(Self::Content),
            _ => None,
        }
    }

    /// Its word.
    pub fn name(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Key => "key",
            Self::Content => "content",
        }
    }

    /// Whether hits of several stores may be one document.
    pub fn is_on(self) -> bool {
        self != Self::None
    }

    /// How the hits of a store whose entry has `key` (its `identity_key`) are told apart under
    /// this identity; `None` when it is off.
    pub fn by(self, key: Option<&KeyPath>) -> Option<By> {
        match self {
            Self::None => None,
            Self::Key => Some(By::Key(key.cloned().unwrap_or(KeyPath::Id))),
            Self::Content => Some(By::Content),
        }
    }
}

/// A store's `identity_key`: the field of its hits that names the document, as a dotted path
/// into the fused hit (`id`, `content`, `metadata.<name>`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyPath {
    Id,
    Content,
    /// A metadata key (the adapter's field). A name with dots is first read as one key, then
    /// as a path into nested objects: `metadata.source.path` finds `{"source": {"path": ..}}`.
    Metadata(String),
}

impl KeyPath {
    /// Reads a path as written: `id`, `content` or `metadata.<name>` (trimmed; a name has no
    /// empty segment). The words of a refusal name the forms taken, never more of the value
    /// than 40 characters.
    pub fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim();
        match text {
            "id" => return Ok(Self::Id),
            "content" => return Ok(Self::Content),
            _ => {}
        }
        if let Some(name) = text.strip_prefix("metadata.")
            && !name.split('.').any(|segment| segment.trim().is_empty())
        {
            return Ok(Self::Metadata(name.to_owned()));
        }
        Err(format!(
            "must be id, content or metadata.<name> (a field of the store's hits), got {:?}",
            crate::text::cut(text, 40)
        ))
    }

    /// The hit's value at this path: a string (or a number, as its JSON text), trimmed; `None`
    /// when there is none or it is blank, and the hit is then its own document.
    pub fn value(&self, id: &str, content: &str, metadata: &Metadata) -> Option<String> {
        let text = match self {
            Self::Id => id.to_owned(),
            Self::Content => content.to_owned(),
            Self::Metadata(name) => match metadata_value(metadata, name)? {
                Value::String(text) => text,
                Value::Number(number) => number.to_string(),
                _ => return None,
            },
        };
        let trimmed = text.trim();
        (!trimmed.is_empty()).then(|| trimmed.to_owned())
    }
}

impl fmt::Display for KeyPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Id => f.write_str("id"),
            Self::Content => f.write_str("content"),
            Self::Metadata(name) => write!(f, "metadata.{name}"),
        }
    }
}

/// The value under `name` in `metadata`: the key itself, else the path its dots spell.
fn metadata_value(metadata: &Metadata, name: &str) -> Option<Value> {
    if let Some(value) = metadata.get(name) {
        return Some(value);
    }
    let mut segments = name.split('.');
    let mut value = metadata.get(segments.next()?)?;
    for segment in segments {
        value = match value {
            Value::Object(mut map) => map.remove(segment)?,
            _ => return None,
        };
    }
    Some(value)
}

/// How one store's hits are told apart in a search with identity on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum By {
    /// By the value at the store's `identity_key`.
    Key(KeyPath),
    /// By the content's normal form.
    Content,
}

impl By {
    /// The document a hit is, or `None` when it is its own (no key, or blank).
    pub fn document(&self, id: &str, content: &str, metadata: &Metadata) -> Option<Document> {
        match self {
            Self::Key(path) => path
                .value(id, content, metadata)
                .map(|key| Document::Key(key.into_boxed_str())),
            Self::Content => {
                let normal = normal_form(content);
                (!normal.is_empty()).then(|| Document::Content(digest(&normal)))
            }
        }
    }
}

/// The document a hit is: equal documents are one.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Document {
    /// An `identity_key` value, trimmed.
    Key(Box<str>),
    /// The SHA-256 of a content's normal form ([`normal_form`]).
    Content([u8; 32]),
}

impl Document {
    /// The document's key as `eval` writes it (a run file's docid, a judgment's `identity`): a
    /// key as is, a content as `sha256:` and its digest in hex.
    pub fn key(&self) -> String {
        match self {
            Self::Key(key) => key.to_string(),
            Self::Content(digest) => {
                let mut out = String::from("sha256:");
                for byte in digest {
                    out.push_str(&format!("{byte:02x}"));
                }
                out
            }
        }
    }
}

impl fmt::Display for Document {
    /// What a log line may show: a key as is (it is the store's own id or path), a content only
    /// as its digest's first bytes, in hex.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Key(key) => write!(f, "key {key:?}"),
            Self::Content(digest) => {
                f.write_str("content sha256:")?;
                digest[..8].iter().try_for_each(|b| write!(f, "{b:02x}"))
            }
        }
    }
}

/// A content's normal form: Unicode NFKC (compatibility forms folded: ligatures, full-width
/// letters, superscripts), then case folded, then every run of whitespace one space, trimmed.
///
/// Case folding is full folding as the standard library's case mappings give it: each
/// character upper-cased, then lower-cased, char by char (so `ß` and `ss`, `ς` and `σ`, `K`
/// (Kelvin) and `k` fold alike), then composed again (NFC), since a mapping can leave a base
/// letter and a combining mark apart.
pub fn normal_form(text: &str) -> String {
    let folded: String = (text.nfkc())
        .flat_map(char::to_uppercase)
        .flat_map(char::to_lowercase)
        .nfc()
        .collect();
    folded.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The SHA-256 of `text`.
fn digest(text: &str) -> [u8; 32] {
    let digest = ring::digest::digest(&ring::digest::SHA256, text.as_bytes());
    let mut out = [0; 32];
    out.copy_from_slice(digest.as_ref());
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn metadata(value: Value) -> Metadata {
        Metadata::from_map(value.as_object().unwrap())
    }

    #[test]
    fn a_key_path_is_id_content_or_a_metadata_name() {
        assert_eq!(KeyPath::parse("id"), Ok(KeyPath::Id));
        assert_eq!(KeyPath::parse(" content "), Ok(KeyPath::Content));
        assert_eq!(
            KeyPath::parse("metadata.path"),
            Ok(KeyPath::Metadata("path".into()))
        );
        assert_eq!(
            KeyPath::parse("metadata.source.path").unwrap().to_string(),
            "metadata.source.path"
        );
        for bad in [
            "",
            "metadata",
            "metadata.",
            "metadata..x",
            "meta.path",
            "ID",
            "path",
        ] {
            let why = KeyPath::parse(bad).unwrap_err();
            assert!(
                why.starts_with("must be id, content or metadata.<name>"),
                "{bad}: {why}"
            );
        }
    }

    #[test]
    fn a_key_is_the_trimmed_string_or_number_at_its_path() {
        let m = metadata(json!({"path": "  notes/a.md ", "n": 42, "blank": "  ",
            "list": [1], "source": {"path": "deep"}, "a.b": "dotted"}));
        let at = |path: &str| KeyPath::parse(path).unwrap().value(" id-1 ", "text", &m);
        assert_eq!(at("id").as_deref(), Some("id-1"));
        assert_eq!(at("content").as_deref(), Some("text"));
        assert_eq!(at("metadata.path").as_deref(), Some("notes/a.md"));
        assert_eq!(at("metadata.n").as_deref(), Some("42"));
        assert_eq!(at("metadata.source.path").as_deref(), Some("deep"));
        assert_eq!(at("metadata.a.b").as_deref(), Some("dotted"));
        assert_eq!(at("metadata.blank"), None);
        assert_eq!(at("metadata.list"), None);
        assert_eq!(at("metadata.missing"), None);
        assert_eq!(at("metadata.path.deeper"), None);
    }

    #[test]
    fn contents_that_differ_only_in_compatibility_forms_case_or_whitespace_are_one() {
        let same = [
            "The Straße  café",
            "the strasse café",
            "THE STRASSE CAFÉ",
            // Decomposed é, a full-width T, a tab and a no-break space.
            "\u{FF34}he\tstrasse\u{00A0}cafe\u{0301}",
            "  the strasse\n\ncafé ",
        ];
        let by = By::Content;
        let key = |text: &str| by.document("x", text, &Metadata::default());
        for text in same {
            assert_eq!(key(text), key(same[0]), "{text:?}");
        }
        assert_eq!(normal_form(same[0]), "the strasse café");
        assert_eq!(normal_form("ﬁle ² ΣΑΣ"), "file 2 σασ");
        for other in ["the strasse cafe", "the strasse café.", "a strasse café"] {
            assert_ne!(key(other), key(same[0]), "{other:?}");
        }
        // Nothing to compare: its own.
        assert_eq!(key(" \n "), None);
    }

    #[test]
    fn a_content_key_shows_only_its_digest() {
        let key = By::Content
            .document("x", "a secret note", &Metadata::default())
            .unwrap();
        let shown = key.to_string();
        assert!(shown.starts_with("content sha256:"), "{shown}");
        assert_eq!(shown.len(), "content sha256:".len() + 16);
        assert!(!shown.contains("secret"));
    }

    #[test]
    fn identity_reads_its_words_and_defaults_a_key_to_the_id() {
        for word in Identity::WORDS {
            assert_eq!(Identity::parse(word).unwrap().name(), *word);
        }
        assert_eq!(Identity::parse("Key"), None);
        assert_eq!(Identity::None.by(None), None);
        assert_eq!(Identity::Key.by(None), Some(By::Key(KeyPath::Id)));
        assert_eq!(Identity::Content.by(Some(&KeyPath::Id)), Some(By::Content));
    }
}
