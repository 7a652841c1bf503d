//! Who is asking, and which stores they may see (contract §6c): a [`View`] (a name, store name
//! patterns, whether it may write), the [`Actor`] an audit line names, and the [`Caller`] an edge
//! hands the core with every request. Pure: it reads no token (the edges do) and filters no
//! roster (the federation does); it only answers "does this caller see that store".

use std::fmt;
use std::sync::Arc;

/// A part of the roster handed to some callers: only the stores whose names its patterns match.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct View {
    /// Shown in logs, metrics and the audit trail; never a secret.
    pub name: String,
    /// Store names or globs (`*` any run of characters, `?` one character).
    pub patterns: Vec<String>,
    /// May add stores (within `patterns`), remove and re-weight the stores it sees.
    pub write: bool,
}

impl View {
    /// Whether this view sees the store named `store`.
    pub fn sees(&self, store: &str) -> bool {
        self.patterns.iter().any(|pattern| glob(pattern, store))
    }

    /// The patterns as one line, for a refusal that says what a new store's name must match.
    pub fn patterns_line(&self) -> String {
        self.patterns.join(", ")
    }
}

/// Whether `name` matches `pattern`, where `*` is any run of characters (none included) and `?`
/// is one character; everything else matches itself. Linear in `name` for each `*` (the classic
/// backtrack to the last star), so a hostile name cannot make it slow: O(|pattern| × |name|) at
/// worst, and both are bounded (a pattern by the config, a store name by `config::check_name`).
pub fn glob(pattern: &str, name: &str) -> bool {
    let (pattern, name): (Vec<char>, Vec<char>) =
        (pattern.chars().collect(), name.chars().collect());
    let (mut p, mut n) = (0, 0);
    // Where the last `*` was, and the name position it is now taken to reach.
    let mut star: Option<(usize, usize)> = None;
    while n < name.len() {
        match pattern.get(p) {
            Some('*') => {
                star = Some((p, n));
                p += 1;
            }
            Some(&c) if c == '?' || c == name[n] => {
                p += 1;
                n += 1;
            }
            _ => match star {
                // Let the last star take one more character, and try again after it.
                Some((at, reached)) => {
                    p = at + 1;
                    n = reached + 1;
                    star = Some((at, reached + 1));
                }
                None => return false,
            },
        }
    }
    pattern[p..].iter().all(|&c| c == '*')
}

/// Who made a change, as the audit trail names them (contract §6c).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Actor {
    /// The holder of the server's own bearer token.
    Token,
    /// The holder of a view's token, by the view's name.
    View(String),
    /// An OAuth access token, by its `sub` claim (`None` when the token carries none).
    OAuth(Option<String>),
    /// The local user, over MCP on stdio.
    Stdio,
    /// A hot reload of the config file or the overlay.
    Reload,
    /// Anyone: the server has no auth configured (a loopback default).
    Open,
}

impl fmt::Display for Actor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Token => f.write_str("token"),
            Self::View(name) => f.write_str(name),
            Self::OAuth(Some(sub)) => write!(f, "oauth:{sub}"),
            Self::OAuth(None) => f.write_str("oauth"),
            Self::Stdio => f.write_str("stdio"),
            Self::Reload => f.write_str("reload"),
            Self::Open => f.write_str("open"),
        }
    }
}

/// Who is asking, as an edge found it: an actor, and the view it is held to (`None`: the whole
/// roster, as the server token, OAuth without a view scope, stdio and an open server see it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    pub actor: Actor,
    pub view: Option<Arc<View>>,
}

impl Caller {
    /// A caller who sees everything.
    pub fn full(actor: Actor) -> Self {
        Self { actor, view: None }
    }

    /// The local user, over MCP on stdio or on the command line: everything.
    pub fn local() -> Self {
        Self::full(Actor::Stdio)
    }

    /// Whether this caller sees the store named `store`.
    pub fn sees(&self, store: &str) -> bool {
        self.view.as_ref().is_none_or(|view| view.sees(store))
    }

    /// Why this caller may not write (add, remove, configure, evaluate), when its view has no
    /// `write`; `None` when it may.
    pub fn refuse_write(&self) -> Option<String> {
        let view = self.view.as_ref().filter(|view| !view.write)?;
        Some(format!(
            "forbidden: the view {} may search and list its stores, not change them or run evaluations (it has no write)",
            view.name
        ))
    }

    /// The view's name, when the caller has one.
    pub fn view_name(&self) -> Option<&str> {
        self.view.as_ref().map(|view| view.name.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        let check = |pattern: &str, name: &str, expected: bool| {
            assert_eq!(glob(pattern, name), expected, "{pattern} ~ {name}");
        };
        check("notes", "notes", true);
        check("notes", "notes2", false);
        check("notes", "note", false);
        check("papers*", "papers", true);
        check("papers*", "papers-2024", true);
        check("papers*", "old-papers", false);
        check("*papers", "old-papers", true);
        check("*", "", true);
        check("*", "anything", true);
        check("", "", true);
        check("", "x", false);
        check("a?c", "abc", true);
        check("a?c", "ac", false);
        check("a*b*c", "a-x-b-y-c", true);
        check("a*b*c", "a-x-c-y-b", false);
        check("*.*", "v1.2", true);
        check("é*", "écrits", true);
        check("**a", "bba", true);
        // The backtrack stays linear: a long name against many stars answers at once.
        let long = "a".repeat(4_000);
        check("*a*a*a*a*b", &long, false);
    }

    #[test]
    fn callers_and_actors() {
        let view = Arc::new(View {
            name: "research".into(),
            patterns: vec!["papers*".into(), "notes".into()],
            write: false,
        });
        let caller = Caller {
            actor: Actor::View("research".into()),
            view: Some(view),
        };
        assert!(caller.sees("papers-a"));
        assert!(caller.sees("notes"));
        assert!(!caller.sees("diary"));
        assert_eq!(caller.view_name(), Some("research"));
        assert!(Caller::local().sees("diary"));
        for (actor, shown) in [
            (Actor::Token, "token"),
            (Actor::View("research".into()), "research"),
            (Actor::OAuth(Some("alice".into())), "oauth:alice"),
            (Actor::OAuth(None), "oauth"),
            (Actor::Stdio, "stdio"),
            (Actor::Reload, "reload"),
            (Actor::Open, "open"),
        ] {
            assert_eq!(actor.to_string(), shown);
        }
    }
}
