//! The tree scenario: a callosum fanning three callosums that each fan 16 stores, against the flat
//! 48-store fan over the same stubs, and one middle callosum asked alone (one level).
//!
//! Before any load it checks what the answers must share. With equal weights and every store
//! answering, the flat fan orders a hit by (r, s): its rank r in its store, then the store's place
//! s in the roster. A middle callosum orders its own stores' hits the same way, so with h hits per
//! store its hit (r, s) sits at place p = (r - 1)·16 + ℓ + 1, ℓ being s's place among the middle's
//! stores. The top sees only p: it scores 1/(60 + p) and breaks ties by the middle's place j, so it
//! orders by (r, ℓ, j). That is the flat order exactly when s = 3ℓ + j, the stores dealt to the
//! middles in turn ("dealt": store s to middle s mod 3). Dealt in blocks ("blocks": middle j fans
//! stores 16j..16j+15) the tree still orders by (r, ℓ, j), which is not (r, s): the same hits once
//! `n_results` covers them all (or ends a rank band, n = 48), in another order. Both trees are
//! held to these predictions and to the flat answer; the dealt one is measured.

use super::*;

/// Stores in the flat fan, all of them leaves of the tree.
pub(super) const TREE_STORES: usize = 48;
/// Middle callosums, each fanning `TREE_STORES / TREE_MIDDLES` stores.
const TREE_MIDDLES: usize = 3;
/// Hits each store answers: 48 × 4 = 192 fit one answer (`n_results` is at most 200), so one
/// search can fetch every hit of either fan.
const TREE_HITS: usize = 4;
/// The concurrencies the flat fan, the tree and one middle are each driven at.
pub(super) const TREE_CONCURRENCY: [usize; 3] = [1, 16, 64];
/// `n_results` of the checks: the top hit, a first page, the rank-1 band, every hit, and more than
/// there are.
const TREE_CHECKS: [usize; 5] = [1, 10, 48, 192, 200];

/// A hit as the flat fan names it: its id, its store and its rank there. A tree's hit names the
/// same through `metadata.origin_store` and `metadata.origin_rank`.
#[derive(Clone, Debug, PartialEq)]
struct Origin {
    id: String,
    store: String,
    rank: u64,
}

/// One hit of an answer: where it came from and its score there (`origin_score` for a tree), and,
/// for a tree, the middle callosum it came through and its place in that middle's list.
struct Got {
    origin: Origin,
    score: Option<f64>,
    via: Option<(String, u64)>,
}

/// What the stubs answer: each store's name and its hits' ids, best first.
struct Truth {
    names: Vec<String>,
    ids: Vec<Vec<String>>,
}

impl Truth {
    /// Read from the very bodies the stubs serve.
    fn of(stubs: &[Stub]) -> Result<Self, String> {
        let ids = (0..stubs.len())
            .map(|index| {
                let body: Value = serde_json::from_slice(&stub_answer(index, TREE_HITS, false).1)
                    .map_err(|e| format!("stub {index}: {e}"))?;
                Ok(body["hits"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|hit| hit["id"].as_str().map(str::to_owned))
                    .collect())
            })
            .collect::<Result<_, String>>()?;
        Ok(Self {
            names: stubs.iter().map(|s| s.name.clone()).collect(),
            ids,
        })
    }

    /// Equal weights: by rank, then by place in `stores` (the roster order).
    fn fan_order(&self, stores: &[usize]) -> Vec<Origin> {
        let deepest = stores.iter().map(|&s| self.ids[s].len()).max().unwrap_or(0);
        let mut order = Vec::new();
        for r in 0..deepest {
            for &s in stores.iter().filter(|&&s| r < self.ids[s].len()) {
                order.push(Origin {
                    id: self.ids[s][r].clone(),
                    store: self.names[s].clone(),
                    rank: r as u64 + 1,
                });
            }
        }
        order
    }

    /// A top callosum over middles fanning `groups`: by place p in the middle's own list, then by
    /// the middle's place. Each with the middle it came through and p.
    fn tree_order(&self, groups: &[Vec<usize>]) -> Vec<(Origin, usize, u64)> {
        let lists: Vec<Vec<Origin>> = groups.iter().map(|g| self.fan_order(g)).collect();
        let longest = lists.iter().map(Vec::len).max().unwrap_or(0);
        let mut order = Vec::new();
        for p in 0..longest {
            for (j, list) in lists.iter().enumerate() {
                if let Some(origin) = list.get(p) {
                    order.push((origin.clone(), j, p as u64 + 1));
                }
            }
        }
        order
    }
}

/// The middle callosum fanning group `j`, by name.
fn middle_name(j: usize) -> String {
    format!("mid-{j}")
}

/// Store s to middle s mod 3: the tree whose order is the flat one.
fn dealt() -> Vec<Vec<usize>> {
    (0..TREE_MIDDLES)
        .map(|j| (j..TREE_STORES).step_by(TREE_MIDDLES).collect())
        .collect()
}

/// Stores 16j..16j+15 to middle j: the same hits, in another order.
fn blocks() -> Vec<Vec<usize>> {
    let size = TREE_STORES / TREE_MIDDLES;
    (0..TREE_MIDDLES)
        .map(|j| (j * size..(j + 1) * size).collect())
        .collect()
}

/// Starts a callosum in its own directory under `root`, fanning `entries` in this order.
async fn start_fan(
    ctx: &mut Context,
    root: &Path,
    label: &str,
    entries: &[Entry<'_>],
) -> Result<Service, String> {
    let dir = root.join(label);
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot make {}: {e}", dir.display()))?;
    let port = free_port().map_err(|e| format!("no free port: {e}"))?;
    let config = write_config_for(&dir, entries, port, Packet::Plain)?;
    let service = start_ours(&dir, &config)
        .await
        .map_err(|e| format!("the {label} callosum did not start: {e}"))?;
    ctx.starts.push(service.start);
    Ok(service)
}

/// A tree: a middle callosum per group of stubs, and a top one fanning them as `seren_callosum`
/// stores, in group order. The middles, then the top.
async fn start_tree(
    ctx: &mut Context,
    root: &Path,
    label: &str,
    stubs: &[Stub],
    groups: &[Vec<usize>],
) -> Result<(Vec<Service>, Service), String> {
    let mut middles = Vec::with_capacity(groups.len());
    for (j, group) in groups.iter().enumerate() {
        let entries: Vec<Entry> = group
            .iter()
            .map(|&s| (stubs[s].name.as_str(), stubs[s].kind, stubs[s].url.as_str()))
            .collect();
        middles.push(start_fan(ctx, root, &format!("{label}-{}", middle_name(j)), &entries).await?);
    }
    let names: Vec<String> = (0..groups.len()).map(middle_name).collect();
    let entries: Vec<Entry> = names
        .iter()
        .zip(&middles)
        .map(|(name, middle)| (name.as_str(), "seren_callosum", middle.base.as_str()))
        .collect();
    let top = start_fan(ctx, root, &format!("{label}-top"), &entries).await?;
    Ok((middles, top))
}

/// `POST /search` for `n` hits, read as the flat fan's (`tree` false) or a tree's hits.
async fn ask(ctx: &Context, service: &Service, n: usize, tree: bool) -> Result<Vec<Got>, String> {
    let response = ctx
        .client
        .post(format!("{}/search", service.base))
        .json(&json!({"query": "tree check", "n_results": n}))
        .send()
        .await
        .map_err(|e| format!("transport: {}", chain(&e)))?;
    let status = response.status();
    let answer: Value = response
        .json()
        .await
        .map_err(|e| format!("body: {}", chain(&e)))?;
    if status != reqwest::StatusCode::OK {
        return Err(format!("status {status}: {answer}"));
    }
    if answer["failed"].as_array().is_none_or(|f| !f.is_empty()) {
        return Err(format!("failed = {}", answer["failed"]));
    }
    let hits = answer["hits"].as_array().ok_or("no hits array")?;
    let (store, rank, score) = if tree {
        ("origin_store", "origin_rank", "origin_score")
    } else {
        ("store", "store_rank", "score")
    };
    hits.iter()
        .enumerate()
        .map(|(i, hit)| {
            let from = if tree { &hit["metadata"] } else { hit };
            let field = |key: &str| format!("hits[{i}]: no {key} in {hit}");
            let origin = Origin {
                id: hit["id"].as_str().ok_or_else(|| field("id"))?.to_owned(),
                store: from[store].as_str().ok_or_else(|| field(store))?.to_owned(),
                rank: from[rank].as_u64().ok_or_else(|| field(rank))?,
            };
            let via = tree.then(|| {
                Some((
                    hit["store"].as_str()?.to_owned(),
                    hit["store_rank"].as_u64()?,
                ))
            });
            Ok(Got {
                origin,
                score: from[score].as_f64(),
                via: via.flatten(),
            })
        })
        .collect()
}

/// The RRF score of rank `rank` at weight 1, k = 60, as the service computes it.
fn rrf(rank: u64) -> f64 {
    1.0 / (60.0 + rank as f64)
}

/// Holds the flat fan and both trees, for every n of `TREE_CHECKS`, to their predictions and to
/// each other. A broken one is a failure of the scenario; what agrees and what differs are notes.
async fn check(
    ctx: &mut Context,
    flat: &Service,
    trees: [(&str, &Service, &[Vec<usize>]); 2],
    truth: &Truth,
) {
    let all: Vec<usize> = (0..truth.names.len()).collect();
    let flat_order = truth.fan_order(&all);
    let total = flat_order.len();
    let mut broken: Vec<String> = Vec::new();
    let mut seen: Vec<String> = vec![String::new(); trees.len()];
    for n in TREE_CHECKS {
        let want = n.min(total);
        let flat_hits = match ask(ctx, flat, n, false).await {
            Ok(hits) => hits,
            Err(e) => {
                broken.push(format!("flat n={n}: {e}"));
                continue;
            }
        };
        let flat_got: Vec<Origin> = flat_hits.iter().map(|g| g.origin.clone()).collect();
        if flat_got != flat_order[..want] {
            broken.push(format!(
                "flat n={n}: not in (rank, roster) order: first difference at place {}",
                first_difference(&flat_got, &flat_order[..want])
            ));
        }
        if let Some(g) = flat_hits
            .iter()
            .find(|g| g.score != Some(rrf(g.origin.rank)))
        {
            broken.push(format!("flat n={n}: {} scored {:?}", g.origin.id, g.score));
        }
        for (t, (label, top, groups)) in trees.iter().enumerate() {
            let tree_hits = match ask(ctx, top, n, true).await {
                Ok(hits) => hits,
                Err(e) => {
                    broken.push(format!("{label} tree n={n}: {e}"));
                    continue;
                }
            };
            let got: Vec<Origin> = tree_hits.iter().map(|g| g.origin.clone()).collect();
            let predicted = truth.tree_order(groups);
            let predicted = &predicted[..want.min(predicted.len())];
            let predicted_origins: Vec<Origin> = predicted.iter().map(|p| p.0.clone()).collect();
            if got != predicted_origins {
                broken.push(format!(
                    "{label} tree n={n}: not in the predicted (rank, place in its middle, middle) \
                     order: first difference at place {}",
                    first_difference(&got, &predicted_origins)
                ));
            }
            for (g, (_, j, p)) in tree_hits.iter().zip(predicted) {
                let via = Some((middle_name(*j), *p));
                if g.via != via || g.score != Some(rrf(g.origin.rank)) {
                    broken.push(format!(
                        "{label} tree n={n}: {} came through {:?} with origin_score {:?}, \
                         expected {via:?} and {}",
                        g.origin.id,
                        g.via,
                        g.score,
                        rrf(g.origin.rank)
                    ));
                    break;
                }
            }
            let mut ids: Vec<&str> = got.iter().map(|o| o.id.as_str()).collect();
            ids.sort_unstable();
            let unique = ids.windows(2).all(|w| w[0] != w[1]);
            let mut flat_ids: Vec<&str> = flat_got.iter().map(|o| o.id.as_str()).collect();
            flat_ids.sort_unstable();
            let same_set = ids == flat_ids;
            let agree = got.iter().zip(&flat_got).filter(|(a, b)| a == b).count();
            // What must hold for either grouping, with equal weights and every store answering:
            // the top hit is the flat top hit (store 0 heads the first middle in both), and a cut
            // at the end of the rank-1 band (48 hits, 16 per middle) or past every hit keeps the
            // same hits.
            let must_same_set = n == 1 || n == TREE_STORES || n >= total;
            if !unique || got.len() != want || (must_same_set && !same_set) {
                broken.push(format!(
                    "{label} tree n={n}: {} hits, each id once: {unique}, same hits as the flat \
                     fan: {same_set}",
                    got.len()
                ));
            }
            if *label == "dealt" && got != flat_got {
                broken.push(format!(
                    "dealt tree n={n}: not the flat order: first difference at place {}",
                    first_difference(&got, &flat_got)
                ));
            }
            let common = got.iter().filter(|o| flat_got.contains(o)).count();
            let gap = if seen[t].is_empty() { "" } else { "; " };
            seen[t].push_str(&format!(
                "{gap}n={n}: {} hits, {common} in common with the flat fan, {agree} at the same \
                 place",
                got.len(),
            ));
        }
    }
    for ((label, _, _), seen) in trees.iter().zip(&seen) {
        let how = if *label == "dealt" {
            "store s under middle s mod 3"
        } else {
            "stores 16j..16j+15 under middle j"
        };
        let prefix = format!("{label} tree");
        let held = !broken
            .iter()
            .any(|b| b.starts_with(&prefix) || b.starts_with("flat"));
        let verdict = if held {
            "every hit in its predicted place, every origin_store, origin_rank and origin_score \
             the flat fan's store, store_rank and score"
        } else {
            "NOT as predicted (see FAILED below)"
        };
        ctx.notes
            .push(format!("tree check, {label} ({how}): {verdict}; {seen}"));
    }
    for why in broken {
        ctx.failures.push(format!("tree: {why}"));
    }
}

/// The 1-based place where two lists first differ.
fn first_difference(a: &[Origin], b: &[Origin]) -> String {
    let at = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    match (a.get(at), b.get(at)) {
        (Some(x), Some(y)) => format!("{}: {x:?}, expected {y:?}", at + 1),
        _ => format!("{}: {} hits, expected {}", at + 1, a.len(), b.len()),
    }
}

/// The note comparing the three at one concurrency: what each level costs.
fn level_note(flat: &Row, tree: &Row, middle: &Row) -> String {
    let over = |a: Duration, b: Duration| (a.as_secs_f64() - b.as_secs_f64()) * 1e3;
    format!(
        "tree C={}: p50 flat {} / tree {} / one level of {} {} ms; the tree over the flat fan \
         {:+.2} ms at p50 ({:+.2} at p99), over one level alone {:+.2} ms ({:+.2}); {:.0} / {:.0} \
         / {:.0} searches/s; cpu {} / {} / {} us per search (the tree's summed over its {} \
         processes)",
        flat.concurrency,
        ms(flat.p50),
        ms(tree.p50),
        middle.stores,
        ms(middle.p50),
        over(tree.p50, flat.p50),
        over(tree.p99, flat.p99),
        over(tree.p50, middle.p50),
        over(tree.p99, middle.p99),
        flat.rps,
        tree.rps,
        middle.rps,
        micros(flat.cpu_us),
        micros(tree.cpu_us),
        micros(middle.cpu_us),
        TREE_MIDDLES + 1,
    )
}

pub(super) async fn run_tree(ctx: &mut Context, scenario: &Scenario) -> Vec<Row> {
    eprintln!(
        "load: {} (K={} flat, and {} middle callosums of {} under a top one; L={} ms, C={:?}, {} \
         requests each)",
        scenario.name,
        scenario.stores,
        TREE_MIDDLES,
        scenario.stores / TREE_MIDDLES,
        scenario.latency.as_millis(),
        TREE_CONCURRENCY,
        scenario.requests
    );
    let mut rows = Vec::new();
    if let Err(e) = tree(ctx, scenario, &mut rows).await {
        ctx.failures.push(format!("{}: {e}", scenario.name));
    }
    rows
}

async fn tree(ctx: &mut Context, scenario: &Scenario, rows: &mut Vec<Row>) -> Result<(), String> {
    let mut stubs = Vec::with_capacity(scenario.stores);
    for index in 0..scenario.stores {
        let stub = start_stub(index, scenario.latency, TREE_HITS, false).await;
        stubs.push(stub.map_err(|e| format!("cannot start a stub store: {e}"))?);
    }
    let truth = Truth::of(&stubs)?;
    let root = tempfile::Builder::new()
        .prefix("scc-bench-tree-")
        .tempdir()
        .map_err(|e| format!("no temp dir: {e}"))?;
    let entries: Vec<Entry> = stubs
        .iter()
        .map(|s| (s.name.as_str(), s.kind, s.url.as_str()))
        .collect();
    let flat = start_fan(ctx, root.path(), "flat", &entries).await?;
    let (dealt_groups, blocks_groups) = (dealt(), blocks());
    let (middles, top) = start_tree(ctx, root.path(), "dealt", &stubs, &dealt_groups).await?;
    {
        // The blocks tree only answers the checks; it is stopped before the load.
        let (_blocks_middles, blocks_top) =
            start_tree(ctx, root.path(), "blocks", &stubs, &blocks_groups).await?;
        let trees = [
            ("dealt", &top, dealt_groups.as_slice()),
            ("blocks", &blocks_top, blocks_groups.as_slice()),
        ];
        check(ctx, &flat, trees, &truth).await;
    }

    let expect = Expect::Fused {
        hits: 10,
        failed: Vec::new(),
    };
    let mut tree_services = vec![&top];
    tree_services.extend(&middles);
    for concurrency in TREE_CONCURRENCY {
        let at = Scenario {
            concurrency,
            ..scenario.clone()
        };
        let load = (at.warmup, at.requests);
        let target = |service: &Service| Target::service(&service.base, &expect, CHECK_EVERY);
        let flat_row = measure(ctx, &at, Who::Ours, &[&flat], &target(&flat), load).await;
        let tree_row = measure(ctx, &at, Who::Tree, &tree_services, &target(&top), load).await;
        let mut middle_row = measure(
            ctx,
            &at,
            Who::Middle,
            &[&middles[0]],
            &target(&middles[0]),
            load,
        )
        .await;
        middle_row.stores = dealt_groups[0].len();
        ctx.notes
            .push(level_note(&flat_row, &tree_row, &middle_row));
        rows.extend([flat_row, tree_row, middle_row]);
    }
    drop(stubs);
    Ok(())
}
