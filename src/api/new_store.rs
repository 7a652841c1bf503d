//! What a new store's keys say (`POST /stores`, `add_store`): the keys every store type takes, the
//! first key given that none takes, an `mcp` store's mapping as store options, and a program key
//! (read only to be refused). Checking them is `roster::check_new_store`'s.

use super::stores::{NewMcpStore, NewStore};

impl NewStore {
    /// The keys every store added at run time may carry.
    pub const KEYS: &[&str] = &[
        "name",
        "type",
        "url",
        "weight",
        "floor",
        "token",
        "description",
        "identity_key",
    ];

    /// The first key given that is not taken here, if any.
    pub fn unknown_key(&self) -> Option<&str> {
        self.unknown.keys().next().map(String::as_str)
    }
}

impl NewMcpStore {
    /// The mapping keys that were given, as store options.
    pub fn options(&self) -> serde_json::Map<String, serde_json::Value> {
        let mut options = serde_json::Map::new();
        let text = [
            ("preset", &self.preset),
            ("tool", &self.tool),
            ("query_arg", &self.query_arg),
            ("limit_arg", &self.limit_arg),
            ("shape", &self.shape),
            ("hits", &self.hits),
            ("id", &self.id),
            ("content", &self.content),
            ("score", &self.score),
            ("distance", &self.distance),
        ];
        for (key, value) in text {
            if let Some(value) = value {
                options.insert(key.into(), value.clone().into());
            }
        }
        if let Some(query_list) = self.query_list {
            options.insert("query_list".into(), query_list.into());
        }
        if let Some(limit_max) = self.limit_max {
            options.insert("limit_max".into(), limit_max.into());
        }
        if let Some(arguments) = &self.arguments {
            options.insert("arguments".into(), arguments.clone().into());
        }
        options
    }

    /// The first program key given, if any.
    pub fn program_key(&self) -> Option<&'static str> {
        [
            ("command", &self.command),
            ("args", &self.args),
            ("env", &self.env),
        ]
        .into_iter()
        .find_map(|(key, value)| value.is_some().then_some(key))
    }
}
