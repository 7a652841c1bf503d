//! Request-body validation shared by the two sample stores, shaped like the FastAPI services they
//! imitate: any invalid body (not JSON, not an object, a missing or mistyped field, a number out of
//! range) is answered 422 `{"detail": "<field>: <problem>"}`.
//!
//! Owns reading typed fields out of a JSON object and the 422 answer. It does not own which fields a
//! store wants or their defaults and bounds: those live beside each store's search.
//!
//! The body is read by hand rather than through axum's `Json` extractor because that extractor answers
//! 400 for malformed JSON and 415 for a missing content type, where FastAPI answers 422 for both.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value};
use std::fmt;

/// Why a request body was refused. Every variant names the field at fault (`body` for the whole).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Invalid {
    /// The bytes are not JSON; carries serde_json's message (a position, never the body itself).
    NotJson(String),
    /// Valid JSON, but not an object.
    NotObject,
    /// A required field is absent.
    Missing(&'static str),
    /// A field holds the wrong JSON type; `expected` reads "a valid string" and the like.
    WrongType {
        field: &'static str,
        expected: &'static str,
    },
    /// A number outside its bounds, or a list too short; `rule` reads "greater than or equal to 1"
    /// and the like.
    OutOfRange { field: &'static str, rule: String },
    /// One item of a list holds the wrong JSON type; named `field.index` as pydantic's location is.
    WrongItem {
        field: &'static str,
        index: usize,
        expected: &'static str,
    },
}

impl fmt::Display for Invalid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Invalid::NotJson(reason) => write!(f, "body: JSON decode error: {reason}"),
            Invalid::NotObject => write!(f, "body: input should be a JSON object"),
            Invalid::Missing(field) => write!(f, "{field}: field required"),
            Invalid::WrongType { field, expected } => {
                write!(f, "{field}: input should be {expected}")
            }
            Invalid::OutOfRange { field, rule } => write!(f, "{field}: input should be {rule}"),
            Invalid::WrongItem {
                field,
                index,
                expected,
            } => write!(f, "{field}.{index}: input should be {expected}"),
        }
    }
}

impl std::error::Error for Invalid {}

impl IntoResponse for Invalid {
    fn into_response(self) -> Response {
        tracing::debug!(detail = %self, "sample store refused a request body");
        let body = serde_json::json!({ "detail": self.to_string() });
        (StatusCode::UNPROCESSABLE_ENTITY, Json(body)).into_response()
    }
}

/// A request body that is known to be a JSON object.
#[derive(Debug)]
pub struct Body(Map<String, Value>);

impl Body {
    pub fn parse(bytes: &[u8]) -> Result<Self, Invalid> {
        match serde_json::from_slice::<Value>(bytes) {
            Ok(Value::Object(map)) => Ok(Self(map)),
            Ok(_) => Err(Invalid::NotObject),
            Err(e) => Err(Invalid::NotJson(e.to_string())),
        }
    }

    /// A string that must be present; `null` counts as the wrong type, as in pydantic.
    pub fn required_str(&self, field: &'static str) -> Result<String, Invalid> {
        match self.0.get(field) {
            None => Err(Invalid::Missing(field)),
            Some(Value::String(s)) => Ok(s.clone()),
            Some(_) => Err(Invalid::WrongType {
                field,
                expected: "a valid string",
            }),
        }
    }

    /// A string that may be absent or `null`.
    pub fn optional_str(&self, field: &'static str) -> Result<Option<String>, Invalid> {
        match self.0.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(Invalid::WrongType {
                field,
                expected: "a valid string or null",
            }),
        }
    }

    /// A boolean with a default when absent; `null` is refused, as pydantic does for `bool = True`.
    pub fn bool_or(&self, field: &'static str, default: bool) -> Result<bool, Invalid> {
        match self.0.get(field) {
            None => Ok(default),
            Some(Value::Bool(b)) => Ok(*b),
            Some(_) => Err(Invalid::WrongType {
                field,
                expected: "a valid boolean",
            }),
        }
    }

    /// A list of strings that must be present and hold at least one item, as pydantic's
    /// `list[str] = Field(min_length=1)`. `null` and a lone string count as the wrong type.
    pub fn required_str_list(&self, field: &'static str) -> Result<Vec<String>, Invalid> {
        let Some(value) = self.0.get(field) else {
            return Err(Invalid::Missing(field));
        };
        let list = str_list(field, value)?;
        if list.is_empty() {
            return Err(Invalid::OutOfRange {
                field,
                rule: "a list with at least 1 item".to_string(),
            });
        }
        Ok(list)
    }

    /// A list of strings, empty when absent; `null` is refused, as pydantic does for
    /// `list[str] = []`.
    pub fn str_list_or_empty(&self, field: &'static str) -> Result<Vec<String>, Invalid> {
        self.0
            .get(field)
            .map_or_else(|| Ok(Vec::new()), |value| str_list(field, value))
    }

    /// An integer with a default when absent. A float with no fractional part (`5.0`) is taken, as
    /// pydantic's lax mode does; `5.5`, strings and `null` are refused.
    pub fn int_or(&self, field: &'static str, default: i64) -> Result<i64, Invalid> {
        let wrong = Invalid::WrongType {
            field,
            expected: "a valid integer",
        };
        match self.0.get(field) {
            None => Ok(default),
            Some(Value::Number(n)) => {
                if let Some(i) = n.as_i64() {
                    Ok(i)
                } else if n.is_u64() {
                    // Above i64::MAX: a valid integer, and out of every bound a store sets.
                    Err(Invalid::OutOfRange {
                        field,
                        rule: "a 64-bit signed integer".to_string(),
                    })
                } else {
                    match n.as_f64() {
                        // The range check keeps the cast exact; fract() == 0 makes it lossless.
                        Some(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => Ok(f as i64),
                        _ => Err(wrong),
                    }
                }
            }
            Some(_) => Err(wrong),
        }
    }
}

/// Reads `value` as a list of strings, naming the first item of the wrong type.
fn str_list(field: &'static str, value: &Value) -> Result<Vec<String>, Invalid> {
    let Value::Array(items) = value else {
        return Err(Invalid::WrongType {
            field,
            expected: "a valid list",
        });
    };
    items
        .iter()
        .enumerate()
        .map(|(index, item)| match item {
            Value::String(s) => Ok(s.clone()),
            _ => Err(Invalid::WrongItem {
                field,
                index,
                expected: "a valid string",
            }),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(text: &str) -> Body {
        Body::parse(text.as_bytes()).expect("test bodies are valid JSON objects")
    }

    #[test]
    fn refuses_bodies_that_are_not_objects() {
        let cases: &[(&str, &str)] = &[
            ("not json", "body: JSON decode error"),
            ("", "body: JSON decode error"),
            ("[1, 2]", "body: input should be a JSON object"),
            ("\"cuda\"", "body: input should be a JSON object"),
        ];
        for (text, prefix) in cases {
            let err = Body::parse(text.as_bytes()).expect_err("not an object");
            assert!(err.to_string().starts_with(prefix), "{text:?} gave {err}");
        }
    }

    #[test]
    fn reads_typed_fields() {
        let b = body(
            r#"{"q": "cuda", "n": 5, "f": 7.0, "half": 2.5, "big": 18446744073709551615,
                         "yes": true, "nul": null, "s": "7"}"#,
        );
        assert_eq!(b.required_str("q"), Ok("cuda".to_string()));
        assert_eq!(b.required_str("absent"), Err(Invalid::Missing("absent")));
        assert!(matches!(
            b.required_str("nul"),
            Err(Invalid::WrongType { .. })
        ));
        assert!(matches!(
            b.required_str("n"),
            Err(Invalid::WrongType { .. })
        ));
        assert_eq!(b.optional_str("nul"), Ok(None));
        assert_eq!(b.optional_str("absent"), Ok(None));
        assert!(matches!(
            b.optional_str("n"),
            Err(Invalid::WrongType { .. })
        ));
        assert_eq!(b.int_or("n", 1), Ok(5));
        assert_eq!(b.int_or("f", 1), Ok(7));
        assert_eq!(b.int_or("absent", 3), Ok(3));
        assert!(matches!(
            b.int_or("half", 1),
            Err(Invalid::WrongType { .. })
        ));
        assert!(matches!(b.int_or("s", 1), Err(Invalid::WrongType { .. })));
        assert!(matches!(b.int_or("nul", 1), Err(Invalid::WrongType { .. })));
        assert!(matches!(
            b.int_or("big", 1),
            Err(Invalid::OutOfRange { .. })
        ));
        assert_eq!(b.bool_or("yes", false), Ok(true));
        assert_eq!(b.bool_or("absent", true), Ok(true));
        assert!(matches!(
            b.bool_or("nul", true),
            Err(Invalid::WrongType { .. })
        ));
    }

    #[test]
    fn reads_string_lists() {
        let b =
            body(r#"{"two": ["a", "b"], "none": [], "nul": null, "one": "a", "mixed": ["a", 7]}"#);
        let strings = |items: &[&str]| items.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(b.required_str_list("two"), Ok(strings(&["a", "b"])));
        assert_eq!(b.str_list_or_empty("two"), Ok(strings(&["a", "b"])));
        assert_eq!(b.str_list_or_empty("none"), Ok(Vec::new()));
        assert_eq!(b.str_list_or_empty("absent"), Ok(Vec::new()));
        assert_eq!(
            b.required_str_list("absent"),
            Err(Invalid::Missing("absent"))
        );
        assert!(matches!(
            b.required_str_list("none"),
            Err(Invalid::OutOfRange { field: "none", .. })
        ));
        for field in ["nul", "one"] {
            for got in [b.required_str_list(field), b.str_list_or_empty(field)] {
                assert!(matches!(got, Err(Invalid::WrongType { .. })), "{field}");
            }
        }
        assert_eq!(
            b.str_list_or_empty("mixed"),
            Err(Invalid::WrongItem {
                field: "mixed",
                index: 1,
                expected: "a valid string",
            })
        );
    }

    #[test]
    fn messages_name_the_field() {
        let cases = [
            (Invalid::Missing("query"), "query: field required"),
            (
                Invalid::OutOfRange {
                    field: "n_results",
                    rule: "less than or equal to 50".to_string(),
                },
                "n_results: input should be less than or equal to 50",
            ),
            (
                Invalid::WrongItem {
                    field: "topics",
                    index: 1,
                    expected: "a valid string",
                },
                "topics.1: input should be a valid string",
            ),
        ];
        for (err, text) in cases {
            assert_eq!(err.to_string(), text);
        }
    }
}
