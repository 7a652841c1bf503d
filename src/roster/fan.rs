//! The fan: one immutable snapshot of the roster (every row as `GET /stores` shows it, the stores
//! that are fanned), how it is built from the config's entries then the overlay's, and the part of
//! it one search aims at. Binds through the store layer ([`crate::store::bind`]); writes nothing.

use super::check::overlay_entry;
use crate::api::{NameReason, Refusal, StoreRow, StoreStatus};
use crate::config::{Config, StoreEntry};
use crate::limits::MAX_FILTER_NAMES;
use crate::overlay;
use crate::store::clients::Clients;
use crate::store::{Bound, bind};
use crate::view::View;
use std::collections::HashSet;
use std::sync::Arc;

/// One snapshot of the roster. Immutable: a change builds a new one.
#[derive(Debug)]
pub struct Fan {
    /// Every configured store, in roster order, as `GET /stores` shows it.
    pub rows: Vec<StoreRow>,
    /// The stores that are fanned, in roster order.
    pub bound: Vec<Arc<Bound>>,
    /// Why the overlay could not be read, if it could not.
    pub overlay_error: Option<String>,
}

/// Binds the config's stores then the overlay's, first name wins. A store `before` had bound from
/// the very same entry is kept as it was (an MCP server keeps running through a change of others).
pub(super) fn build_fan(
    config: &Config,
    clients: &Clients,
    overlay: &[overlay::Row],
    overlay_error: Option<String>,
    before: Option<&Fan>,
) -> Fan {
    let mut fan = Fan {
        rows: Vec::new(),
        bound: Vec::new(),
        overlay_error,
    };
    let mut names = HashSet::new();
    let entries = config
        .federation
        .stores
        .iter()
        .cloned()
        .map(|entry| (false, entry))
        .chain(
            overlay
                .iter()
                .enumerate()
                .map(|(i, row)| (true, overlay_entry(config, i, row))),
        );
    for (managed, entry) in entries {
        let row = match entry {
            Ok(entry) => {
                let status = fan.admit((config, clients), &entry, &mut names, before);
                row(entry, managed, status)
            }
            Err(invalid) => StoreRow {
                name: invalid.name,
                kind: String::new(),
                url: String::new(),
                weight: 1.0,
                floor: 0.0,
                enabled: true,
                managed,
                auth: false,
                description: None,
                identity_key: None,
                status: StoreStatus::Skipped(invalid.reason),
                breaker: None,
            },
        };
        fan.rows.push(row);
    }
    fan
}

/// A checked entry as `GET /stores` lists it.
fn row(entry: StoreEntry, managed: bool, status: StoreStatus) -> StoreRow {
    StoreRow {
        auth: entry.has_auth(),
        url: entry.endpoint.shown(),
        description: entry.description,
        identity_key: entry.identity_key.as_ref().map(ToString::to_string),
        name: entry.name,
        kind: entry.kind.name().to_owned(),
        weight: entry.weight,
        floor: entry.floor,
        enabled: entry.enabled,
        managed,
        status,
        breaker: None,
    }
}

impl Fan {
    /// Decides an entry's status in roster order, binding it when it is to be fanned: a name seen
    /// before is a duplicate, past the cap the roster is full, a disabled entry is listed only.
    fn admit(
        &mut self,
        (config, clients): (&Config, &Clients),
        entry: &StoreEntry,
        names: &mut HashSet<String>,
        before: Option<&Fan>,
    ) -> StoreStatus {
        let cap = config.federation.max_stores;
        if !names.insert(entry.name.clone()) {
            return StoreStatus::Skipped(format!(
                "duplicate name: a store named '{}' comes earlier",
                entry.name
            ));
        }
        if self.rows.len() >= cap {
            return StoreStatus::Skipped(format!(
                "the roster is full: federation.max_stores is {cap}"
            ));
        }
        if !entry.enabled {
            return StoreStatus::Disabled;
        }
        let kept = before.and_then(|fan| {
            fan.bound
                .iter()
                .find(|bound| bound.name == entry.name && bound.entry == *entry)
        });
        if let Some(bound) = kept {
            self.bound.push(bound.clone());
            return StoreStatus::Active;
        }
        match bind(config, clients, entry) {
            Ok(bound) => {
                self.bound.push(Arc::new(bound));
                StoreStatus::Active
            }
            Err(reason) => StoreStatus::Skipped(reason),
        }
    }

    /// The stores that are never asked, with why (a disabled store is not skipped).
    pub fn skipped(&self) -> Vec<NameReason> {
        self.rows
            .iter()
            .filter_map(|row| match &row.status {
                StoreStatus::Skipped(reason) => Some(NameReason {
                    name: row.name.clone(),
                    reason: reason.clone(),
                }),
                _ => None,
            })
            .collect()
    }

    /// The part of this fan one search aims at: only the stores `only` names (all, when `None`),
    /// less those `exclude` names; `None` when that is the whole fan. A name the roster does not
    /// hold is refused, naming it and the names it does hold.
    pub fn aimed(
        &self,
        only: Option<&[String]>,
        exclude: Option<&[String]>,
    ) -> Result<Option<Fan>, Refusal> {
        let exclude = exclude.unwrap_or_default();
        if only.is_none() && exclude.is_empty() {
            return Ok(None);
        }
        for (field, names) in [
            ("stores", only.unwrap_or_default()),
            ("exclude_stores", exclude),
        ] {
            if names.len() > MAX_FILTER_NAMES {
                return Err(Refusal::bad_request(format!(
                    "{field} lists {} names; the limit is {MAX_FILTER_NAMES}",
                    names.len()
                )));
            }
            if let Some(unknown) = names
                .iter()
                .find(|name| !self.rows.iter().any(|row| row.name == **name))
            {
                return Err(Refusal::bad_request(format!(
                    "{field}: no store is named {}; the stores are: {}",
                    crate::text::escaped(unknown),
                    self.names()
                )));
            }
        }
        if only.is_some_and(<[String]>::is_empty) {
            return Err(Refusal::bad_request(
                "stores must name at least one store; leave it out to search every store",
            ));
        }
        let wanted = |name: &str| {
            only.is_none_or(|only| only.iter().any(|n| n == name))
                && !exclude.iter().any(|n| n == name)
        };
        Ok(Some(self.only(wanted, self.overlay_error.clone())))
    }

    /// The part of this fan a view sees: its stores and nothing of the others, not even why the
    /// overlay could not be read (an entry's name may be in it).
    pub fn seen_by(&self, view: &View) -> Fan {
        self.only(|name| view.sees(name), None)
    }

    /// The stores `wanted` names, in roster order.
    fn only(&self, wanted: impl Fn(&str) -> bool, overlay_error: Option<String>) -> Fan {
        Fan {
            rows: (self.rows.iter())
                .filter(|row| wanted(&row.name))
                .cloned()
                .collect(),
            bound: (self.bound.iter())
                .filter(|bound| wanted(&bound.name))
                .cloned()
                .collect(),
            overlay_error,
        }
    }

    /// Every store's name, in roster order, for a message (the first 32, then how many more).
    fn names(&self) -> String {
        const SHOWN: usize = 32;
        let mut names: Vec<&str> = self
            .rows
            .iter()
            .take(SHOWN)
            .map(|r| r.name.as_str())
            .collect();
        let more = self.rows.len().saturating_sub(SHOWN);
        let more = format!("and {more} more");
        if self.rows.len() > SHOWN {
            names.push(&more);
        }
        if names.is_empty() {
            return "(none configured)".to_owned();
        }
        names.join(", ")
    }
}
