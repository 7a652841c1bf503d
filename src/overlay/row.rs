//! One overlay entry as a [`Row`]: the JSON as written, kept whole and written back byte for
//! byte, and what the roster reads of it (its name, its keychain pointer), read once here. Reads
//! and writes no file or table.

use serde_json::Value;

/// One overlay entry: the JSON as written, kept whole (it is written back byte for byte, and an
/// entry that cannot be read is shown as it is), and what the roster reads of it, read once here
/// so no other module looks inside the JSON by key.
#[derive(Debug, Clone)]
pub struct Row {
    /// The entry as written: any JSON value, an object when it is a store entry at all.
    raw: Value,
    /// Its `name`, trimmed, when it is a string; `None` when it is missing or not a string.
    name: Option<String>,
    /// Its `token_keyring` (the key the callosum writes a pointer under), when it is a string.
    token_keyring: Option<String>,
}

impl Row {
    /// The entry as written, and what is read of it.
    pub fn new(raw: Value) -> Self {
        let text = |key: &str| raw.get(key).and_then(Value::as_str);
        let name = text("name").map(|name| name.trim().to_owned());
        let token_keyring = text("token_keyring").map(str::to_owned);
        Self {
            raw,
            name,
            token_keyring,
        }
    }

    /// Its name as written, trimmed; `None` when the entry has no name that is text.
    pub fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    /// Whether its name, trimmed, is `name`.
    pub fn is_named(&self, name: &str) -> bool {
        self.name() == Some(name)
    }

    /// The keychain pointer it holds under `token_keyring`, as written (not yet parsed).
    pub fn token_keyring(&self) -> Option<&str> {
        self.token_keyring.as_deref()
    }

    /// The key its token's environment variable is written under: `token_env`, or its alias
    /// `bearer_token_env` when only that one holds a name. For a reason that names what is in
    /// the file.
    pub fn env_key(&self) -> &'static str {
        self.written(["token_env", "bearer_token_env"])
    }

    /// The key its keychain pointer is written under: `token_keyring`, or its alias
    /// `bearer_token_keyring` when only that one holds a pointer.
    pub fn keyring_key(&self) -> &'static str {
        self.written(["token_keyring", "bearer_token_keyring"])
    }

    /// The first of `keys` that holds text that is not blank; the first key when none does.
    fn written(&self, keys: [&'static str; 2]) -> &'static str {
        keys.into_iter()
            .find(|key| {
                (self.raw.get(key))
                    .and_then(Value::as_str)
                    .is_some_and(|v| !v.trim().is_empty())
            })
            .unwrap_or(keys[0])
    }

    /// The entry read as `T`, with the path to the first value that does not fit.
    pub fn parse<T: serde::de::DeserializeOwned>(
        &self,
    ) -> Result<T, serde_path_to_error::Error<serde_json::Error>> {
        serde_path_to_error::deserialize(self.raw.clone())
    }

    /// The entry as written, for the file written back.
    pub(super) fn raw(&self) -> &Value {
        &self.raw
    }
}

/// Two rows are the same entry when they are written the same: what is read of them follows.
impl PartialEq for Row {
    fn eq(&self, other: &Self) -> bool {
        self.raw == other.raw
    }
}

/// A row is written as the JSON it was read from, so a rewrite changes no entry it keeps.
impl serde::Serialize for Row {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.raw.serialize(serializer)
    }
}

/// The rows of entries as read.
pub(super) fn rows(entries: Vec<Value>) -> Vec<Row> {
    entries.into_iter().map(Row::new).collect()
}
