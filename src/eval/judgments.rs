//! The judgments `eval` scores against: for each query, which documents are relevant and how
//! much. Read from JSON Lines (one judged query a line) or from TREC qrels with a `queries.tsv`
//! beside them, and checked whole: every bad line is named with its number and field, and the
//! caller searches nothing unless there is none. Pure: the caller reads the files and says which
//! store names the roster holds.
//!
//! A judged query lists at least one judgment: a query whose documents are all judged grade 0
//! counts (it scores 0, as trec_eval scores it), but a query nobody judged says nothing of a
//! ranking, and trec_eval would not see it at all.
//!
//! With identity on (contract §2c), a judgment may name a document by its identity instead of a
//! store and id: `{"identity": KEY}` (a qrels docid that is not `store/id` of a roster store).

use crate::identity::{By, Identity};
use crate::limits::{
    MAX_GRADE, MAX_JUDGED_QUERIES, MAX_JUDGMENTS_PER_QUERY, MAX_QID_BYTES, MAX_QUERY_BYTES,
};
use crate::text::escaped;
use serde_json::Value;
use std::collections::HashMap;
use std::collections::hash_map::Entry;

/// A document as judgments and runs name it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Doc {
    /// A store's name and that store's own id for it (a store's ids are its own, contract §2).
    Stored { store: String, id: String },
    /// A document by its identity (identity on): its key, as [`Scope::key`] writes it.
    Identity(String),
}

impl Doc {
    /// The document `id` of the store `store`.
    pub fn new(store: impl Into<String>, id: impl Into<String>) -> Self {
        Self::Stored {
            store: store.into(),
            id: id.into(),
        }
    }
}

impl std::fmt::Display for Doc {
    /// `store/id`, or the identity's key, as a run file's docid names it (unescaped).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Stored { store, id } => write!(f, "{store}/{id}"),
            Self::Identity(key) => f.write_str(key),
        }
    }
}

/// What judgments are read against: the roster's store names, and the identity the searches
/// run with (which decides whether, and how, a judgment may name a document by its identity).
#[derive(Debug, Clone, Copy)]
pub struct Scope<'a> {
    pub stores: &'a [String],
    pub identity: Identity,
}

impl<'a> Scope<'a> {
    /// The roster's `stores`, identity off.
    pub fn stores(stores: &'a [String]) -> Self {
        Self {
            stores,
            identity: Identity::None,
        }
    }

    /// A document's identity key as judgments give it: under `key`, the key trimmed (as a
    /// store's `identity_key` value is); under `content`, `sha256:` and the hex SHA-256 of the
    /// text's normal form (a key already written so is taken as is, as run files write it).
    pub fn key(&self, given: &str) -> Result<String, String> {
        let key = match self.identity {
            Identity::None => {
                return Err(
                    "identity is off: judge a document by store and id, or run eval \
                     with --identity key|content (or federation.identity)"
                        .to_owned(),
                );
            }
            Identity::Key => given.trim().to_owned(),
            Identity::Content if is_digest_key(given) => given.to_owned(),
            Identity::Content => By::Content
                .document("", given, &Default::default())
                .map(|document| document.key())
                .unwrap_or_default(),
        };
        if key.is_empty() {
            Err("empty (a blank key names no document)".to_owned())
        } else {
            Ok(key)
        }
    }
}

/// Whether `key` is `sha256:` and 64 lowercase hex digits: a content identity's key.
fn is_digest_key(key: &str) -> bool {
    key.strip_prefix("sha256:").is_some_and(|hex| {
        hex.len() == 64
            && hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

/// One judged query.
#[derive(Debug, Clone, PartialEq)]
pub struct Judged {
    pub qid: String,
    pub query: String,
    /// Its line in the judgments file (for qrels, its first line there).
    pub line: usize,
    /// Each judged document's grade; 0 is judged not relevant.
    pub grades: HashMap<Doc, u32>,
}

impl Judged {
    /// How many of its documents are relevant (grade 1 or more).
    pub fn relevant(&self) -> usize {
        self.grades.values().filter(|grade| **grade >= 1).count()
    }
}

/// How a judgments file is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// One JSON object a line: `{"qid"?, "query", "relevant": [{"store", "id", "grade"?}]}`.
    JsonLines,
    /// TREC qrels, `qid 0 store/id grade` a line, the query texts in a `queries.tsv` beside them.
    Qrels,
}

impl Format {
    /// JSON Lines when the first line that is not blank starts with `{`, TREC qrels otherwise (a
    /// qrels line starts with its qid).
    pub fn of(text: &str) -> Self {
        match text.lines().map(str::trim_start).find(|l| !l.is_empty()) {
            Some(line) if line.starts_with('{') => Format::JsonLines,
            _ => Format::Qrels,
        }
    }
}

/// Which file a bad line is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum File {
    /// The judgments file (JSON Lines or qrels).
    Judgments,
    /// The `queries.tsv` beside qrels.
    Queries,
}

/// What is wrong with the judgments: where (a line of a file, or the file as a whole), in which
/// field, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Bad {
    pub file: File,
    /// 1-based; `None` for the file as a whole.
    pub line: Option<usize>,
    /// The field, as a path into the line (`relevant[1].grade`, `docid`); empty for the line.
    pub field: String,
    pub why: String,
}

impl std::fmt::Display for Bad {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let file = match self.file {
            File::Judgments => "",
            File::Queries => "queries.tsv ",
        };
        match self.line {
            Some(line) => write!(f, "{file}line {line}: ")?,
            None if file.is_empty() => write!(f, "the file: ")?,
            None => write!(f, "{file}: ")?,
        }
        if !self.field.is_empty() {
            write!(f, "{}: ", self.field)?;
        }
        f.write_str(&self.why)
    }
}

/// Reads JSON Lines judgments. `roster` is every store name the roster holds. Blank lines are
/// passed over (a line's number is still its place in the file).
pub fn json_lines(text: &str, scope: Scope) -> Result<Vec<Judged>, Vec<Bad>> {
    let mut judged = Vec::new();
    let mut bad = Vec::new();
    let mut qids: HashMap<String, usize> = HashMap::new();
    let mut queries = 0;
    for (i, line) in text.lines().enumerate() {
        let number = i + 1;
        if line.trim().is_empty() {
            continue;
        }
        queries += 1;
        if queries > MAX_JUDGED_QUERIES {
            bad.push(at(File::Judgments, number, "", too_many_queries()));
            break;
        }
        match json_line(line, number, scope) {
            Ok(query) => match qids.entry(query.qid.clone()) {
                Entry::Occupied(first) => bad.push(at(
                    File::Judgments,
                    number,
                    "qid",
                    format!("{} is also line {}'s", escaped(&query.qid), first.get()),
                )),
                Entry::Vacant(slot) => {
                    slot.insert(number);
                    judged.push(query);
                }
            },
            Err(found) => bad.extend(found),
        }
    }
    finish(judged, bad)
}

/// Reads TREC qrels (`qid iteration store/id grade`, whitespace between, the iteration column
/// ignored) and the `queries.tsv` beside them (`qid<TAB>query`). A qid of the qrels must have a
/// line in `queries.tsv`; a query there that the qrels never judge is not run (trec_eval would not
/// score it). Queries come in the order of their first qrels line.
pub fn qrels(qrels: &str, queries: &str, scope: Scope) -> Result<Vec<Judged>, Vec<Bad>> {
    let mut bad = Vec::new();
    let texts = query_texts(queries, &mut bad);
    let mut judged: Vec<Judged> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    // Where each (qid, document) was first judged, for the words of a second judgment.
    let mut seen: HashMap<(usize, Doc), usize> = HashMap::new();
    let mut full = std::collections::HashSet::new();
    for (i, line) in qrels.lines().enumerate() {
        let number = i + 1;
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.is_empty() {
            continue;
        }
        let Some(one) = qrels_line(&fields, number, scope, &mut bad) else {
            continue;
        };
        let (qid, doc, grade) = one;
        let q = match index.get(qid) {
            Some(&q) => q,
            None => {
                if judged.len() == MAX_JUDGED_QUERIES {
                    bad.push(at(File::Judgments, number, "qid", too_many_queries()));
                    break;
                }
                let Some(query) = texts.get(qid) else {
                    bad.push(at(
                        File::Judgments,
                        number,
                        "qid",
                        format!("{} has no line in queries.tsv", escaped(qid)),
                    ));
                    // Its other lines are not worth a line each.
                    index.insert(qid.to_owned(), usize::MAX);
                    continue;
                };
                index.insert(qid.to_owned(), judged.len());
                judged.push(Judged {
                    qid: qid.to_owned(),
                    query: query.clone(),
                    line: number,
                    grades: HashMap::new(),
                });
                judged.len() - 1
            }
        };
        if q == usize::MAX {
            continue;
        }
        let query = &mut judged[q];
        if query.grades.len() == MAX_JUDGMENTS_PER_QUERY {
            // Said once a query, at the line past the bound.
            if full.insert(q) {
                bad.push(at(
                    File::Judgments,
                    number,
                    "",
                    too_many_judgments(&query.qid),
                ));
            }
            continue;
        }
        match seen.entry((q, doc.clone())) {
            Entry::Occupied(first) => bad.push(at(
                File::Judgments,
                number,
                "docid",
                format!(
                    "judged twice for qid {} (also line {})",
                    escaped(qid),
                    first.get()
                ),
            )),
            Entry::Vacant(slot) => {
                slot.insert(number);
                query.grades.insert(doc, grade);
            }
        }
    }
    finish(judged, bad)
}

/// The judged queries, or every bad line; no query at all is bad too.
fn finish(judged: Vec<Judged>, mut bad: Vec<Bad>) -> Result<Vec<Judged>, Vec<Bad>> {
    if judged.is_empty() && bad.is_empty() {
        bad.push(Bad {
            file: File::Judgments,
            line: None,
            field: String::new(),
            why: "no judged query in it".to_owned(),
        });
    }
    if bad.is_empty() { Ok(judged) } else { Err(bad) }
}

fn at(file: File, line: usize, field: &str, why: impl Into<String>) -> Bad {
    Bad {
        file,
        line: Some(line),
        field: field.to_owned(),
        why: why.into(),
    }
}

fn too_many_queries() -> String {
    format!(
        "more than {MAX_JUDGED_QUERIES} judged queries (MAX_JUDGED_QUERIES); not read past here"
    )
}

fn too_many_judgments(qid: &str) -> String {
    format!(
        "qid {} has more than {MAX_JUDGMENTS_PER_QUERY} judgments (MAX_JUDGMENTS_PER_QUERY)",
        escaped(qid)
    )
}

/// One line of JSON Lines judgments, or everything wrong with it.
fn json_line(line: &str, number: usize, scope: Scope) -> Result<Judged, Vec<Bad>> {
    let here = |field: &str, why: String| at(File::Judgments, number, field, why);
    let value: Value = serde_json::from_str(line).map_err(|e| {
        // serde's words end "at line 1 column N": the line is ours, the column is what helps.
        let words = e.to_string();
        let words = words
            .split(" at line ")
            .next()
            .unwrap_or_default()
            .to_owned();
        vec![here(
            "",
            format!("not JSON: {words} at column {}", e.column()),
        )]
    })?;
    let Value::Object(object) = value else {
        return Err(vec![here(
            "",
            format!("{} where a judged query (an object) goes", kind(&value)),
        )]);
    };
    let mut bad = Vec::new();
    for key in object.keys() {
        if !matches!(key.as_str(), "qid" | "query" | "relevant") {
            bad.push(here(
                &field_name(key),
                "unknown field (a judged query has qid, query and relevant)".to_owned(),
            ));
        }
    }
    let qid = match object.get("qid") {
        None => Some(number.to_string()),
        Some(value) => checked(qid_of(value), "qid", &here, &mut bad),
    };
    let query = match object.get("query") {
        None => {
            bad.push(here("query", "missing".to_owned()));
            None
        }
        Some(Value::String(query)) => checked(query_of(query), "query", &here, &mut bad),
        Some(other) => {
            bad.push(here(
                "query",
                format!("must be a string, got {}", kind(other)),
            ));
            None
        }
    };
    let grades = match object.get("relevant") {
        None => {
            bad.push(here("relevant", "missing".to_owned()));
            None
        }
        Some(Value::Array(items)) => relevant(items, scope, &here, &mut bad),
        Some(other) => {
            bad.push(here(
                "relevant",
                format!("must be an array of judgments, got {}", kind(other)),
            ));
            None
        }
    };
    match (qid, query, grades) {
        (Some(qid), Some(query), Some(grades)) if bad.is_empty() => Ok(Judged {
            qid,
            query,
            line: number,
            grades,
        }),
        _ => Err(bad),
    }
}

/// A line's `relevant` array as grades by document, saying what is wrong with each item.
fn relevant(
    items: &[Value],
    scope: Scope,
    here: &impl Fn(&str, String) -> Bad,
    bad: &mut Vec<Bad>,
) -> Option<HashMap<Doc, u32>> {
    if items.is_empty() {
        bad.push(here(
            "relevant",
            "empty: judge at least one document (grade 0 judges it not relevant)".to_owned(),
        ));
        return None;
    }
    if items.len() > MAX_JUDGMENTS_PER_QUERY {
        bad.push(here(
            "relevant",
            format!(
                "{} judgments; at most {MAX_JUDGMENTS_PER_QUERY} (MAX_JUDGMENTS_PER_QUERY)",
                items.len()
            ),
        ));
        return None;
    }
    let before = bad.len();
    let mut grades = HashMap::new();
    let mut first: HashMap<Doc, usize> = HashMap::new();
    for (j, item) in items.iter().enumerate() {
        let path = format!("relevant[{j}]");
        let Value::Object(judgment) = item else {
            bad.push(here(
                &path,
                format!("must be an object {{store, id, grade}}, got {}", kind(item)),
            ));
            continue;
        };
        for key in judgment.keys() {
            if !matches!(key.as_str(), "store" | "id" | "grade" | "identity") {
                bad.push(here(
                    &format!("{path}.{}", field_name(key)),
                    "unknown field (a judgment has store, id and grade, or identity and grade)"
                        .to_owned(),
                ));
            }
        }
        let doc = match judgment.get("identity") {
            Some(value) => {
                if judgment.contains_key("store") || judgment.contains_key("id") {
                    bad.push(here(
                        &path,
                        "names a store and id and an identity: one or the other".to_owned(),
                    ));
                }
                checked(
                    identity_of(value, scope),
                    "identity",
                    &|_, why| here(&format!("{path}.identity"), why),
                    bad,
                )
            }
            None => stored(judgment, scope, &path, here, bad),
        };
        let grade = match judgment.get("grade") {
            None => Some(1),
            Some(value) => checked(
                grade_of(value),
                "grade",
                &|_, why| here(&format!("{path}.grade"), why),
                bad,
            ),
        };
        let (Some(doc), Some(grade)) = (doc, grade) else {
            continue;
        };
        match first.entry(doc.clone()) {
            Entry::Occupied(earlier) => bad.push(here(
                &path,
                format!(
                    "{} judged twice in this query (also relevant[{}])",
                    escaped(&doc.to_string()),
                    earlier.get()
                ),
            )),
            Entry::Vacant(slot) => {
                slot.insert(j);
                grades.insert(doc, grade);
            }
        }
    }
    (bad.len() == before).then_some(grades)
}

/// A judgment's `store` and `id`, or `None` with what is wrong pushed onto `bad`.
fn stored(
    judgment: &serde_json::Map<String, Value>,
    scope: Scope,
    path: &str,
    here: &impl Fn(&str, String) -> Bad,
    bad: &mut Vec<Bad>,
) -> Option<Doc> {
    let store = match judgment.get("store") {
        None => {
            bad.push(here(&format!("{path}.store"), "missing".to_owned()));
            None
        }
        Some(value) => checked(
            store_of(value, scope.stores),
            "store",
            &|_, why| here(&format!("{path}.store"), why),
            bad,
        ),
    };
    let id = match judgment.get("id") {
        None => {
            bad.push(here(&format!("{path}.id"), "missing".to_owned()));
            None
        }
        Some(value) => checked(
            id_of(value),
            "id",
            &|_, why| here(&format!("{path}.id"), why),
            bad,
        ),
    };
    store.zip(id).map(|(store, id)| Doc::new(store, id))
}

/// A judgment's `identity`: a document's key (under identity `content`, its text).
fn identity_of(value: &Value, scope: Scope) -> Result<Doc, String> {
    match value {
        Value::String(given) => scope.key(given).map(Doc::Identity),
        other => Err(format!("must be a string, got {}", kind(other))),
    }
}

/// The value, or `None` with why pushed onto `bad` under `field`.
fn checked<T>(
    value: Result<T, String>,
    field: &str,
    here: &impl Fn(&str, String) -> Bad,
    bad: &mut Vec<Bad>,
) -> Option<T> {
    value.map_err(|why| bad.push(here(field, why))).ok()
}

/// One qrels line's qid, document and grade, or `None` with what is wrong pushed onto `bad`.
fn qrels_line<'a>(
    fields: &[&'a str],
    number: usize,
    scope: Scope,
    bad: &mut Vec<Bad>,
) -> Option<(&'a str, Doc, u32)> {
    let here = |field: &str, why: String| at(File::Judgments, number, field, why);
    let &[qid, _iteration, docid, grade] = fields else {
        bad.push(here(
            "",
            format!(
                "{} fields; a qrels line has 4: qid, iteration, store/id, grade",
                fields.len()
            ),
        ));
        return None;
    };
    let before = bad.len();
    checked(qid_text(qid), "qid", &here, bad);
    let roster_store = |store: &str| scope.stores.iter().any(|name| name == store);
    let doc = match docid.split_once('/') {
        // With identity on, a docid that is not a roster store's `store/id` is a key.
        Some((store, _)) if scope.identity.is_on() && !roster_store(store) => {
            checked(identity_docid(docid, scope), "docid", &here, bad)
        }
        None if scope.identity.is_on() => {
            checked(identity_docid(docid, scope), "docid", &here, bad)
        }
        None => {
            bad.push(here("docid", format!("{} is not store/id", escaped(docid))));
            None
        }
        Some((store, id)) => {
            let store = checked(store_name(store, scope.stores), "docid", &here, bad);
            let id = checked(id_text(id), "docid", &here, bad);
            store.zip(id).map(|(store, id)| Doc::new(store, id))
        }
    };
    let grade = match grade.parse::<i64>() {
        Ok(grade) => checked(
            grade_in_range(grade, grade.to_string()),
            "grade",
            &here,
            bad,
        ),
        Err(_) => {
            bad.push(here("grade", grade_words(&escaped(grade))));
            None
        }
    };
    let (Some(doc), Some(grade)) = (doc, grade) else {
        return None;
    };
    (bad.len() == before).then_some((qid, doc, grade))
}

/// A qrels docid naming a document by its identity: the key as run files write it (under
/// `content`, `sha256:` and 64 hex digits, since a qrels line cannot hold a text).
fn identity_docid(docid: &str, scope: Scope) -> Result<Doc, String> {
    if scope.identity == Identity::Content && !is_digest_key(docid) {
        return Err(format!(
            "{} is neither store/id of a roster store nor a content identity's key \
             (sha256: and the 64 hex digits of the document's normal form)",
            escaped(docid)
        ));
    }
    scope.key(docid).map(Doc::Identity)
}

/// `queries.tsv`: each qid's query text, with what is wrong pushed onto `bad`.
fn query_texts(text: &str, bad: &mut Vec<Bad>) -> HashMap<String, String> {
    let mut texts = HashMap::new();
    let mut lines: HashMap<String, usize> = HashMap::new();
    for (i, line) in text.lines().enumerate() {
        let number = i + 1;
        if line.trim().is_empty() {
            continue;
        }
        let here = |field: &str, why: String| at(File::Queries, number, field, why);
        let Some((qid, query)) = line.split_once('\t') else {
            bad.push(here("", "no tab: a line is qid<TAB>query".to_owned()));
            continue;
        };
        let (Some(qid), Some(query)) = (
            checked(qid_text(qid.trim()), "qid", &here, bad),
            checked(query_of(query), "query", &here, bad),
        ) else {
            continue;
        };
        match lines.entry(qid.clone()) {
            Entry::Occupied(first) => bad.push(here(
                "qid",
                format!("{} is also line {}'s", escaped(&qid), first.get()),
            )),
            Entry::Vacant(slot) => {
                slot.insert(number);
                texts.insert(qid, query);
            }
        }
    }
    texts
}

/// A qid from JSON: a string or a whole number.
fn qid_of(value: &Value) -> Result<String, String> {
    match value {
        Value::String(qid) => qid_text(qid),
        Value::Number(n) if n.is_u64() => Ok(n.to_string()),
        other => Err(format!(
            "must be a string or a whole number, got {}",
            kind(other)
        )),
    }
}

/// A qid as text: it goes into every run line, so no whitespace, and short.
fn qid_text(qid: &str) -> Result<String, String> {
    if qid.is_empty() {
        Err("empty".to_owned())
    } else if qid.len() > MAX_QID_BYTES {
        Err(format!(
            "{} bytes; at most {MAX_QID_BYTES} (MAX_QID_BYTES)",
            qid.len()
        ))
    } else if qid.chars().any(|c| c.is_whitespace() || c.is_control()) {
        Err(format!(
            "{} holds whitespace (run files are split at it)",
            escaped(qid)
        ))
    } else {
        Ok(qid.to_owned())
    }
}

/// A query's text: what a search takes.
fn query_of(query: &str) -> Result<String, String> {
    if query.trim().is_empty() {
        Err("empty".to_owned())
    } else if query.len() > MAX_QUERY_BYTES {
        Err(format!(
            "{} bytes; a search takes at most {MAX_QUERY_BYTES}",
            query.len()
        ))
    } else {
        Ok(query.to_owned())
    }
}

fn store_of(value: &Value, roster: &[String]) -> Result<String, String> {
    match value {
        Value::String(store) => store_name(store, roster),
        other => Err(format!("must be a store's name, got {}", kind(other))),
    }
}

/// A store name the roster holds.
fn store_name(store: &str, roster: &[String]) -> Result<String, String> {
    if roster.iter().any(|name| name == store) {
        return Ok(store.to_owned());
    }
    const SHOWN: usize = 10;
    let mut names = (roster.iter().take(SHOWN).map(String::as_str))
        .collect::<Vec<_>>()
        .join(", ");
    if roster.len() > SHOWN {
        names.push_str(", ...");
    }
    if names.is_empty() {
        names.push_str("none");
    }
    Err(format!(
        "unknown store {}: not in the roster (its stores: {names})",
        escaped(store)
    ))
}

/// A judged document's id: a string, or a whole number as stores that number their documents
/// send it (the hit's id is its text).
fn id_of(value: &Value) -> Result<String, String> {
    match value {
        Value::String(id) => id_text(id),
        Value::Number(n) if n.is_u64() || n.is_i64() => Ok(n.to_string()),
        other => Err(format!(
            "must be a string or a whole number, got {}",
            kind(other)
        )),
    }
}

fn id_text(id: &str) -> Result<String, String> {
    if id.is_empty() {
        Err("empty id".to_owned())
    } else {
        Ok(id.to_owned())
    }
}

fn grade_of(value: &Value) -> Result<u32, String> {
    match value {
        Value::Number(n) => match n.as_i64() {
            Some(grade) => grade_in_range(grade, n.to_string()),
            None => Err(grade_words(&n.to_string())),
        },
        other => Err(grade_words(kind(other))),
    }
}

fn grade_in_range(grade: i64, shown: String) -> Result<u32, String> {
    u32::try_from(grade)
        .ok()
        .filter(|g| *g <= MAX_GRADE)
        .ok_or_else(|| grade_words(&shown))
}

fn grade_words(got: &str) -> String {
    format!("must be an integer within 0..={MAX_GRADE}, got {got}")
}

/// A key from the file, fit to name as a field.
fn field_name(key: &str) -> String {
    if key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') && !key.is_empty() {
        key.to_owned()
    } else {
        escaped(key)
    }
}

/// What kind of JSON value this is, in words.
fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roster() -> Vec<String> {
        vec!["notes".to_owned(), "facts".to_owned()]
    }

    /// Every bad line of `text` as words, or the judged queries' (qid, query, grades sorted).
    fn check_bad(text: &str, expected: &[&str]) {
        let found = json_lines(text, Scope::stores(&roster())).expect_err(text);
        let words: Vec<String> = found.iter().map(ToString::to_string).collect();
        assert_eq!(words, expected, "{text}");
    }

    fn grades(judged: &Judged) -> Vec<(String, String, u32)> {
        let mut all: Vec<_> = (judged.grades.iter())
            .map(|(doc, grade)| match doc {
                Doc::Stored { store, id } => (store.clone(), id.clone(), *grade),
                Doc::Identity(key) => ("(identity)".to_owned(), key.clone(), *grade),
            })
            .collect();
        all.sort();
        all
    }

    #[test]
    fn json_lines_read_qids_queries_and_grades() {
        let text = concat!(
            r#"{"query": "xavier cuda", "relevant": [{"store": "notes", "id": "n42"}, {"store": "facts", "id": 7, "grade": 2}]}"#,
            "\n\n",
            r#"{"qid": "q2", "query": "backup", "relevant": [{"store": "notes", "id": "n1", "grade": 0}]}"#,
            "\r\n",
            r#"{"qid": 17, "query": "rust", "relevant": [{"store": "facts", "id": "f 1", "grade": 3}]}"#,
        );
        let judged = json_lines(text, Scope::stores(&roster())).unwrap();
        let summary: Vec<_> = (judged.iter())
            .map(|j| (j.qid.as_str(), j.query.as_str(), j.line, j.relevant()))
            .collect();
        assert_eq!(
            summary,
            [
                ("1", "xavier cuda", 1, 2),
                ("q2", "backup", 3, 0),
                ("17", "rust", 4, 1)
            ]
        );
        assert_eq!(
            grades(&judged[0]),
            [
                ("facts".into(), "7".into(), 2),
                ("notes".into(), "n42".into(), 1)
            ]
        );
        assert_eq!(grades(&judged[2]), [("facts".into(), "f 1".into(), 3)]);
    }

    #[test]
    fn every_bad_line_is_named_with_its_field() {
        let ok = r#"{"query": "q", "relevant": [{"store": "notes", "id": "a"}]}"#;
        check_bad(
            "{\"query\": \"q\",",
            &["line 1: not JSON: EOF while parsing a value at column 14"],
        );
        check_bad(
            &format!("{ok}\n[1, 2]"),
            &["line 2: an array where a judged query (an object) goes"],
        );
        check_bad(
            r#"{"relevant": [{"store": "notes", "id": "a"}]}"#,
            &["line 1: query: missing"],
        );
        check_bad(
            r#"{"query": "  ", "relevant": [{"store": "notes", "id": "a"}]}"#,
            &["line 1: query: empty"],
        );
        check_bad(
            r#"{"query": 5, "relevant": [{"store": "notes", "id": "a"}]}"#,
            &["line 1: query: must be a string, got a number"],
        );
        check_bad(r#"{"query": "q"}"#, &["line 1: relevant: missing"]);
        check_bad(
            r#"{"query": "q", "relevant": {}}"#,
            &["line 1: relevant: must be an array of judgments, got an object"],
        );
        check_bad(
            r#"{"query": "q", "relevant": []}"#,
            &[
                "line 1: relevant: empty: judge at least one document (grade 0 judges it not relevant)",
            ],
        );
        check_bad(
            r#"{"query": "q", "relevant": [{"store": "nope", "id": "a"}]}"#,
            &[
                "line 1: relevant[0].store: unknown store 'nope': not in the roster (its stores: notes, facts)",
            ],
        );
        check_bad(
            r#"{"query": "q", "relevant": [{"id": "a"}]}"#,
            &["line 1: relevant[0].store: missing"],
        );
        check_bad(
            r#"{"query": "q", "relevant": [{"store": "notes"}]}"#,
            &["line 1: relevant[0].id: missing"],
        );
        check_bad(
            r#"{"query": "q", "relevant": [{"store": "notes", "id": ""}]}"#,
            &["line 1: relevant[0].id: empty id"],
        );
        check_bad(
            r#"{"query": "q", "relevant": [{"store": "notes", "id": [1]}]}"#,
            &["line 1: relevant[0].id: must be a string or a whole number, got an array"],
        );
        for (grade, got) in [
            ("1.5", "1.5"),
            ("\"2\"", "a string"),
            ("-1", "-1"),
            ("11", "11"),
            ("true", "a boolean"),
        ] {
            check_bad(
                &format!(
                    r#"{{"query": "q", "relevant": [{{"store": "notes", "id": "a", "grade": {grade}}}]}}"#
                ),
                &[&format!(
                    "line 1: relevant[0].grade: must be an integer within 0..=10, got {got}"
                )],
            );
        }
        check_bad(
            r#"{"query": "q", "relevant": [3]}"#,
            &["line 1: relevant[0]: must be an object {store, id, grade}, got a number"],
        );
        check_bad(
            r#"{"query": "q", "relevant": [{"store": "notes", "id": "a", "rel": 2}]}"#,
            &[
                "line 1: relevant[0].rel: unknown field (a judgment has store, id and grade, or identity and grade)",
            ],
        );
        check_bad(
            r#"{"query": "q", "relevant": [{"store": "notes", "id": "a"}, {"store": "notes", "id": "a", "grade": 2}]}"#,
            &["line 1: relevant[1]: 'notes/a' judged twice in this query (also relevant[0])"],
        );
        check_bad(
            r#"{"query": "q", "qrel": 1, "relevant": [{"store": "notes", "id": "a"}]}"#,
            &["line 1: qrel: unknown field (a judged query has qid, query and relevant)"],
        );
        check_bad(
            r#"{"qid": "a b", "query": "q", "relevant": [{"store": "notes", "id": "a"}]}"#,
            &["line 1: qid: 'a b' holds whitespace (run files are split at it)"],
        );
        check_bad(
            r#"{"qid": 1.5, "query": "q", "relevant": [{"store": "notes", "id": "a"}]}"#,
            &["line 1: qid: must be a string or a whole number, got a number"],
        );
        check_bad(
            &format!("{}\n{ok}", ok.replacen("{", "{\"qid\": \"2\", ", 1)),
            &["line 2: qid: '2' is also line 1's"],
        );
        check_bad("\n  \n", &["the file: no judged query in it"]);
        // Every problem of a line, and of every line, at once.
        check_bad(
            &format!(
                "{ok}\n{{\"query\": \"\", \"relevant\": [{{\"store\": 1, \"id\": \"a\", \"grade\": 2.0}}]}}\nnot json"
            ),
            &[
                "line 2: query: empty",
                "line 2: relevant[0].store: must be a store's name, got a number",
                "line 2: relevant[0].grade: must be an integer within 0..=10, got 2.0",
                "line 3: not JSON: expected ident at column 2",
            ],
        );
    }

    #[test]
    fn json_lines_hold_to_their_bounds() {
        let line = r#"{"query": "q", "relevant": [{"store": "notes", "id": "a"}]}"#;
        let text = format!("{line}\n").repeat(MAX_JUDGED_QUERIES + 1);
        let text = text.replace(r#"{"query""#, r#"{"qid": "Q", "query""#);
        // Each line its own qid.
        let text: String = (text.lines().enumerate())
            .map(|(i, l)| l.replacen("\"Q\"", &format!("\"q{i}\""), 1) + "\n")
            .collect();
        assert_eq!(
            json_lines(&text, Scope::stores(&roster())).unwrap_err()[0].to_string(),
            format!(
                "line {}: more than 10000 judged queries (MAX_JUDGED_QUERIES); not read past here",
                MAX_JUDGED_QUERIES + 1
            )
        );
        let many: Vec<String> = (0..=MAX_JUDGMENTS_PER_QUERY)
            .map(|i| format!(r#"{{"store": "notes", "id": "{i}"}}"#))
            .collect();
        let text = format!(r#"{{"query": "q", "relevant": [{}]}}"#, many.join(","));
        assert_eq!(
            json_lines(&text, Scope::stores(&roster())).unwrap_err()[0].to_string(),
            "line 1: relevant: 5001 judgments; at most 5000 (MAX_JUDGMENTS_PER_QUERY)"
        );
        let long = "x".repeat(MAX_QUERY_BYTES + 1);
        let text =
            format!(r#"{{"query": "{long}", "relevant": [{{"store": "notes", "id": "a"}}]}}"#);
        assert_eq!(
            json_lines(&text, Scope::stores(&roster())).unwrap_err()[0].to_string(),
            "line 1: query: 8193 bytes; a search takes at most 8192"
        );
    }

    #[test]
    fn qrels_read_with_their_queries() {
        let qrels = "q1 0 notes/n42 1\nq2 0 facts/f/1 2\nq1 Q0 facts/x 0\n\n";
        let queries = "q1\txavier cuda\nq2\tbackup plan\nq3\tnever judged\n";
        let judged = qrels_and(qrels, queries).unwrap();
        let summary: Vec<_> = (judged.iter())
            .map(|j| (j.qid.as_str(), j.query.as_str(), j.line, j.relevant()))
            .collect();
        assert_eq!(
            summary,
            [("q1", "xavier cuda", 1, 1), ("q2", "backup plan", 2, 1)]
        );
        assert_eq!(
            grades(&judged[0]),
            [
                ("facts".into(), "x".into(), 0),
                ("notes".into(), "n42".into(), 1)
            ]
        );
        assert_eq!(grades(&judged[1]), [("facts".into(), "f/1".into(), 2)]);
    }

    fn qrels_and(qrels: &str, queries: &str) -> Result<Vec<Judged>, Vec<Bad>> {
        super::qrels(qrels, queries, Scope::stores(&roster()))
    }

    #[test]
    fn every_bad_qrels_line_is_named_with_its_field() {
        let check = |qrels: &str, queries: &str, expected: &[&str]| {
            let found = qrels_and(qrels, queries).expect_err(qrels);
            let words: Vec<String> = found.iter().map(ToString::to_string).collect();
            assert_eq!(words, expected, "{qrels}");
        };
        let queries = "q1\tone\nq2\ttwo\n";
        check(
            "q1 0 notes/a",
            queries,
            &["line 1: 3 fields; a qrels line has 4: qid, iteration, store/id, grade"],
        );
        check(
            "q1 0 notes-a 1",
            queries,
            &["line 1: docid: 'notes-a' is not store/id"],
        );
        check(
            "q1 0 nope/a 1",
            queries,
            &["line 1: docid: unknown store 'nope': not in the roster (its stores: notes, facts)"],
        );
        check("q1 0 notes/ 1", queries, &["line 1: docid: empty id"]);
        check(
            "q1 0 notes/a x",
            queries,
            &["line 1: grade: must be an integer within 0..=10, got 'x'"],
        );
        check(
            "q1 0 notes/a -2",
            queries,
            &["line 1: grade: must be an integer within 0..=10, got -2"],
        );
        check(
            "q1 0 notes/a 1.0",
            queries,
            &["line 1: grade: must be an integer within 0..=10, got '1.0'"],
        );
        check(
            "q9 0 notes/a 1\nq9 0 notes/b 1",
            queries,
            &["line 1: qid: 'q9' has no line in queries.tsv"],
        );
        check(
            "q1 0 notes/a 1\nq1 0 notes/a 2",
            queries,
            &["line 2: docid: judged twice for qid 'q1' (also line 1)"],
        );
        check("\n", queries, &["the file: no judged query in it"]);
        check(
            "q1 0 notes/a 1",
            "q1 one\n",
            &[
                "queries.tsv line 1: no tab: a line is qid<TAB>query",
                "line 1: qid: 'q1' has no line in queries.tsv",
            ],
        );
        check(
            "q1 0 notes/a 1",
            "q1\t \nq1\tone\nq1\tagain\n",
            &[
                "queries.tsv line 1: query: empty",
                "queries.tsv line 3: qid: 'q1' is also line 2's",
            ],
        );
    }

    #[test]
    fn qrels_hold_to_their_bounds() {
        let lines: String = (0..MAX_JUDGMENTS_PER_QUERY + 2)
            .map(|i| format!("q1 0 notes/{i} 1\n"))
            .collect();
        let bad: Vec<String> = (qrels_and(&lines, "q1\tone\n").unwrap_err().iter())
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            bad,
            [format!(
                "line {}: qid 'q1' has more than 5000 judgments (MAX_JUDGMENTS_PER_QUERY)",
                MAX_JUDGMENTS_PER_QUERY + 1
            )]
        );
    }

    #[test]
    fn the_format_is_told_by_the_first_line() {
        assert_eq!(Format::of("\n  {\"query\": 1}\n"), Format::JsonLines);
        assert_eq!(Format::of("q1 0 notes/a 1\n"), Format::Qrels);
        assert_eq!(Format::of(""), Format::Qrels);
    }

    #[test]
    fn with_identity_on_a_judgment_may_name_a_document_by_its_key() {
        let stores = roster();
        let key = Scope {
            stores: &stores,
            identity: Identity::Key,
        };
        let text = concat!(
            r#"{"query": "q", "relevant": [{"identity": " lib/json.html "}, {"store": "notes", "id": "n1", "grade": 2}]}"#,
            "\n",
            r#"{"query": "r", "relevant": [{"identity": "a", "store": "notes"}, {"identity": 7}, {"identity": "  "}]}"#,
        );
        let found = json_lines(text, key).unwrap_err();
        let words: Vec<String> = found.iter().map(ToString::to_string).collect();
        assert_eq!(
            words,
            [
                "line 2: relevant[0]: names a store and id and an identity: one or the other",
                "line 2: relevant[1].identity: must be a string, got a number",
                "line 2: relevant[2].identity: empty (a blank key names no document)",
            ]
        );
        let judged = json_lines(text.lines().next().unwrap(), key).unwrap();
        assert_eq!(
            grades(&judged[0]),
            [
                ("(identity)".to_owned(), "lib/json.html".to_owned(), 1),
                ("notes".to_owned(), "n1".to_owned(), 2),
            ]
        );
        // Off, the same line is refused, saying how to turn it on.
        let off = json_lines(text.lines().next().unwrap(), Scope::stores(&stores)).unwrap_err();
        assert!(
            off[0]
                .to_string()
                .starts_with("line 1: relevant[0].identity: identity is off"),
            "{off:?}"
        );
        // Qrels: a docid that is not a roster store's store/id is a key.
        let judged = super::qrels("1 0 lib/json.html 1\n1 0 notes/n1 0\n", "1\tq\n", key).unwrap();
        assert_eq!(
            grades(&judged[0]),
            [
                ("(identity)".to_owned(), "lib/json.html".to_owned(), 1),
                ("notes".to_owned(), "n1".to_owned(), 0),
            ]
        );
    }

    #[test]
    fn under_content_identity_a_judgment_gives_the_text_and_qrels_its_digest() {
        let stores = roster();
        let content = Scope {
            stores: &stores,
            identity: Identity::Content,
        };
        let digest = By::Content
            .document("", "Dump  an object", &Default::default())
            .unwrap()
            .key();
        assert!(is_digest_key(&digest), "{digest}");
        // Case and spacing fold away, as the fusion folds them.
        assert_eq!(content.key("dump an OBJECT").unwrap(), digest);
        assert_eq!(content.key(&digest).unwrap(), digest);
        let judged = super::qrels(&format!("1 0 {digest} 1\n"), "1\tq\n", content).unwrap();
        assert_eq!(grades(&judged[0])[0].1, digest);
        let bad = super::qrels("1 0 json.dumps 1\n", "1\tq\n", content).unwrap_err();
        assert!(
            bad[0].to_string().starts_with(
                "line 1: docid: 'json.dumps' is neither store/id of a roster store nor a content"
            ),
            "{bad:?}"
        );
    }
}
