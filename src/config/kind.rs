//! A store entry's `type:`, resolved once when the entry is checked: [`StoreKind`] (the types the
//! service knows, by the names the YAML gives them), [`EntryKind`] (what an entry names, known or
//! not) and [`TypeRules`] (what the config asks of a type while it reads an entry of it).
//!
//! The config knows the names only. What each type reads and how its stores are called is the
//! `store` module's: it implements [`TypeRules`], and its registry is looked up by [`StoreKind`].

use serde_json::{Map, Value};
use std::fmt;

/// A store type the service knows. Its name is the `type:` value of a store entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StoreKind {
    /// One tool of an MCP server.
    Mcp,
    /// Another callosum.
    Callosum,
    /// A SerenLoci store.
    Loci,
    /// A SerenMemory store.
    Memory,
}

impl StoreKind {
    /// Every known type, sorted by name (the order messages list them in).
    pub const ALL: [StoreKind; 4] = [Self::Mcp, Self::Callosum, Self::Loci, Self::Memory];

    /// The type's name, as a store entry's `type:` gives it.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Mcp => "mcp",
            Self::Callosum => "seren_callosum",
            Self::Loci => "seren_loci",
            Self::Memory => "seren_memory",
        }
    }

    /// The known type names, sorted.
    pub fn names() -> Vec<&'static str> {
        Self::ALL.iter().map(|kind| kind.name()).collect()
    }

    /// The type named `text` (exactly; callers trim), or the message for a type nobody knows.
    pub fn parse(text: &str) -> Result<StoreKind, String> {
        (Self::ALL.into_iter())
            .find(|kind| kind.name() == text)
            .ok_or_else(|| Self::unknown(text))
    }

    /// The message for a type nobody knows; the config, REST, MCP and the roster all say it the
    /// same way.
    pub fn unknown(text: &str) -> String {
        format!(
            "unknown store type '{text}'; known types: {:?}",
            Self::names()
        )
    }
}

impl fmt::Display for StoreKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What an entry's `type:` names. An unknown type is kept as written: the entry is still listed
/// (with its url and weight), still holds its name against a later entry of the same name, and is
/// skipped when it is bound, with [`StoreKind::unknown`]'s message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EntryKind {
    Known(StoreKind),
    Unknown(String),
}

impl EntryKind {
    /// The type named `text` (exactly; callers trim), known or not.
    pub fn parse(text: &str) -> EntryKind {
        StoreKind::parse(text).map_or_else(|_| Self::Unknown(text.to_owned()), Self::Known)
    }

    /// The name as the entry gives it.
    pub fn name(&self) -> &str {
        match self {
            Self::Known(kind) => kind.name(),
            Self::Unknown(text) => text,
        }
    }

    /// The known type, or the message for a type nobody knows.
    pub fn known(&self) -> Result<StoreKind, String> {
        match self {
            Self::Known(kind) => Ok(*kind),
            Self::Unknown(text) => Err(StoreKind::unknown(text)),
        }
    }

    /// Whether the entry names `kind`.
    pub fn is(&self, kind: StoreKind) -> bool {
        *self == Self::Known(kind)
    }
}

impl From<StoreKind> for EntryKind {
    fn from(kind: StoreKind) -> Self {
        Self::Known(kind)
    }
}

impl From<&str> for EntryKind {
    fn from(text: &str) -> Self {
        Self::parse(text)
    }
}

impl fmt::Display for EntryKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What the config asks of a store type while it reads an entry of it, so that an entry's mistakes
/// are named when the file is read (at the start, by `check`, on a reload) like the config's own.
/// The answers are the type's own: `store` implements this for [`StoreKind`].
pub trait TypeRules {
    /// The option keys the type reads; an entry's other keys are warned about.
    fn options(self) -> &'static [&'static str];
    /// Checks what the type reads of an entry's options as soon as the entry is read (an `mcp`
    /// store's mapping; an HTTP type reads its options when the store is bound). The error names
    /// the key.
    fn check_options(self, options: &Map<String, Value>) -> Result<(), String>;
}
