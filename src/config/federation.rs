//! The `federation:` block, checked into [`Federation`]: the knobs, the breaker, the store cap,
//! and the file's store entries, each checked and warned about for keys its type does not read.

use super::breaker::{self, BreakerSettings};
use super::file::FileFederation;
use super::kind::{EntryKind, TypeRules};
use super::knob::{Knobs, read_knobs};
use super::range::within;
use super::store::{Invalid, RawStoreEntry, StoreEntry};
use crate::limits::{DEFAULT_MAX_STORES, MAX_MAX_STORES};
use std::path::Path;

/// The `federation:` block.
#[derive(Debug, Clone)]
pub struct Federation {
    /// The knobs as the file sets them (the table's defaults for those it does not): the RRF
    /// settings and how the fused list is shaped into the packet a model reads (pages, quota,
    /// authority, edges, hops). The defaults are plain RRF.
    pub knobs: Knobs,
    /// The per-store circuit breaker.
    pub breaker: BreakerSettings,
    /// The most stores the roster holds (config and overlay together); more are skipped, and a
    /// run-time add is refused.
    pub max_stores: usize,
    /// The config file's stores, in file order.
    pub stores: Vec<Result<StoreEntry, Invalid>>,
}

/// The `federation:` block, checked; every problem is noted, the defaults stand in for them.
pub(super) fn read(
    f: FileFederation,
    path: &Path,
    problems: &mut Vec<String>,
    warnings: &mut Vec<String>,
) -> Federation {
    let knobs = read_knobs(&f.knobs, &Knobs::default(), "federation.", problems);
    let breaker = breaker::read(
        f.breaker_failures,
        (f.breaker_cooldown_s, f.breaker_max_cooldown_s),
        problems,
    );
    let max_stores = within(
        "federation.max_stores",
        f.max_stores.unwrap_or(DEFAULT_MAX_STORES),
        1..=MAX_MAX_STORES,
        problems,
    );
    let stores = read_stores(f.stores.unwrap_or_default(), path, problems, warnings);
    if stores.len() > max_stores {
        warnings.push(format!(
            "{}: {} stores but federation.max_stores is {max_stores}: the ones past it are skipped",
            path.display(),
            stores.len()
        ));
    }
    Federation {
        knobs,
        breaker,
        max_stores,
        stores,
    }
}

/// The file's store entries, in order: each checked, and warned about for what it holds that its
/// type does not read.
fn read_stores(
    raw: Vec<RawStoreEntry>,
    path: &Path,
    problems: &mut Vec<String>,
    warnings: &mut Vec<String>,
) -> Vec<Result<StoreEntry, Invalid>> {
    let mut stores = Vec::new();
    for (i, raw) in raw.into_iter().enumerate() {
        let place = format!("federation.stores[{i}]");
        for key in &raw.dropped {
            warnings.push(format!("{}: {place}: '{key}' ignored", path.display()));
        }
        let entry = match raw.check(&place) {
            Ok(entry) => entry,
            Err(problem) => {
                problems.push(problem);
                continue;
            }
        };
        if let Ok(entry) = &entry
            && let EntryKind::Known(kind) = entry.kind
        {
            if let Err(why) = kind.check_options(&entry.options) {
                problems.push(format!("store '{}': {why}", entry.name));
                continue;
            }
            let known = kind.options();
            for key in entry
                .options
                .keys()
                .filter(|k| !known.contains(&k.as_str()))
            {
                warnings.push(format!(
                    "{}: {place} ('{}'): '{key}' is not a setting of {} stores; ignored",
                    path.display(),
                    entry.name,
                    entry.kind
                ));
            }
        }
        stores.push(entry);
    }
    stores
}
