//! A store's status on the wire: one string, as the Python service writes it (`active`,
//! `disabled` or `skipped: <reason>`), read back and described in the schema by hand, since no
//! derive says it.

use super::stores::StoreStatus;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

impl std::fmt::Display for StoreStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreStatus::Active => f.write_str("active"),
            StoreStatus::Disabled => f.write_str("disabled"),
            StoreStatus::Skipped(reason) => write!(f, "skipped: {reason}"),
        }
    }
}

impl Serialize for StoreStatus {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for StoreStatus {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Ok(match text.as_str() {
            "active" => StoreStatus::Active,
            "disabled" => StoreStatus::Disabled,
            other => {
                StoreStatus::Skipped(other.strip_prefix("skipped: ").unwrap_or(other).to_owned())
            }
        })
    }
}

impl JsonSchema for StoreStatus {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "StoreStatus".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "description": "`active`, `disabled`, or `skipped: <reason>`"
        })
    }
}
