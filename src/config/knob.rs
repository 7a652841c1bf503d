//! The knob table: every federation knob a search runs with, declared once (its 5.3.0 name, what
//! it does in plain words, its default, its rule, where it may be set), and [`Knobs`], the values
//! one search runs with.
//!
//! The table drives reading the file's `federation:` keys and `POST /configure`'s body (each key
//! read as its rule's type by [`KnobSeed`], so a wrong type is named at its key and line; then one
//! rule for both: [`read_knobs`]), `GET /knobs`'s rows (which the viewer's Knobs tab draws),
//! `GET /stores`' `supported_knobs`, the keys a refused `/configure` names, and a reload's "the
//! later change wins" ([`Knob::pick`]). Adding a knob is one [`TABLE`] entry, its name in
//! [`LISTED`] (5.3.0's `/knobs` order, which a test holds to the table) and its field on [`Knobs`]
//! or [`Shaping`], then its use. A knob a search may also set for itself (`per_call`) is a field
//! of `api::SearchRequest` too, whose schema is the MCP `search` tool's.

use super::scalar::Flag;
use crate::identity::Identity;
use crate::limits::{MAX_BUDGET_TOKENS, MAX_EDGE_BUDGET, MAX_HOPS, MAX_N_RESULTS};
use schemars::JsonSchema;
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::time::Duration;

/// The knobs one search runs with: the file's (or the defaults), with `/configure`'s over them.
#[derive(Debug, Clone, PartialEq)]
pub struct Knobs {
    /// The RRF constant.
    pub k: u32,
    /// The default number of fused hits.
    pub n_results: usize,
    /// Each store is asked for `n * fetch_multiplier` hits.
    pub fetch_multiplier: usize,
    /// The bound on a store call, unless the store has its own `timeout_s`.
    pub per_store_timeout: Duration,
    /// How the fused list is shaped into the packet.
    pub shaping: Shaping,
    /// Which hits of several stores are one document (a search's own `identity` wins).
    pub identity: Identity,
    /// Per-store weight and floor set at run time, by store name. Kept across changes of other
    /// stores, dropped with their own. Always empty as the file sets the knobs.
    pub stores: BTreeMap<String, Override>,
}

/// A store's weight and floor as `/configure` set them; `None` keeps the entry's.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Override {
    pub weight: Option<f64>,
    pub floor: Option<f64>,
}

/// The packet's knobs, with 5.3.0's names (`federation:` in the config, `GET /stores`). What they
/// do is the packet's (`crate::packet`); their defaults and rules are the [`TABLE`]'s.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Shaping {
    /// A store whose top hit stands this far above its runner-up (or is an exact match, >= 0.999)
    /// leads the list, unless a weight puts another store's hit strictly ahead. 0 turns it off.
    /// It reads magnitudes, so it is off by default.
    pub authority_margin: f64,
    /// Seats each answering store is given before the fused order fills the rest. 0 turns it off.
    pub min_per_store: usize,
    /// The default token page; null for none (a search's own `budget_tokens` wins).
    pub budget_tokens: Option<usize>,
    /// Whether a SerenMemory core brings its satellite episodes and the core it superseded.
    #[serde(rename = "satellite_edges_enabled")]
    pub satellite_edges: bool,
    /// The most satellite and supersedes edges a packet carries.
    pub satellite_budget: usize,
    /// Whether memories sharing the packet's topics follow (`/by_topic`).
    #[serde(rename = "edges_enabled")]
    pub topic_edges: bool,
    /// The most topic edges a packet carries.
    pub edge_budget: usize,
    /// Rounds of search: 1 is one fan; each more round fans a bridge query made of the query and
    /// the last round's best hits.
    pub hops: usize,
    /// How many of a round's hits make the next round's bridge.
    pub hop_terms: usize,
    /// The most hits all later rounds add together.
    pub hop_budget: usize,
}

impl Default for Knobs {
    /// Every knob at its [`TABLE`] default: the seed's plain RRF (no page, no quota, no authority,
    /// no edges, one round), with 5.3.0's counts, so that turning a feature on needs one key.
    fn default() -> Self {
        let mut knobs = Knobs {
            k: 0,
            n_results: 0,
            fetch_multiplier: 0,
            per_store_timeout: Duration::ZERO,
            shaping: Shaping {
                authority_margin: 0.0,
                min_per_store: 0,
                budget_tokens: None,
                satellite_edges: false,
                satellite_budget: 0,
                topic_edges: false,
                edge_budget: 0,
                hops: 0,
                hop_terms: 0,
                hop_budget: 0,
            },
            identity: Identity::None,
            stores: BTreeMap::new(),
        };
        for knob in TABLE {
            (knob.set)(&mut knobs, &knob.default.value());
        }
        knobs
    }
}

impl Default for Shaping {
    fn default() -> Self {
        Knobs::default().shaping
    }
}

/// One knob, declared once.
pub struct Knob {
    /// Its 5.3.0 name, in the file's `federation:`, `POST /configure` and `GET /knobs`.
    pub name: &'static str,
    /// What it does, in plain words (`GET /knobs`, the viewer's Knobs tab).
    pub what: &'static str,
    /// The values it takes.
    pub rule: Rule,
    /// Its value when nobody set it.
    pub default: Given,
    /// Whether the config file's `federation:` reads it (every knob may be set with
    /// `POST /configure`).
    pub file: bool,
    /// Whether a search may set it for itself (`n_results`, `budget_tokens` on `search`).
    pub per_call: bool,
    get: fn(&Knobs) -> Value,
    set: fn(&mut Knobs, &Value),
    copy: fn(&mut Knobs, &Knobs),
}

/// The values a knob takes, each with the words its refusal uses.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Rule {
    /// A whole number >= 1.
    Positive,
    /// A whole number within `min..=max`.
    Count(usize, usize),
    /// Seconds, by the one duration rule (`checked_seconds`: 1 ms..=1 h, never rounding to zero).
    Seconds,
    /// A number within 0..=1.
    Fraction,
    /// A token page: 0 (or, over `/configure`, less) is no page, else within 1..=max.
    Page(usize),
    /// true or false.
    Flag,
    /// One of these words.
    Choice(&'static [&'static str]),
}

/// A default, as a constant.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Given {
    Count(usize),
    Number(f64),
    Flag(bool),
    Nothing,
    Word(&'static str),
}

impl Given {
    pub fn value(self) -> Value {
        match self {
            Given::Count(n) => n.into(),
            Given::Number(x) => x.into(),
            Given::Flag(b) => b.into(),
            Given::Nothing => Value::Null,
            Given::Word(w) => w.into(),
        }
    }
}

/// Every federation knob, in the order `POST /configure` names them when it refuses a key (a
/// `GET /stores` lists those the file reads, in this order, as `supported_knobs`).
pub const TABLE: &[Knob] = &[
    Knob {
        name: "k",
        what: "the RRF constant: a hit at rank r scores weight / (k + r)",
        rule: Rule::Positive,
        default: Given::Count(60),
        file: true,
        per_call: false,
        get: |k| k.k.into(),
        set: |k, v| k.k = u32::try_from(count(v)).unwrap_or(u32::MAX),
        copy: |to, from| to.k = from.k,
    },
    Knob {
        name: "fusion_mode",
        what: "how ranked lists are merged: weighted Reciprocal Rank Fusion",
        rule: Rule::Choice(&["rrf"]),
        default: Given::Word("rrf"),
        file: false,
        per_call: false,
        get: |_| "rrf".into(),
        set: |_, _| {},
        copy: |_, _| {},
    },
    Knob {
        name: "n_results",
        what: "fused hits a search returns when it does not say",
        rule: Rule::Count(1, MAX_N_RESULTS as usize),
        default: Given::Count(10),
        file: true,
        per_call: true,
        get: |k| k.n_results.into(),
        set: |k, v| k.n_results = count(v),
        copy: |to, from| to.n_results = from.n_results,
    },
    Knob {
        name: "fetch_multiplier",
        what: "each store is asked for n_results times this",
        rule: Rule::Count(1, 100),
        default: Given::Count(2),
        file: true,
        per_call: false,
        get: |k| k.fetch_multiplier.into(),
        set: |k, v| k.fetch_multiplier = count(v),
        copy: |to, from| to.fetch_multiplier = from.fetch_multiplier,
    },
    Knob {
        name: "per_store_timeout_s",
        what: "seconds a store may take before it is named in failed (a store's own timeout_s wins)",
        rule: Rule::Seconds,
        default: Given::Number(5.0),
        file: true,
        per_call: false,
        get: |k| k.per_store_timeout.as_secs_f64().into(),
        set: |k, v| {
            k.per_store_timeout =
                super::store::checked_seconds(number(v)).unwrap_or(Duration::from_secs(5))
        },
        copy: |to, from| to.per_store_timeout = from.per_store_timeout,
    },
    Knob {
        name: "authority_margin",
        what: "a store whose top hit stands this far above its next leads the list; 0 is off",
        rule: Rule::Fraction,
        default: Given::Number(0.0),
        file: true,
        per_call: false,
        get: |k| k.shaping.authority_margin.into(),
        set: |k, v| k.shaping.authority_margin = number(v),
        copy: |to, from| to.shaping.authority_margin = from.shaping.authority_margin,
    },
    Knob {
        name: "min_per_store",
        what: "seats per answering store before the fused order fills the rest",
        rule: Rule::Count(0, MAX_N_RESULTS as usize),
        default: Given::Count(0),
        file: true,
        per_call: false,
        get: |k| k.shaping.min_per_store.into(),
        set: |k, v| k.shaping.min_per_store = count(v),
        copy: |to, from| to.shaping.min_per_store = from.shaping.min_per_store,
    },
    Knob {
        name: "budget_tokens",
        what: "a default token page for searches that set none; null is no page",
        rule: Rule::Page(MAX_BUDGET_TOKENS),
        default: Given::Nothing,
        file: true,
        per_call: true,
        get: |k| k.shaping.budget_tokens.map_or(Value::Null, Value::from),
        set: |k, v| k.shaping.budget_tokens = page(v),
        copy: |to, from| to.shaping.budget_tokens = from.shaping.budget_tokens,
    },
    Knob {
        name: "edges_enabled",
        what: "add memories sharing the packet's topics (SerenMemory /by_topic)",
        rule: Rule::Flag,
        default: Given::Flag(false),
        file: true,
        per_call: false,
        get: |k| k.shaping.topic_edges.into(),
        set: |k, v| k.shaping.topic_edges = v.as_bool().unwrap_or(false),
        copy: |to, from| to.shaping.topic_edges = from.shaping.topic_edges,
    },
    Knob {
        name: "edge_budget",
        what: "the most topic edges",
        rule: Rule::Count(0, MAX_EDGE_BUDGET),
        default: Given::Count(3),
        file: true,
        per_call: false,
        get: |k| k.shaping.edge_budget.into(),
        set: |k, v| k.shaping.edge_budget = count(v),
        copy: |to, from| to.shaping.edge_budget = from.shaping.edge_budget,
    },
    Knob {
        name: "satellite_edges_enabled",
        what: "a SerenMemory core brings its episodes and the core it replaced",
        rule: Rule::Flag,
        default: Given::Flag(false),
        file: true,
        per_call: false,
        get: |k| k.shaping.satellite_edges.into(),
        set: |k, v| k.shaping.satellite_edges = v.as_bool().unwrap_or(false),
        copy: |to, from| to.shaping.satellite_edges = from.shaping.satellite_edges,
    },
    Knob {
        name: "satellite_budget",
        what: "the most satellite and supersedes edges",
        rule: Rule::Count(0, MAX_EDGE_BUDGET),
        default: Given::Count(3),
        file: true,
        per_call: false,
        get: |k| k.shaping.satellite_budget.into(),
        set: |k, v| k.shaping.satellite_budget = count(v),
        copy: |to, from| to.shaping.satellite_budget = from.shaping.satellite_budget,
    },
    Knob {
        name: "hops",
        what: "rounds of search: 1 is one round, more bridge from the best hits",
        rule: Rule::Count(1, MAX_HOPS),
        default: Given::Count(1),
        file: true,
        per_call: false,
        get: |k| k.shaping.hops.into(),
        set: |k, v| k.shaping.hops = count(v),
        copy: |to, from| to.shaping.hops = from.shaping.hops,
    },
    Knob {
        name: "hop_terms",
        what: "words a hop takes from the last round's hits",
        rule: Rule::Count(0, MAX_EDGE_BUDGET),
        default: Given::Count(4),
        file: true,
        per_call: false,
        get: |k| k.shaping.hop_terms.into(),
        set: |k, v| k.shaping.hop_terms = count(v),
        copy: |to, from| to.shaping.hop_terms = from.shaping.hop_terms,
    },
    Knob {
        name: "hop_budget",
        what: "the most hits hops add",
        rule: Rule::Count(0, MAX_N_RESULTS as usize),
        default: Given::Count(5),
        file: true,
        per_call: false,
        get: |k| k.shaping.hop_budget.into(),
        set: |k, v| k.shaping.hop_budget = count(v),
        copy: |to, from| to.shaping.hop_budget = from.shaping.hop_budget,
    },
    Knob {
        name: "identity",
        what: "which hits of several stores are one document, scored as the sum of their stores' \
               contributions: none (each store's hit is its own), key (equal identity_key \
               values, a store's id by default) or content (equal texts)",
        rule: Rule::Choice(Identity::WORDS),
        default: Given::Word("none"),
        file: true,
        per_call: true,
        get: |k| k.identity.name().into(),
        set: |k, v| k.identity = v.as_str().and_then(Identity::parse).unwrap_or_default(),
        copy: |to, from| to.identity = from.identity,
    },
];

/// The order 5.3.0's `GET /knobs` lists the knobs in (and so the viewer's Knobs tab), which is
/// not the table's. A test holds it to the table.
pub const LISTED: &[&str] = &[
    "n_results",
    "fetch_multiplier",
    "per_store_timeout_s",
    "fusion_mode",
    "k",
    "authority_margin",
    "min_per_store",
    "budget_tokens",
    "edges_enabled",
    "edge_budget",
    "satellite_edges_enabled",
    "satellite_budget",
    "hops",
    "hop_terms",
    "hop_budget",
    // Not 5.3.0's: after its knobs.
    "identity",
];

/// The knobs in `GET /knobs`' order.
pub fn listed() -> impl Iterator<Item = &'static Knob> {
    LISTED.iter().filter_map(|name| knob(name))
}

/// The knobs the config file reads, in the table's order: `GET /stores`' `supported_knobs`.
pub fn supported() -> impl Iterator<Item = &'static Knob> {
    TABLE.iter().filter(|knob| knob.file)
}

/// The knob named `name`.
pub fn knob(name: &str) -> Option<&'static Knob> {
    TABLE.iter().find(|knob| knob.name == name)
}

impl Knob {
    /// This knob's value in `knobs`.
    pub fn value(&self, knobs: &Knobs) -> Value {
        (self.get)(knobs)
    }

    /// The later change wins, for this knob: `live` is in force, `was` is what the file set
    /// before a reload, `now` what it sets after. A knob the file left alone keeps its live value
    /// in `into`; one it changed takes the file's, and says so (`true`) when that replaces a
    /// different live value (one set with `/configure`).
    pub fn pick(&self, into: &mut Knobs, live: &Knobs, was: &Knobs, now: &Knobs) -> bool {
        let (live_v, was_v, now_v) = (self.value(live), self.value(was), self.value(now));
        if was_v == now_v {
            (self.copy)(into, live);
            false
        } else {
            (self.copy)(into, now);
            live_v != was_v && live_v != now_v
        }
    }

    /// `given` by this knob's rule: `Some` when it holds, else a problem naming `key`.
    fn check(&self, key: &str, given: &Value, problems: &mut Vec<String>) -> bool {
        let problem = match self.rule {
            Rule::Positive => (count(given) < 1)
                .then(|| format!("{key} must be a whole number >= 1, got {given}")),
            Rule::Count(min, max) => outside(key, count(given), min, max),
            Rule::Page(max) => page(given).and_then(|n| outside(key, n, 1, max)),
            Rule::Seconds => super::store::checked_seconds(number(given))
                .err()
                .map(|why| format!("{key} {why}")),
            Rule::Fraction => {
                let x = number(given);
                (!(x.is_finite() && (0.0..=1.0).contains(&x)))
                    .then(|| format!("{key} must be within 0..=1, got {x}"))
            }
            Rule::Flag => (!given.is_boolean()).then(|| format!("{key} must be true or false")),
            Rule::Choice(words) => match given.as_str() {
                Some(word) if words.contains(&word) => None,
                word => Some(format!(
                    "unknown {key} '{}'; valid: {}",
                    crate::text::cut(word.unwrap_or_default(), 40),
                    words_listed(words)
                )),
            },
        };
        match problem {
            Some(problem) => {
                problems.push(problem);
                false
            }
            None => true,
        }
    }
}

/// `given` (a knob's 5.3.0 name to its value; null or absent keys are not given) over `base`, by
/// the table's rules: every value out of its range is named (`prefix` + key), and keeps `base`'s.
/// The one set of rules for the file and `POST /configure` alike.
pub fn read_knobs(
    given: &Map<String, Value>,
    base: &Knobs,
    prefix: &str,
    problems: &mut Vec<String>,
) -> Knobs {
    let mut knobs = base.clone();
    for knob in TABLE {
        let Some(value) = given.get(knob.name) else {
            continue;
        };
        if !value.is_null() && knob.check(&format!("{prefix}{}", knob.name), value, problems) {
            (knob.set)(&mut knobs, value);
        }
    }
    knobs
}

/// Who reads a knob's value: the config file (booleans take the Python service's truthy words,
/// a page is a whole number) or a `POST /configure` body (JSON's own booleans; a page of 0 or
/// less clears it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reader {
    File,
    Request,
}

/// Reads one knob's value as its rule's type, in the reader's format: a wrong type is that
/// format's own error, at its key (and, in the file, its line), worded as serde words it. The
/// range is [`read_knobs`]'s to check. A null is `Value::Null`, which is "not given".
pub struct KnobSeed {
    pub knob: &'static Knob,
    pub reader: Reader,
}

impl<'de> DeserializeSeed<'de> for KnobSeed {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        fn read<'de, T, D>(d: D) -> Result<Value, D::Error>
        where
            T: Deserialize<'de> + Into<Value>,
            D: Deserializer<'de>,
        {
            Ok(Option::<T>::deserialize(d)?.map_or(Value::Null, Into::into))
        }
        match (self.knob.rule, self.reader) {
            (Rule::Positive, _) => read::<u32, D>(d),
            (Rule::Count(..), _) | (Rule::Page(_), Reader::File) => read::<usize, D>(d),
            (Rule::Page(_), Reader::Request) => read::<i64, D>(d),
            (Rule::Seconds | Rule::Fraction, _) => read::<f64, D>(d),
            (Rule::Flag, Reader::Request) => read::<bool, D>(d),
            (Rule::Flag, Reader::File) => {
                Ok(Option::<Flag>::deserialize(d)?.map_or(Value::Null, |flag| flag.0.into()))
            }
            (Rule::Choice(_), _) => read::<String, D>(d),
        }
    }
}

/// Reads the value under `name` into `given` when `name` is a knob `reader` takes (`Ok(true)`);
/// `Ok(false)` leaves the value unread for the caller (another key, or one to refuse or ignore).
/// A knob given twice is refused, as serde refuses a field given twice.
pub fn read_entry<'de, A: MapAccess<'de>>(
    map: &mut A,
    name: &str,
    reader: Reader,
    given: &mut Map<String, Value>,
) -> Result<bool, A::Error> {
    let Some(knob) = knob(name).filter(|knob| reader == Reader::Request || knob.file) else {
        return Ok(false);
    };
    if given.contains_key(knob.name) {
        return Err(de::Error::duplicate_field(knob.name));
    }
    let value = map.next_value_seed(KnobSeed { knob, reader })?;
    given.insert(knob.name.to_owned(), value);
    Ok(true)
}

fn outside(key: &str, value: usize, min: usize, max: usize) -> Option<String> {
    (!(min..=max).contains(&value))
        .then(|| format!("{key} must be within {min}..={max}, got {value}"))
}

fn words_listed(words: &[&str]) -> String {
    let quoted: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
    format!("[{}]", quoted.join(", "))
}

/// A whole number (the typed readers in front of the table give only those); a negative or
/// non-number reads as 0 and a huge one as the largest, so the rule names it.
fn count(value: &Value) -> usize {
    match value.as_u64() {
        Some(n) => usize::try_from(n).unwrap_or(usize::MAX),
        None => 0,
    }
}

fn number(value: &Value) -> f64 {
    value.as_f64().unwrap_or(f64::NAN)
}

/// 0 or less is no page [5.3].
fn page(value: &Value) -> Option<usize> {
    match value.as_i64() {
        Some(n) if n <= 0 => None,
        _ => Some(count(value)).filter(|&n| n > 0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_listed_order_names_every_knob_once() {
        let mut listed = LISTED.to_vec();
        listed.sort_unstable();
        listed.dedup();
        assert_eq!(listed.len(), LISTED.len());
        let mut table: Vec<&str> = TABLE.iter().map(|knob| knob.name).collect();
        table.sort_unstable();
        assert_eq!(listed, table);
    }

    #[test]
    fn every_knob_reads_its_own_default_back_and_copies_only_itself() {
        let defaults = Knobs::default();
        for knob in TABLE {
            assert_eq!(knob.value(&defaults), knob.default.value(), "{}", knob.name);
        }
        // A value set on one knob moves with that knob's copy and no other's.
        let mut changed = Knobs::default();
        let given: Map<String, Value> = serde_json::from_str(
            r#"{"k": 7, "n_results": 9, "fetch_multiplier": 4, "per_store_timeout_s": 2.5,
            "authority_margin": 0.5, "min_per_store": 2, "budget_tokens": 700,
            "edges_enabled": true, "edge_budget": 5, "satellite_edges_enabled": true,
            "satellite_budget": 6, "hops": 2, "hop_terms": 3, "hop_budget": 8,
            "identity": "key"}"#,
        )
        .unwrap();
        let mut problems = Vec::new();
        changed = read_knobs(&given, &changed, "", &mut problems);
        assert!(problems.is_empty(), "{problems:?}");
        for knob in TABLE.iter().filter(|knob| knob.name != "fusion_mode") {
            assert_ne!(knob.value(&changed), knob.value(&defaults), "{}", knob.name);
            let mut one = Knobs::default();
            (knob.copy)(&mut one, &changed);
            for other in TABLE {
                let expected = if other.name == knob.name {
                    &changed
                } else {
                    &defaults
                };
                assert_eq!(
                    other.value(&one),
                    other.value(expected),
                    "{} moved {}",
                    knob.name,
                    other.name
                );
            }
        }
    }

    #[test]
    fn a_value_out_of_its_rule_is_named_and_keeps_the_base() {
        let given: Map<String, Value> = serde_json::from_str(
            r#"{"k": 0, "authority_margin": 1.5, "budget_tokens": -3, "hops": 0,
            "fusion_mode": "linear", "per_store_timeout_s": 0}"#,
        )
        .unwrap();
        let mut problems = Vec::new();
        let knobs = read_knobs(&given, &Knobs::default(), "federation.", &mut problems);
        assert_eq!(
            problems,
            [
                "federation.k must be a whole number >= 1, got 0",
                "unknown federation.fusion_mode 'linear'; valid: ['rrf']",
                "federation.per_store_timeout_s must be a number of seconds within 0.001..=3600 (1 ms to an hour), got 0",
                "federation.authority_margin must be within 0..=1, got 1.5",
                "federation.hops must be within 1..=5, got 0",
            ]
        );
        // -3 is "no page" (0 or less), not a problem.
        assert_eq!(knobs.shaping.budget_tokens, None);
        assert_eq!(knobs.k, 60);
    }

    #[test]
    fn each_reader_reads_a_knob_in_its_own_format_and_names_a_wrong_type_at_its_key() {
        use super::super::file::FileFederation;
        // The file takes the Python service's truthy words; a wrong type is serde_yaml's words,
        // at the key and line.
        let file: FileFederation = serde_yaml::from_str("edges_enabled: yes\nhops: 2\n").unwrap();
        assert_eq!(file.knobs["edges_enabled"], Value::Bool(true));
        assert_eq!(file.knobs["hops"], Value::from(2));
        let wrong = serde_yaml::from_str::<FileFederation>("k: 60\nhop_budget: lots\n")
            .unwrap_err()
            .to_string();
        assert!(
            wrong.starts_with("hop_budget: invalid type: string"),
            "{wrong}"
        );
        assert!(wrong.contains("expected usize at line 2"), "{wrong}");
        // The file does not read `fusion_mode` (only `/configure` does): left for the warning.
        let file: FileFederation = serde_yaml::from_str("fusion_mode: rrf\n").unwrap();
        assert!(file.knobs.is_empty());
        // A request takes JSON's own booleans only, and a page below 0.
        let request = |body: &str| {
            let mut de = serde_json::Deserializer::from_str(body);
            serde_path_to_error::deserialize::<_, crate::api::ConfigureRequest>(&mut de)
                .map_err(|e| e.to_string())
        };
        let taken = request(r#"{"budget_tokens": -1, "edges_enabled": true}"#).unwrap();
        assert_eq!(taken.knobs["budget_tokens"], Value::from(-1));
        let wrong = request(r#"{"edges_enabled": "yes"}"#).unwrap_err();
        assert!(
            wrong.starts_with("edges_enabled: invalid type: string"),
            "{wrong}"
        );
        let twice = request(r#"{"k": 5, "k": 6}"#).unwrap_err();
        assert!(twice.contains("duplicate field `k`"), "{twice}");
        let unknown = request(r#"{"hop_count": 2}"#).unwrap_err();
        assert!(
            unknown.starts_with(
                "hop_count: unknown field `hop_count`, expected one of `k`, `fusion_mode`"
            ),
            "{unknown}"
        );
        assert!(
            unknown.contains("`hop_budget`, `identity`, `stores` at line 1"),
            "{unknown}"
        );
    }
}
