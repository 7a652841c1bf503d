//! The one HTTP call every store gets: POST the protocol's body to the store, within a deadline,
//! read at most a capped body, and decode it.
//!
//! Every way this can go wrong becomes a [`Failure`] whose text carries no secret: no token, no
//! url, no query. The deadline covers the whole exchange (connect, headers and every body byte), so
//! a store that trickles or never ends its body is cut off like one that never answers. A request
//! that meets a pooled connection the store has just closed is sent once more, inside that deadline.

use super::protocol::{Call, Protocol};
use super::transport::{Answer, Target, Transport};
use crate::chain::Chain;
use crate::fusion::Hit;
use crate::ledger::{Hold, Over, Purse};
use crate::secret::Secret;
use crate::text::cut;
use bytes::Bytes;
use reqwest::header::{HeaderMap, HeaderValue};
use std::fmt;
use std::time::Duration;

pub use crate::limits::DEFAULT_BODY_CAP;

/// Why a store gave nothing. Displayed as the `reason` of a `failed` entry.
#[derive(Debug, Clone, PartialEq)]
pub enum Failure {
    /// The whole exchange did not finish within the store's timeout.
    Timeout(Duration),
    /// No connection could be made.
    Connect(String),
    /// The store answered with a non-2xx status.
    Status(u16),
    /// The connection broke while the request or the answer was under way.
    Transport(String),
    /// The body was larger than the cap.
    TooLarge(usize),
    /// The body is not the JSON the protocol expects.
    Decode(String),
    /// An MCP server could not be started or reached, or its session ended; in words of the
    /// callosum's own (kinds, statuses, exit codes), never a text the server or a library wrote.
    Mcp(String),
    /// An MCP tool answered with an error (`isError`, or a JSON-RPC error): the server is up.
    /// The text is the server's own and may quote the query: only the search that met it sees it
    /// (see [`Failure::public`]).
    Tool(String),
    /// The answer was dropped: keeping it would have taken the search, or the process, past its
    /// bound on the bytes of store answers held (`ledger`). Not the store's fault.
    Memory(Over),
}

impl Failure {
    /// Whether the store refused this request for what it asked (a status a different query
    /// would not get: 400, 413, 414, 422), rather than failed. Such a refusal says nothing about
    /// whether the store is up, so it must not open the store's circuit.
    pub fn blames_the_request(&self) -> bool {
        matches!(
            self,
            Failure::Status(400 | 413 | 414 | 422) | Failure::Tool(_) | Failure::Memory(_)
        )
    }

    /// The reason for every reader but the search that met it: the store's health record (and
    /// so `GET /health/stores` and the `circuit open` reason other searches get) and the log.
    /// It is the `Display` text but for a tool's error, whose words are the server's and may
    /// quote the query; every other kind is worded without values already.
    pub fn public(&self) -> String {
        match self {
            Failure::Tool(_) => "tool error (its text went only to the search that met it)".into(),
            other => other.to_string(),
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Timeout(limit) => write!(f, "timeout after {:.2}s", limit.as_secs_f64()),
            Failure::Connect(why) => write!(f, "connect: {why}"),
            Failure::Status(508) => f.write_str(
                "loop: status 508, the url leads back to a callosum this search already passed",
            ),
            Failure::Status(code) => write!(f, "status {code}"),
            Failure::Transport(why) => write!(f, "transport: {why}"),
            Failure::TooLarge(cap) => write!(f, "body over the {} KiB cap", cap / 1024),
            Failure::Decode(why) => write!(f, "decode: {}", cut(why, 200)),
            Failure::Mcp(why) => f.write_str(why),
            Failure::Tool(why) => write!(f, "tool error: {why}"),
            Failure::Memory(over) => over.fmt(f),
        }
    }
}

/// One bound store's way of being called.
pub struct Remote {
    /// The full search url (base url + search path + query). Never put into a message.
    target: Target,
    /// The topic search url (`/by_topic`), for a protocol that speaks it.
    topic: Option<Target>,
    /// Whether a token is sent (only this is shown by `Debug`).
    auth: bool,
    /// The headers every call sends (JSON both ways, the token), built once; `None` when the
    /// token is no valid header value, which every call then fails with.
    fixed: Option<HeaderMap>,
    protocol: Box<dyn Protocol>,
    body_cap: usize,
    /// Straight over the shared pool (a clone shares it), the store's own (`tls_ca_file`), or
    /// through reqwest when a proxy covers the store.
    transport: Transport,
}

impl fmt::Debug for Remote {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Remote")
            .field("auth", &self.auth)
            .finish_non_exhaustive()
    }
}

impl Remote {
    pub fn new(
        target: Target,
        token: Option<Secret>,
        protocol: Box<dyn Protocol>,
        transport: Transport,
    ) -> Self {
        let fixed = fixed_headers(token.as_ref());
        Self {
            target,
            topic: None,
            fixed,
            auth: token.is_some(),
            protocol,
            body_cap: DEFAULT_BODY_CAP,
            transport,
        }
    }

    /// Also asks `target` for topic edges (`/by_topic`), for a protocol that speaks it.
    pub fn with_topics(mut self, target: Target) -> Self {
        self.topic = Some(target);
        self
    }

    /// Whether this store answers topic searches.
    pub fn has_topics(&self) -> bool {
        self.topic.is_some()
    }

    /// Asks the store for `n` hits, carrying `chain` (the search's place among callosums).
    pub async fn search(
        &self,
        query: &str,
        n: usize,
        (chain, call): (&Chain, Call),
        purse: &Purse<'_>,
    ) -> Result<Vec<Hit>, Failure> {
        let body = Bytes::from(self.protocol.request(query, n, &call.context));
        let exchange = (&self.target, body, chain, call.timeout);
        self.call(exchange, (n, purse), |bytes, limit| {
            self.protocol.decode_kept(bytes, limit, call.keep)
        })
        .await
    }

    /// Asks the store for up to `n` memories tagged with any of `topics`, none of `exclude`
    /// (`None` for a store without topic search), under the same deadline and caps as a search.
    pub async fn by_topic(
        &self,
        topics: &[String],
        n: usize,
        exclude: &[String],
        (chain, call): (&Chain, Call),
        purse: &Purse<'_>,
    ) -> Option<Result<Vec<Hit>, Failure>> {
        let target = self.topic.as_ref()?;
        let body = Bytes::from(self.protocol.topic_request(topics, n, exclude)?);
        Some(
            self.call(
                (target, body, chain, call.timeout),
                (n, purse),
                |bytes, limit| self.protocol.decode_topic(bytes, limit),
            )
            .await,
        )
    }

    /// One exchange with the store, bounded by `timeout` as a whole; the body's bytes are counted
    /// in the search's `purse` as they come, and what the decoded hits keep stays counted there.
    async fn call(
        &self,
        (target, body, chain, timeout): (&Target, Bytes, &Chain, Duration),
        (limit, purse): (usize, &Purse<'_>),
        decode: impl Fn(&[u8], usize) -> Result<Vec<Hit>, String>,
    ) -> Result<Vec<Hit>, Failure> {
        let exchange = async {
            let response = self.send(target, &body, chain).await?;
            let status = response.status();
            if !(200..300).contains(&status) {
                return Err(Failure::Status(status));
            }
            let mut hold = purse.hold();
            let bytes = self.read_body(response, &mut hold).await?;
            // While it decodes, an answer holds its body and its hits, which are at most about
            // the body's size again: counted before, settled to what the hits keep after.
            hold.take(bytes.len()).map_err(Failure::Memory)?;
            let hits = decode(&bytes, limit).map_err(Failure::Decode)?;
            drop(bytes);
            hold.keep_hits(&hits).map_err(Failure::Memory)?;
            Ok(hits)
        };
        match tokio::time::timeout(timeout, exchange).await {
            Ok(result) => result,
            Err(_elapsed) => Err(Failure::Timeout(timeout)),
        }
    }

    /// Sends the request and waits for the answer's head. A pooled keep-alive connection that the
    /// store closed just as the request went out (its idle timeout) gives no answer and no status;
    /// a search is read-only, so it is asked once more, on a fresh connection, within the same
    /// deadline.
    async fn send(&self, target: &Target, body: &Bytes, chain: &Chain) -> Result<Answer, Failure> {
        let send = |headers| self.transport.post(target, headers, body);
        let sent = match send(self.headers(chain)?).await {
            Err(refused) if refused.closed => send(self.headers(chain)?).await,
            sent => sent,
        };
        sent.map_err(|refused| {
            if refused.connect {
                Failure::Connect(refused.why)
            } else {
                Failure::Transport(refused.why)
            }
        })
    }

    /// The headers of a call: the fixed ones ([`fixed_headers`]), the chain, and the call's span
    /// when traces are on (the store's spans are its children).
    fn headers(&self, chain: &Chain) -> Result<HeaderMap, Failure> {
        use reqwest::header::HeaderName;
        let mut headers = self.fixed.clone().ok_or_else(|| {
            Failure::Transport("the store's token is not a valid header value".into())
        })?;
        for (name, value) in chain.headers().into_iter().chain(chain.trace_headers()) {
            // The chain's values are numbers and hex ids, a span's context W3C text: all visible
            // ASCII, always valid header values.
            if let Ok(value) = HeaderValue::try_from(value) {
                headers.insert(HeaderName::from_static(name), value);
            }
        }
        Ok(headers)
    }

    /// Reads the answer's body, at most the cap, each chunk counted in `hold` before it is kept.
    async fn read_body(&self, mut response: Answer, hold: &mut Hold<'_>) -> Result<Bytes, Failure> {
        let announced = response.content_length();
        if announced.is_some_and(|len| len > self.body_cap as u64) {
            return Err(Failure::TooLarge(self.body_cap));
        }
        // Sized by what the store announces, up to 64 KiB: a store that announces 8 MiB and then
        // stalls must not cost 8 MiB per search before a byte has come.
        let first = announced
            .map_or(8 * 1024, |len| len as usize)
            .min(64 * 1024);
        hold.take(first).map_err(Failure::Memory)?;
        let mut bytes = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(Failure::Transport)? {
            // The whole answer in one chunk, as most come, and no larger than was counted: kept
            // as it came, not copied, once the body is seen to end there.
            if bytes.is_empty() && chunk.len() <= first && announced == Some(chunk.len() as u64) {
                let end = response.chunk().await.map_err(Failure::Transport)?;
                // hyper reads no byte past a Content-Length; were one there, it is no answer.
                return match end {
                    None => Ok(chunk),
                    Some(_) => Err(Failure::Transport(
                        "body longer than its Content-Length".into(),
                    )),
                };
            }
            if bytes.capacity() == 0 {
                bytes.reserve_exact(first);
            }
            let needed = bytes.len() + chunk.len();
            if needed > self.body_cap {
                return Err(Failure::TooLarge(self.body_cap));
            }
            // What the buffer will hold is counted before it grows (doubling, as a Vec does, up
            // to the cap), so the count is the memory, not just the bytes read.
            let capacity = bytes.capacity().max(first);
            if needed > capacity {
                let grown = needed.max(capacity * 2).min(self.body_cap);
                hold.take(grown - capacity).map_err(Failure::Memory)?;
                bytes.reserve_exact(grown - bytes.len());
            }
            bytes.extend_from_slice(&chunk);
        }
        Ok(Bytes::from(bytes))
    }
}

/// The headers every call to a store sends: JSON both ways, who calls, and its token, marked
/// sensitive.
/// `None` when the token cannot be a header value (a control character in it).
fn fixed_headers(token: Option<&Secret>) -> Option<HeaderMap> {
    use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, USER_AGENT};
    let json = HeaderValue::from_static("application/json");
    // Room for the chain's three and a span's two, which each call adds.
    let mut headers = HeaderMap::with_capacity(8);
    headers.insert(CONTENT_TYPE, json.clone());
    headers.insert(ACCEPT, json);
    headers.insert(
        USER_AGENT,
        HeaderValue::from_static(super::clients::USER_AGENT),
    );
    if let Some(token) = token {
        let mut value = HeaderValue::try_from(format!("Bearer {}", token.expose())).ok()?;
        value.set_sensitive(true);
        headers.insert(AUTHORIZATION, value);
    }
    Some(headers)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn remote(token: Option<&str>) -> Remote {
        let protocol = super::super::build("seren_memory", &serde_json::Map::new()).unwrap();
        Remote::new(
            Target::new(url::Url::parse("http://127.0.0.1:9/search").unwrap()),
            token.and_then(Secret::new),
            protocol,
            Transport::Proxied(reqwest::Client::new()),
        )
    }

    #[test]
    fn a_call_carries_json_the_chain_and_the_token_marked_sensitive() {
        let chain = Chain::root().child(crate::chain::Id::random(), 40);
        let headers = remote(Some("s3cret")).headers(&chain).unwrap();
        assert_eq!(headers["content-type"], "application/json");
        assert_eq!(headers["accept"], "application/json");
        for (name, value) in chain.headers() {
            assert_eq!(headers[name], value.as_str(), "{name}");
        }
        assert_eq!(headers["authorization"], "Bearer s3cret");
        assert!(headers["authorization"].is_sensitive());
        assert!(
            !remote(None)
                .headers(&chain)
                .unwrap()
                .contains_key("authorization")
        );
    }

    #[test]
    fn a_token_that_cannot_be_a_header_fails_the_call_without_showing_it() {
        let failure = remote(Some("line\nbreak-SECRET"))
            .headers(&Chain::root())
            .unwrap_err();
        let text = failure.to_string();
        assert_eq!(
            text,
            "transport: the store's token is not a valid header value"
        );
        assert!(!text.contains("SECRET"));
    }
}
