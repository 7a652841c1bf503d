//! The environment a configuration is read with ([`Env`]): the process's, or one a test brings.
//! Owns the one rule that a blank variable is no override; which variables mean what is the
//! config's.

use std::fmt;
use std::sync::Arc;

/// The environment a configuration is read with: the process's, or one a test brings. A variable
/// set to nothing (an unset template variable, `FOO=` in a unit file) reads as unset: it is no
/// override, and it never turns auth off.
#[derive(Clone)]
pub struct Env(Arc<Lookup>);

/// How an [`Env`] finds a variable.
type Lookup = dyn Fn(&str) -> Option<String> + Send + Sync;

impl Env {
    /// The process's environment.
    pub fn process() -> Self {
        Self::from_fn(|name| std::env::var(name).ok())
    }

    /// No variables at all.
    pub fn none() -> Self {
        Self::from_fn(|_| None)
    }

    /// These variables and no others.
    pub fn of(pairs: &[(&str, &str)]) -> Self {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Self::from_fn(move |name| {
            pairs
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
        })
    }

    pub fn from_fn(lookup: impl Fn(&str) -> Option<String> + Send + Sync + 'static) -> Self {
        Self(Arc::new(lookup))
    }

    /// A variable's value, `None` when it is unset or blank.
    pub fn var(&self, name: &str) -> Option<String> {
        (self.0)(name).filter(|value| !value.trim().is_empty())
    }
}

impl fmt::Debug for Env {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Env(..)")
    }
}
