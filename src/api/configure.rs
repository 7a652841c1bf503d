//! Reading a `POST /configure` body: each key is checked against the knob table as it is read
//! (an unknown key is refused there, naming the keys taken, so the refusal's path names it) and
//! each knob's value read as its rule's type; `stores` is per-store weight and floor.

use super::knobs::ConfigureRequest;
use serde::Deserialize;

/// The keys `POST /configure` takes, in the table's order, then `stores`: what a refusal of an
/// unknown key lists.
fn configure_keys() -> &'static [&'static str] {
    static KEYS: std::sync::LazyLock<Vec<&'static str>> = std::sync::LazyLock::new(|| {
        let knobs = crate::config::TABLE.iter().map(|knob| knob.name);
        knobs.chain(["stores"]).collect()
    });
    &KEYS
}

/// A `POST /configure` key: a knob's name (`Some`) or `stores` (`None`). Anything else is
/// refused while the key is read, so the refusal's path names it.
struct ConfigureKey;

impl<'de> serde::de::DeserializeSeed<'de> for ConfigureKey {
    type Value = Option<&'static str>;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_identifier(self)
    }
}

impl serde::de::Visitor<'_> for ConfigureKey {
    type Value = Option<&'static str>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("field identifier")
    }

    fn visit_str<E: serde::de::Error>(self, key: &str) -> Result<Self::Value, E> {
        match crate::config::knob(key) {
            Some(knob) => Ok(Some(knob.name)),
            None if key == "stores" => Ok(None),
            None => Err(E::unknown_field(key, configure_keys())),
        }
    }
}

impl<'de> Deserialize<'de> for ConfigureRequest {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct RequestVisitor;
        impl<'de> serde::de::Visitor<'de> for RequestVisitor {
            type Value = ConfigureRequest;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("struct ConfigureRequest")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<ConfigureRequest, A::Error> {
                use crate::config::{Reader, read_entry};
                let mut request = ConfigureRequest::default();
                while let Some(key) = map.next_key_seed(ConfigureKey)? {
                    match key {
                        None if request.stores.is_some() => {
                            return Err(serde::de::Error::duplicate_field("stores"));
                        }
                        None => request.stores = map.next_value()?,
                        Some(name) => {
                            read_entry(&mut map, name, Reader::Request, &mut request.knobs)?;
                        }
                    }
                }
                Ok(request)
            }
        }
        deserializer.deserialize_map(RequestVisitor)
    }
}
