//! What the roster takes in: a store added at run time checked ([`check_new_store`], and the words
//! a refused key gets), an overlay entry checked and refused what only the config file may name (a
//! program, a file, a variable, a keychain entry not its own), and which keychain entry goes with a
//! removed store. No IO: reads no overlay and binds nothing.

use crate::api::{NewStore, Refusal};
use crate::config::{Config, Endpoint, Invalid, RawStoreEntry, StoreEntry, StoreKind, TypeRules};
use crate::keychain::Pointer;
use crate::overlay;
use crate::store;

/// Checks a store to add, in the order the Python service checks (blank fields first). The rules
/// themselves (name, url, ranges) are the config's, so a store added at run time and one written
/// in the YAML are held to the same ones.
pub fn check_new_store(new: NewStore) -> Result<StoreEntry, Refusal> {
    let name = new.name.trim().to_owned();
    let url = new.url.trim().to_owned();
    let kind = new.kind.trim().to_owned();
    if let Some(key) = new.mcp.program_key() {
        return Err(Refusal::bad_request(format!(
            "{key} is refused here: a store that runs a program can only be written in the config file, never added over the network; give an mcp store a url instead"
        )));
    }
    if new.unknown.contains_key("tls_ca_file") {
        return Err(Refusal::bad_request(
            "tls_ca_file is refused here: a store added over the network never makes the service read a file; write a store that needs a private CA in the config file",
        ));
    }
    if let Some(key) = new.unknown_key() {
        return Err(Refusal::bad_request(refused_key(key)));
    }
    if name.is_empty() {
        return Err(Refusal::bad_request("name is required"));
    }
    if url.is_empty() {
        return Err(Refusal::bad_request("url is required"));
    }
    crate::config::check_name(&name).map_err(Refusal::bad_request)?;
    crate::config::StoreUrl::parse(&url)
        .map_err(|why| Refusal::bad_request(format!("url {why}")))?;
    let kind = StoreKind::parse(&kind).map_err(Refusal::bad_request)?;
    let options = new.mcp.options();
    if kind != StoreKind::Mcp
        && let Some(key) = options.keys().next()
    {
        return Err(Refusal::bad_request(format!(
            "{key} is a setting of mcp stores, not of {kind} stores"
        )));
    }
    kind.check_options(&options).map_err(Refusal::bad_request)?;
    let raw = RawStoreEntry {
        name: Some(name),
        kind: Some(kind.name().to_owned()),
        url: Some(url),
        weight: new.weight,
        floor: new.floor,
        token: new.token,
        description: new.description,
        identity_key: new.identity_key,
        options,
        ..RawStoreEntry::default()
    };
    match raw.check("store") {
        Ok(Ok(entry)) => Ok(entry),
        Ok(Err(invalid)) => Err(Refusal::bad_request(invalid.reason)),
        Err(message) => Err(Refusal::bad_request(message)),
    }
}

/// Why a key `POST /stores` and `add_store` do not take is refused, in words a model can act on:
/// the key, why, and every key that is taken. Nothing is dropped in silence: a store that seemed
/// to take a `timeout_s` or a `token_env` would not do what its caller thinks.
fn refused_key(key: &str) -> String {
    let taken = format!(
        "a store added here takes {}, and for type mcp also {}",
        NewStore::KEYS.join(", "),
        store::mcp::TYPE.options.join(", ")
    );
    let shown = crate::text::escaped(key);
    match key {
        "token_env" | "bearer_token_env" | "token_keyring" | "bearer_token_keyring" => format!(
            "{shown} is refused: a store added at run time never reads the service's environment or keychain by name; give the token itself as token (it is kept in the OS keychain when one is at hand); {taken}"
        ),
        "bearer_token" => format!("{shown} is not taken here: give the token as token; {taken}"),
        _ => format!(
            "unknown key {shown}; {taken}; any other setting (timeout_s, enabled, options, ...) is written in the config file"
        ),
    }
}

/// One overlay entry, checked. It is worded without values (a mistyped `token` must not be quoted
/// on `GET /` or in the log) and labelled by its name only when the name keeps the name rule,
/// else by its place.
pub(super) fn overlay_entry(
    config: &Config,
    i: usize,
    row: &overlay::Row,
) -> Result<StoreEntry, Invalid> {
    let place = format!("runtime overlay entry {i}");
    let entry = (row.parse::<RawStoreEntry>())
        .map_err(|e| crate::api::value_free(e.path(), &e.inner().to_string()))
        .and_then(|raw| raw.check(&place))
        .map(|checked| {
            checked
                .and_then(|entry| program_refused(entry, &place))
                .and_then(|entry| file_refused(entry, &place))
                .and_then(|entry| pointer_refused(config, entry, row, &place))
        });
    entry.unwrap_or_else(|message| {
        Err(Invalid {
            name: row
                .name()
                .filter(|n| crate::config::check_name(n).is_ok())
                .map_or(place, str::to_owned),
            reason: format!("invalid entry: {message}"),
        })
    })
}

/// A program comes only from the config file: an overlay entry that names one is skipped. The
/// overlay is what the network surfaces write, so it never makes the callosum run a program.
fn program_refused(entry: StoreEntry, place: &str) -> Result<StoreEntry, Invalid> {
    match entry.endpoint {
        Endpoint::Program(_) => Err(Invalid {
            name: entry.name,
            reason: format!(
                "invalid entry: {place} names a command; a store that runs a program can only be written in the config file"
            ),
        }),
        Endpoint::Url(_) => Ok(entry),
    }
}

/// A file to read comes only from the config file, as a program does: an overlay entry that names
/// a `tls_ca_file` is skipped before anything is read, so no network surface makes the callosum
/// open a path of the writer's choosing.
fn file_refused(entry: StoreEntry, place: &str) -> Result<StoreEntry, Invalid> {
    if entry.tls_ca_file.is_some() {
        return Err(Invalid {
            name: entry.name,
            reason: format!(
                "invalid entry: {place} names a tls_ca_file; a file the callosum reads can only be named in the config file"
            ),
        });
    }
    Ok(entry)
}

/// A token comes into the overlay only as itself, or as the keychain entry the callosum made for
/// that store: an overlay entry that names an environment variable (`token_env`), or any other
/// keychain entry (`token_keyring`), is skipped before anything is read. The overlay is what the
/// network surfaces write; a pointer in it would send whatever it leads to (any variable of the
/// service's environment, the inbound token's keychain entry) to a url of the writer's choosing.
fn pointer_refused(
    config: &Config,
    entry: StoreEntry,
    row: &overlay::Row,
    place: &str,
) -> Result<StoreEntry, Invalid> {
    // The key as written, so the reason names what is in the file.
    let refused = if entry.token_env.is_some() {
        Some(format!(
            "{place} names {}, an environment variable; a store in the runtime overlay never reads the service's environment: write the store in the config file, or add it again with its token",
            row.env_key()
        ))
    } else if let Some(pointer) = &entry.token_keyring
        && (!pointer.is_ours(&entry.name) || config.names_pointer(pointer))
    {
        Some(format!(
            "{place} names {}, a keychain entry the callosum did not make for this store; from the runtime overlay only {} is read (when the config does not name it): write the store in the config file, or add it again with its token",
            row.keyring_key(),
            Pointer::for_store(&entry.name)
        ))
    } else {
        None
    };
    match refused {
        Some(why) => Err(Invalid {
            name: entry.name,
            reason: format!("invalid entry: {why}"),
        }),
        None => Ok(entry),
    }
}

/// The keychain entry the callosum made for the store `name`, which goes with it; one a person made
/// (any other pointer), or one the config also names, stays.
pub(super) fn our_pointer(
    entries: &[overlay::Row],
    config: &Config,
    name: &str,
) -> Option<Pointer> {
    entries
        .iter()
        .filter(|entry| entry.is_named(name))
        .filter_map(overlay::Row::token_keyring)
        .filter_map(|text| Pointer::parse(text).ok())
        .find(|pointer| pointer.is_ours(name) && !config.names_pointer(pointer))
}
