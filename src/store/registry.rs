//! Every known store type ([`TYPES`], [`of`]) and what a type's name decides: the options it
//! reads, its protocol, whether it answers topic searches. The one place a new type is listed.

use super::protocol::{Options, Protocol, Reach, StoreType};
use super::{callosum, loci, mcp, memory};
use crate::config::{EntryKind, StoreKind, TypeRules};
use serde_json::{Map, Value};

/// Every known store type, sorted by name (in [`StoreKind::ALL`]'s order).
pub const TYPES: &[StoreType] = &[mcp::TYPE, callosum::TYPE, loci::TYPE, memory::TYPE];

/// The known type names, sorted.
pub fn type_names() -> Vec<&'static str> {
    TYPES.iter().map(|t| t.name).collect()
}

/// The store type of `kind`: what its stores read and how they are reached.
pub fn of(kind: StoreKind) -> &'static StoreType {
    match kind {
        StoreKind::Mcp => &mcp::TYPE,
        StoreKind::Callosum => &callosum::TYPE,
        StoreKind::Loci => &loci::TYPE,
        StoreKind::Memory => &memory::TYPE,
    }
}

/// What a type reads of an entry when the entry is read, for the config (and a store added at
/// run time): the option keys it knows, and an `mcp` store's mapping checked.
impl TypeRules for StoreKind {
    fn options(self) -> &'static [&'static str] {
        of(self).options
    }

    fn check_options(self, options: &Map<String, Value>) -> Result<(), String> {
        match of(self).reach {
            Reach::Mcp => mcp::Spec::parse(options).map(drop),
            Reach::Http { .. } => Ok(()),
        }
    }
}

/// Builds the protocol for `kind` (a [`StoreKind`], or a name, which is looked up), or says why
/// not.
pub fn build(
    kind: impl Into<EntryKind>,
    options: &Map<String, Value>,
) -> Result<Box<dyn Protocol>, String> {
    let kind = kind.into().known()?;
    match of(kind).reach {
        Reach::Http { build, .. } => {
            build(&Options(options)).map_err(|why| format!("invalid options for {kind}: {why}"))
        }
        Reach::Mcp => Err(format!("{kind} stores have no HTTP protocol")),
    }
}

/// Whether a store type answers topic searches (`/by_topic`, SerenMemory's) [5.3].
pub fn speaks_topics(kind: StoreKind) -> bool {
    matches!(of(kind).reach, Reach::Http { topics: true, .. })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_has_its_type_in_the_registry_in_order() {
        assert_eq!(type_names(), StoreKind::names());
        for kind in StoreKind::ALL {
            assert_eq!(of(kind).name, kind.name());
            assert_eq!(StoreKind::parse(kind.name()), Ok(kind));
        }
        assert_eq!(
            StoreKind::parse("quantum"),
            Err("unknown store type 'quantum'; known types: [\"mcp\", \"seren_callosum\", \"seren_loci\", \"seren_memory\"]".into())
        );
    }
}
