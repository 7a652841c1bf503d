//! A small, pure Okapi BM25 index: the lexical ranker behind both sample stores.
//!
//! Owns tokenizing text and scoring documents against a query. It does not own what a document is
//! (the stores decide which fields go into the text), filtering (tiers, projects) or any wire format.
//! No IO, no async, no allocation after `Index::new` beyond the answer itself.
//!
//! Choices, so the ranking is predictable:
//! - Tokens are runs of alphanumeric characters, lowercased. Everything else separates, so
//!   `xavier.cuda-version` is `xavier`, `cuda`, `version` and `/usr/local/cuda` contains `cuda`.
//! - Single-character tokens and a short English stop-word list are dropped: alone they carry no
//!   meaning, and without the first rule a version such as `5.1.2` would match every text with a `1`.
//! - A trivial plural strip instead of a stemmer: `-ies` becomes `-y` and a final `s` is dropped from
//!   tokens of four or more characters not ending in `ss` (`backups` -> `backup`, `drivers` ->
//!   `driver`). It is applied to documents and queries alike, so an odd stem (`status` -> `statu`)
//!   still matches itself; the cost is a rare false friend (`news` -> `new`), fine for sample data.
//! - idf is Lucene's `ln(1 + (N - n + 0.5) / (n + 0.5))`, which is always positive, so any document
//!   that shares a term with the query scores above zero and a term in every document still counts.
//! - A term repeated in the query counts once.

use std::collections::HashMap;

/// Term-frequency saturation: how quickly more repeats of a term stop adding score.
const K1: f64 = 1.2;
/// Length normalisation: 0 ignores document length, 1 normalises fully.
const B: f64 = 0.75;

/// Words too common to say anything about a document. Kept short on purpose: a word missing here
/// only costs a little ranking noise, a word wrongly here makes a query unanswerable.
const STOP_WORDS: &[&str] = &[
    "about", "after", "all", "also", "an", "and", "any", "are", "as", "at", "be", "been", "but",
    "by", "can", "did", "do", "does", "for", "from", "had", "has", "have", "he", "her", "his",
    "how", "if", "in", "into", "is", "it", "its", "me", "my", "no", "not", "of", "on", "or", "our",
    "she", "so", "than", "that", "the", "their", "them", "then", "there", "these", "they", "this",
    "to", "too", "was", "we", "were", "what", "when", "where", "which", "who", "why", "will",
    "with", "you", "your",
];

/// Splits text into index terms, as described in the module doc.
pub fn tokenize(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|raw| raw.chars().count() > 1)
        .map(str::to_lowercase)
        .filter(|word| !STOP_WORDS.contains(&word.as_str()))
        .map(strip_plural)
        .collect()
}

/// The trivial plural strip; see the module doc for why it is this crude.
fn strip_plural(word: String) -> String {
    let chars = word.chars().count();
    if chars > 4
        && let Some(stem) = word.strip_suffix("ies")
    {
        return format!("{stem}y");
    }
    if chars >= 4 && word.ends_with('s') && !word.ends_with("ss") {
        let mut word = word;
        word.pop();
        return word;
    }
    word
}

/// An immutable BM25 index over a fixed list of documents, addressed by their position.
#[derive(Debug)]
pub struct Index {
    /// term -> (document index, term frequency), document indexes ascending.
    postings: HashMap<String, Vec<(usize, u32)>>,
    /// Token count of each document, after stop words are dropped.
    doc_len: Vec<usize>,
    /// Mean of `doc_len`; 0.0 only when there are no tokens at all.
    avg_len: f64,
}

impl Index {
    pub fn new(docs: Vec<String>) -> Self {
        let mut postings: HashMap<String, Vec<(usize, u32)>> = HashMap::new();
        let mut doc_len = Vec::with_capacity(docs.len());
        for (doc, text) in docs.iter().enumerate() {
            let tokens = tokenize(text);
            doc_len.push(tokens.len());
            let mut counts: HashMap<String, u32> = HashMap::new();
            for token in tokens {
                *counts.entry(token).or_default() += 1;
            }
            for (term, tf) in counts {
                // Documents are visited in order, so each postings list stays sorted by index.
                postings.entry(term).or_default().push((doc, tf));
            }
        }
        let total: usize = doc_len.iter().sum();
        let avg_len = if doc_len.is_empty() {
            0.0
        } else {
            total as f64 / doc_len.len() as f64
        };
        Self {
            postings,
            doc_len,
            avg_len,
        }
    }

    /// Every document with a score above zero, best first; equal scores keep document order.
    pub fn search(&self, query: &str) -> Vec<(usize, f64)> {
        let mut terms = tokenize(query);
        // Dedup in first-seen order, so the floating-point sum below always adds in the same order.
        let mut seen = std::collections::HashSet::new();
        terms.retain(|term| seen.insert(term.clone()));

        let n_docs = self.doc_len.len() as f64;
        let mut scores = vec![0.0_f64; self.doc_len.len()];
        for term in &terms {
            let Some(list) = self.postings.get(term) else {
                continue;
            };
            let df = list.len() as f64;
            let idf = (1.0 + (n_docs - df + 0.5) / (df + 0.5)).ln();
            for &(doc, tf) in list {
                let tf = f64::from(tf);
                // With no tokens anywhere there is nothing to normalise against; a document with a
                // posting has tokens, so this branch only guards the division.
                let rel_len = if self.avg_len > 0.0 {
                    self.doc_len[doc] as f64 / self.avg_len
                } else {
                    1.0
                };
                let norm = K1 * (1.0 - B + B * rel_len);
                scores[doc] += idf * tf * (K1 + 1.0) / (tf + norm);
            }
        }

        let mut hits: Vec<(usize, f64)> = scores
            .into_iter()
            .enumerate()
            .filter(|&(_, score)| score > 0.0)
            .collect();
        hits.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        hits
    }
}

/// Five decimals, as the real stores round their numbers.
pub fn round5(x: f64) -> f64 {
    (x * 1e5).round() / 1e5
}

#[cfg(test)]
mod tests {
    use super::*;

    fn index(docs: &[&str]) -> Index {
        Index::new(docs.iter().map(|d| d.to_string()).collect())
    }

    /// Asserts the ranked document order for `query` over `docs`.
    fn check(docs: &[&str], query: &str, expected: &[usize], why: &str) {
        let got: Vec<usize> = index(docs).search(query).iter().map(|h| h.0).collect();
        assert_eq!(got, expected, "{why}: query {query:?} over {docs:?}");
    }

    #[test]
    fn ranking() {
        let cases: &[(&str, &[&str], &str, &[usize])] = &[
            (
                "the rarer matching term wins (idf ordering)",
                &["apple banana", "apple cherry", "apple banana"],
                "apple cherry",
                &[1, 0, 2],
            ),
            (
                "shorter document wins at equal tf (length normalisation)",
                &["cuda driver jetson board fan heatsink", "cuda driver"],
                "cuda",
                &[1, 0],
            ),
            (
                "more repeats of a term rank higher",
                &[
                    "cuda xavier",
                    "cuda cuda xavier xavier",
                    "cuda cuda cuda xavier xavier xavier",
                ],
                "cuda",
                &[2, 1, 0],
            ),
            ("empty query matches nothing", &["cuda"], "", &[]),
            (
                "stop words alone match nothing",
                &["the cuda thing"],
                "the of and",
                &[],
            ),
            (
                "unknown terms match nothing",
                &["cuda xavier"],
                "kyoto",
                &[],
            ),
            (
                "equal scores keep document order (ties)",
                &["rust backup", "kyoto", "rust backup", "rust backup"],
                "backup",
                &[0, 2, 3],
            ),
            (
                "a plural in the query finds the singular",
                &["one backup", "the kyoto trip"],
                "backups",
                &[0],
            ),
            (
                "dotted keys split into words",
                &["xavier.cuda-version", "homelab.nas-model"],
                "cuda version",
                &[0],
            ),
            ("no documents, no hits", &[], "cuda", &[]),
            (
                "a term in every document still counts",
                &["cuda", "cuda"],
                "cuda",
                &[0, 1],
            ),
        ];
        for (why, docs, query, expected) in cases {
            check(docs, query, expected, why);
        }
    }

    #[test]
    fn term_frequency_saturates() {
        let docs: Vec<String> = (1..=4)
            .map(|tf| {
                // Same length for every document, so only tf differs.
                let mut words = vec!["cuda"; tf];
                words.resize(4, "filler");
                words.join(" ")
            })
            .collect();
        let idx = Index::new(docs);
        let mut by_tf = idx.search("cuda");
        by_tf.sort_by_key(|h| h.0);
        let scores: Vec<f64> = by_tf.iter().map(|h| h.1).collect();
        assert_eq!(scores.len(), 4);
        for pair in scores.windows(2) {
            assert!(pair[1] > pair[0], "more repeats score more: {scores:?}");
        }
        for gains in scores.windows(3) {
            assert!(
                gains[2] - gains[1] < gains[1] - gains[0],
                "each extra repeat adds less: {scores:?}"
            );
        }
        // The bound of one term's contribution is idf * (k1 + 1).
        let idf = (1.0_f64 + (4.0 - 4.0 + 0.5) / (4.0 + 0.5)).ln();
        assert!(scores.iter().all(|s| *s < idf * (K1 + 1.0)));
    }

    #[test]
    fn search_is_deterministic() {
        let docs = &[
            "cuda xavier nvcc",
            "xavier jetpack",
            "cuda cuda",
            "backup nas",
            "nvcc path",
        ];
        let first = index(docs).search("cuda xavier nvcc jetpack");
        for _ in 0..5 {
            assert_eq!(index(docs).search("cuda xavier nvcc jetpack"), first);
        }
        assert!(first.iter().all(|h| h.1 > 0.0));
    }

    #[test]
    fn tokenizer() {
        let cases: &[(&str, &[&str])] = &[
            ("The CUDA thing on the Xavier", &["cuda", "thing", "xavier"]),
            ("xavier.cuda-version", &["xavier", "cuda", "version"]),
            (
                "/usr/local/cuda-11.4/bin/nvcc",
                &["usr", "local", "cuda", "11", "bin", "nvcc"],
            ),
            ("JetPack 5.1.2", &["jetpack"]),
            (
                "backups, libraries, class, bus",
                &["backup", "library", "class", "bus"],
            ),
            // Non-ASCII letters are letters; the crude strip also hits a name, on both sides alike.
            ("Inês café", &["inê", "café"]),
            ("", &[]),
        ];
        for (text, expected) in cases {
            assert_eq!(tokenize(text), *expected, "tokenize({text:?})");
        }
    }
}
