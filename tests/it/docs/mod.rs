//! The docs hold nothing that can go stale unseen: every relative link and `#anchor` in the
//! repository's Markdown resolves, the file by its path and the anchor by GitHub's slug rules.

mod markdown;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn every_relative_link_and_anchor_resolves() {
    let root = root();
    let pages = markdown::all_pages(root);
    let anchors: BTreeMap<String, BTreeSet<String>> = pages
        .iter()
        .map(|page| (page.path.clone(), markdown::anchors(page)))
        .collect();
    let mut broken = Vec::new();
    let mut checked = 0;
    for page in &pages {
        for link in markdown::relative_links(page) {
            checked += 1;
            let (path, anchor) = link.target.split_once('#').unwrap_or((&link.target, ""));
            let base = Path::new(&page.path).parent().unwrap();
            let target = if path.is_empty() {
                Some(PathBuf::from(&page.path))
            } else {
                markdown::normalized(&base.join(path))
            };
            let Some(target) = target.filter(|t| root.join(t).exists()) else {
                broken.push(format!("{}: {} does not exist", link.at, link.target));
                continue;
            };
            if anchor.is_empty() {
                continue;
            }
            let key = target.to_string_lossy().replace('\\', "/");
            match anchors.get(&key) {
                Some(known) if known.contains(anchor) => {}
                Some(known) => broken.push(format!(
                    "{}: {key} has no #{anchor}; it has: {}",
                    link.at,
                    known.iter().cloned().collect::<Vec<_>>().join(", ")
                )),
                None => broken.push(format!(
                    "{}: #{anchor} points into {key}, which is not Markdown",
                    link.at
                )),
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
    assert!(
        checked > 50,
        "only {checked} links found: is the parser blind?"
    );
}
