//! Shaping the answer: the packet's rows as the wire's hits (each with why, for `explain`, and
//! the rows the cut left out), and the words for a search that had no store to ask.

use crate::api::{AlsoFrom, Dropped, Explain, Hit};
use crate::explain;
use crate::identity::Identity;
use crate::knobs::Knobs;
use crate::limits::MAX_EXPLAIN_DROPPED;
use crate::packet::{Cut, Row, Trace};
use crate::roster::Fan;
use std::path::Path;

/// The packet's `rows` as the answer's hits, in order. With `explain`'s `trace`: each hit with why
/// it is where it is, and the best rows the cut left out. `names` are the stores that answered the
/// first round, whose lists the `cut` fused into the first `ranked` rows; with `identity` on,
/// every hit says which other stores returned its document (`also_from`).
pub(super) fn hits(
    rows: Vec<Row>,
    trace: Option<Trace>,
    (names, cut, ranked, identity): (&[String], &Cut, usize, Identity),
    (fan, knobs): (&Fan, &Knobs),
) -> (Vec<Hit>, Option<Vec<Dropped>>) {
    let on = identity.is_on();
    match trace {
        None => (
            rows.into_iter().map(|row| wire(row, None, on)).collect(),
            None,
        ),
        Some(trace) => {
            let context = explain::Context {
                trace: &trace,
                names,
                cut,
                ranked,
                identity: on,
            };
            let scale = |name: &str| {
                (fan.bound.iter().find(|b| b.name == name))
                    .map_or((1.0, 0.0), |bound| knobs.weight_and_floor(bound))
            };
            let explains = explain::hits(&context, &rows, scale);
            let dropped = explain::dropped(&context, &rows, MAX_EXPLAIN_DROPPED);
            let hits = (rows.into_iter().zip(explains))
                .map(|(row, why)| wire(row, Some(why), on))
                .collect();
            (hits, Some(dropped))
        }
    }
}

/// A packet row as the wire shows it: the one place the packet's rows become `api` hits, so
/// the packet never imports `api`. `also_from` is there only when identity is on (`identity`).
fn wire(row: Row, explain: Option<Explain>, identity: bool) -> Hit {
    let also_from = identity.then(|| {
        (row.also.into_iter())
            .map(|also| AlsoFrom {
                store: also.store,
                id: also.id,
                store_rank: u32::try_from(also.rank).unwrap_or(u32::MAX),
                contribution: also.score,
            })
            .collect()
    });
    Hit {
        store: row.store,
        id: row.hit.id,
        content: row.hit.content,
        score: row.score,
        store_rank: u32::try_from(row.rank).unwrap_or(u32::MAX),
        base_relevance: row.hit.base_relevance,
        native_score: row.hit.native_score,
        raw_distance: row.hit.raw_distance,
        metadata: row.hit.metadata,
        also_from,
        explain,
    }
}

/// Why a search over no stores found nothing, in words a model can act on. `aimed`: the fan
/// is the part `stores` and `exclude_stores` left. `config` is the config file's path.
pub(super) fn nothing_fanned(fan: &Fan, aimed: bool, config: &Path) -> String {
    if aimed && fan.rows.is_empty() {
        "no store was searched: stores and exclude_stores leave none of the configured stores"
            .to_owned()
    } else if aimed {
        format!(
            "no store was searched: of the {} stores that stores and exclude_stores leave, \
             none is active (list_stores says why)",
            fan.rows.len()
        )
    } else if fan.rows.is_empty() {
        format!(
            "no stores are configured, so nothing was searched: add one with the add_store \
             tool (or POST /stores), or under federation.stores in {}",
            config.display()
        )
    } else {
        format!(
            "no store was searched: the {} configured are disabled or skipped (list_stores \
             says why)",
            fan.rows.len()
        )
    }
}
