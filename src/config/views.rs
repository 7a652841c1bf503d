//! `server.views`, `server.views_by_scope` and `server.audit_log` (contract §6c), checked: each
//! view's name, patterns and token pointers, then the tokens read by the one rule of
//! `secret.rs`, and the clashes no view may have (two views with one token, a view with the
//! server's own token). A pattern that matches no store in the file is a warning (a store added
//! at run time may match it later). What a view does is `view.rs`'s and the edges'.

use super::env::Env;
use super::scalar::Flag;
use super::secret::{self, Missing, Pointers};
use super::store::non_blank;
use crate::keychain::{Keychain, Pointer};
use crate::secret::Secret;
use crate::view::View;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::sync::Arc;

/// A view as the file writes it.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct FileView {
    name: Option<String>,
    token: Option<String>,
    token_env: Option<String>,
    token_keyring: Option<String>,
    stores: Option<Vec<String>>,
    write: Option<Flag>,
    /// Keys a view does not take: an error naming them (a typo must not widen or narrow a
    /// view), not the warning an unknown key elsewhere gets.
    #[serde(flatten)]
    unknown: BTreeMap<String, serde::de::IgnoredAny>,
}

/// A view and the token that selects it (`None`: only an OAuth scope selects it).
#[derive(Debug, Clone)]
pub struct ViewEntry {
    pub view: Arc<View>,
    pub token: Option<Secret>,
}

impl PartialEq for ViewEntry {
    /// Two entries are the same when their views and tokens are (a reload compares them).
    fn eq(&self, other: &Self) -> bool {
        self.view == other.view
            && self.token.as_ref().map(Secret::expose) == other.token.as_ref().map(Secret::expose)
    }
}

/// The views, the scopes that select them, in a checked form.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Views {
    pub entries: Vec<ViewEntry>,
    /// An OAuth scope, and the view an access token granting it is held to.
    pub by_scope: Vec<(String, Arc<View>)>,
}

impl Views {
    /// Whether any view is configured.
    pub fn any(&self) -> bool {
        !self.entries.is_empty()
    }

    /// The view whose token `given` is, compared in constant time against every view's token (no
    /// early exit, so the time does not tell which view's token came close).
    pub fn by_token(&self, given: &str) -> Option<Arc<View>> {
        let mut found = None;
        for entry in &self.entries {
            if let Some(token) = &entry.token
                && crate::secret::constant_time_eq(given.as_bytes(), token.expose().as_bytes())
            {
                found = Some(entry.view.clone());
            }
        }
        found
    }

    /// The views an access token's `scopes` select, in the order `views_by_scope` gives them.
    pub fn by_scopes(&self, scopes: &[String]) -> Vec<Arc<View>> {
        let mut views: Vec<Arc<View>> = Vec::new();
        for (scope, view) in &self.by_scope {
            if scopes.iter().any(|s| s == scope) && !views.iter().any(|v| v.name == view.name) {
                views.push(view.clone());
            }
        }
        views
    }
}

/// A view's token pointers before they are read.
pub(super) struct Asked {
    name: String,
    inline: Option<Secret>,
    keychain: Option<Pointer>,
    env: Option<String>,
}

/// Checks the views as written; `stores` are the store names of the file, for the warning about
/// a pattern that matches none. Returns the views (tokens not read yet) and their pointers.
pub(super) fn read(
    views: Option<Vec<FileView>>,
    by_scope: Option<BTreeMap<String, String>>,
    stores: &[&str],
    problems: &mut Vec<String>,
    warnings: &mut Vec<String>,
) -> (Views, Vec<Asked>) {
    let mut out = Views::default();
    let mut asked = Vec::new();
    let by_scope = by_scope.unwrap_or_default();
    for (i, file) in views.unwrap_or_default().into_iter().enumerate() {
        let Some(name) = non_blank(&file.name).map(str::to_owned) else {
            problems.push(format!("server.views[{i}]: a view needs a name"));
            continue;
        };
        let at = format!("server.views[{name}]");
        if let Some(key) = file.unknown.keys().next() {
            problems.push(format!(
                "{at}: unknown key {} (a view takes name, token, token_env, token_keyring, stores, write)",
                crate::text::escaped(key)
            ));
            continue;
        }
        if let Err(why) = super::check_name(&name) {
            problems.push(format!("{at}: the name {why}"));
            continue;
        }
        if out.entries.iter().any(|e| e.view.name == name) {
            problems.push(format!("{at}: two views are named {name}"));
            continue;
        }
        let patterns: Vec<String> = (file.stores.unwrap_or_default().iter())
            .map(|p| p.trim().to_owned())
            .filter(|p| !p.is_empty())
            .collect();
        if patterns.is_empty() {
            problems.push(format!(
                "{at}: stores is empty; list the store names or globs (\"papers*\") this view sees"
            ));
            continue;
        }
        let view = View {
            name: name.clone(),
            patterns,
            write: file.write.is_some_and(|f| f.0),
        };
        for pattern in &view.patterns {
            if !stores.iter().any(|store| crate::view::glob(pattern, store)) {
                warnings.push(format!(
                    "{at}: the pattern {pattern:?} matches no store in the config file (a store added at run time may match it later)"
                ));
            }
        }
        let inline = match non_blank(&file.token).map(Secret::bearer) {
            Some(Err(why)) => {
                problems.push(format!("{at}.token {why}"));
                continue;
            }
            Some(Ok(token)) => token,
            None => None,
        };
        let keychain = match non_blank(&file.token_keyring).map(Pointer::parse) {
            Some(Err(why)) => {
                problems.push(format!("{at}.token_keyring {why}"));
                continue;
            }
            Some(Ok(pointer)) => Some(pointer),
            None => None,
        };
        let env = non_blank(&file.token_env).map(str::to_owned);
        let selected_by_scope = by_scope.values().any(|v| *v == name);
        if inline.is_none() && keychain.is_none() && env.is_none() && !selected_by_scope {
            problems.push(format!(
                "{at}: no token; give token, token_env or token_keyring (or select it with an OAuth scope in server.views_by_scope)"
            ));
            continue;
        }
        asked.push(Asked {
            name,
            inline,
            keychain,
            env,
        });
        out.entries.push(ViewEntry {
            view: Arc::new(view),
            token: None,
        });
    }
    for (scope, name) in by_scope {
        match out.entries.iter().find(|e| e.view.name == name) {
            Some(entry) => out.by_scope.push((scope, entry.view.clone())),
            None => problems.push(format!(
                "server.views_by_scope: the scope {scope:?} names the view {name:?}, which server.views does not define"
            )),
        }
    }
    (out, asked)
}

/// Reads every view's token (inline, then the keychain, then the variable, failing closed) and
/// checks that no two share one, nor any the server's own `server_token`. A token that cannot
/// be read is the first error: the caller stops the start (a view must never open wider or
/// narrower than it says). The other problems are named together.
pub(super) fn resolve(
    views: &mut Views,
    asked: Vec<Asked>,
    server_token: Option<&Secret>,
    keychain: &Keychain,
    env: &Env,
) -> Result<(), Vec<String>> {
    let mut problems = Vec::new();
    for (entry, asked) in views.entries.iter_mut().zip(asked) {
        let at = format!("server.views[{}]", asked.name);
        let pointers = Pointers {
            inline: asked.inline.as_ref(),
            keychain: asked.keychain.as_ref(),
            env: asked.env.as_deref(),
        };
        match secret::resolve(pointers, keychain, env) {
            Ok(token) => entry.token = token,
            Err(Missing::Keychain(e)) => problems.push(format!("{at}.token_keyring: {e}")),
            Err(Missing::EnvUnset(name)) => {
                problems.push(format!("{at}.token_env names {name}, which is not set"));
            }
            Err(Missing::EnvUnfit { name, why }) => {
                problems.push(format!("{at}.token_env {name} {why}"));
            }
        }
    }
    for (i, a) in views.entries.iter().enumerate() {
        let Some(token) = &a.token else { continue };
        if server_token.is_some_and(|s| s.expose() == token.expose()) {
            problems.push(format!(
                "server.views[{}]: its token is the server's own bearer_token, which sees every store; give the view a token of its own",
                a.view.name
            ));
        }
        for b in &views.entries[i + 1..] {
            if b.token
                .as_ref()
                .is_some_and(|t| t.expose() == token.expose())
            {
                problems.push(format!(
                    "server.views[{}] and server.views[{}] have the same token; a token selects one view",
                    a.view.name, b.view.name
                ));
            }
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems)
    }
}
