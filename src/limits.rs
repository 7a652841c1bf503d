//! Every bound the service holds to, in one place: what one request, one store answer, one search
//! or one process may take. Each comes with the reason it is where it is; the modules that enforce
//! them say how.

use std::time::Duration;

/// The largest request body, REST and `/mcp` alike: a search's arguments are a few KiB at most.
pub const MAX_BODY_BYTES: usize = 64 * 1024;
/// The largest request head (request line and headers) a connection may buffer; hyper's default
/// let each connection hold about 400 KiB of unfinished headers.
pub const MAX_HEAD_BYTES: usize = 32 * 1024;
/// The longest query, in bytes.
pub const MAX_QUERY_BYTES: usize = 8 * 1024;
/// The largest `n_results` a caller may ask for.
pub const MAX_N_RESULTS: i64 = 200;
/// The most store names one search's `stores` or `exclude_stores` may list: a roster holds at most
/// [`MAX_MAX_STORES`], and a name is checked against each.
pub const MAX_FILTER_NAMES: usize = MAX_MAX_STORES;
/// The longest store `description`, in characters: one line a model reads in the `search` tool's
/// description, once per store, so a roster of many stores stays a page.
pub const MAX_DESCRIPTION_CHARS: usize = 200;
/// The most hits `explain_dropped` lists: the best the page or `n_results` left out, which is
/// what a person tuning a knob looks at; the rest of a 64-store fan's order would only be bulk.
pub const MAX_EXPLAIN_DROPPED: usize = 25;
/// The default cap on one store's response body.
pub const DEFAULT_BODY_CAP: usize = 8 * 1024 * 1024;
/// The largest `tls_ca_file` read: a CA bundle is a few KiB (the whole webpki root set is about
/// 200 KiB of PEM), and the file is read whole, at bind time, once per store.
pub const MAX_CA_FILE_BYTES: u64 = 1024 * 1024;
/// How deep a value inside a hit's metadata may nest: every answer stays readable by clients with
/// serde_json's 128-level limit.
pub const MAX_METADATA_DEPTH: usize = 64;
/// How many callosums may stand in one chain.
pub const MAX_CHAIN_DEPTH: u32 = 8;
/// The store calls one search may cause in all, when its caller set no budget.
pub const DEFAULT_CALL_BUDGET: u32 = 256;
/// How many stores the roster holds unless `federation.max_stores` says otherwise: far more than
/// any fan a model gains from, few enough that one search cannot become a flood of calls.
pub const DEFAULT_MAX_STORES: usize = 64;
/// The highest `federation.max_stores` accepted.
pub const MAX_MAX_STORES: usize = 1024;
/// Open connections one listener holds unless `server.max_connections` says otherwise.
pub const DEFAULT_MAX_CONNECTIONS: usize = 1024;
/// Requests handled at once unless `server.max_in_flight` says otherwise; more are answered 503.
pub const DEFAULT_MAX_IN_FLIGHT: usize = 256;
/// Calls one store may have under way at once unless `server.max_calls_per_store` says
/// otherwise; more wait their turn inside their own timeout. Each call in flight holds an HTTP/1.1
/// connection, about 33 KiB of client state: 64 stores x 64 searches held about 4,100 of them
/// (255-267 MiB peak) uncapped, about 1,230 (116-117 MiB) under this cap (BENCHMARKS.md, Memory).
pub const DEFAULT_MAX_CALLS_PER_STORE: usize = 16;
/// How long a request's head (and then its body) may take unless `server.header_timeout_s`
/// says otherwise.
pub const DEFAULT_HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// How long shutdown waits for open requests before it stops anyway.
pub const DRAIN: Duration = Duration::from_secs(10);
/// The highest `server.max_connections` or `max_in_flight` accepted: far
/// above what one process serves, far below what makes tokio's semaphore panic.
pub const MAX_SERVER_CAP: usize = 1_000_000;
/// The longest line read from an MCP host over stdio.
pub const MAX_STDIO_LINE: usize = 1024 * 1024;
/// How long a keychain write or delete may take before a roster change goes on without it (a
/// locked keychain may wait on a prompt nobody answers).
pub const KEYCHAIN_WAIT: Duration = Duration::from_secs(10);
/// How long an add or remove waits for another process's lock on a shared overlay: a change holds
/// it for one read and one write (milliseconds), so a wait this long means a stuck process, and
/// the caller gets a 503 to retry rather than a request that hangs.
pub const OVERLAY_LOCK_WAIT: Duration = Duration::from_secs(10);
/// How often the config file and the overlay are looked at for a change (their size, time and
/// inode; nothing is read until those move).
pub const WATCH_EVERY: Duration = Duration::from_millis(250);
/// How often a process the npm launcher started looks whether the launcher is still its parent
/// (`launcher`): one cheap system call a second, and a launcher killed outright leaves the
/// service running a second at most before it stops.
pub const LAUNCHER_LOOK_EVERY: Duration = Duration::from_secs(1);
/// How long a file written in place (same inode) must stand still before it is read: a writer
/// that pauses mid-file (a slow copy, a script writing line by line, a sync client) leaves a
/// half file that may well parse (YAML cut at a line boundary often does), and one look later
/// was not enough (a 1.2 s pause got a half roster loaded). Two seconds is past the pauses seen,
/// short enough for a hand edit. A file put in place whole (renamed over the config, a
/// Kubernetes ConfigMap's symlink swap: a new inode) is complete by construction and is read one
/// look after it stands still. No wait is proof against a writer slower still: save by rename.
pub const CONFIG_SETTLE: Duration = Duration::from_secs(2);
/// The largest config file read, at start and at reload: a file is hand-written, a few KiB; this
/// holds `MAX_MAX_STORES` entries of 1 KiB each. Past it the file is refused unread (a bounded
/// reader stops one byte past the cap), naming the cap: a 200 MB file once took 12 s to parse.
pub const MAX_CONFIG_BYTES: u64 = 1024 * 1024;
/// The largest trust list read (`config::trust`): a line of a few hundred bytes a trusted file.
pub const MAX_TRUST_LIST_BYTES: u64 = 256 * 1024;
/// The most config files the trust list names: more than anyone trusts by hand.
pub const MAX_TRUSTED: usize = 256;
/// The shortest duration any `*_s` setting takes (a store's `timeout_s`, `per_store_timeout_s`,
/// the header timeout, the breaker's cooldowns), in the file and through `POST /configure`
/// alike. No store answers within a millisecond, even on loopback, so a smaller value is a slip
/// (milliseconds written as seconds) or a value that rounds to zero (`1e-300` became a 0 s
/// timeout that failed every store call).
pub const MIN_SECONDS: f64 = 0.001;
/// The longest duration any `*_s` setting takes: an hour is past any store call or cooldown a
/// person would wait for, and far inside what a `Duration` holds.
pub const MAX_SECONDS: f64 = 3600.0;
/// The largest token page (`budget_tokens`) a search or the config may ask for: far past any
/// model's reading, small enough that the ask it sizes (one hit per 16 tokens) stays a few
/// thousand hits.
pub const MAX_BUDGET_TOKENS: usize = 100_000;
/// The most rounds a search may hop (`federation.hops`): each round is one more fan of every store.
pub const MAX_HOPS: usize = 5;
/// The largest edge, satellite and hop-term budget accepted: SerenMemory answers at most 50 per
/// call, and a packet is read by a model.
pub const MAX_EDGE_BUDGET: usize = 50;
/// How long an MCP server may take to start and answer `initialize` and `tools/list` (node and
/// small Python servers take one to five seconds; basic-memory 14 to 16 s on an idle 2-core
/// machine, and past 30 s while a dozen other servers start beside it). The start runs on its
/// own, past any one search's timeout, so a slow starter comes up for a later search instead of
/// never.
pub const MCP_START_WAIT: Duration = Duration::from_secs(90);
/// How long a stdio MCP server that keeps failing waits before its next start, at most. The
/// first restart after a server that answered is immediate; each failure after that doubles the
/// wait from half a second.
pub const MCP_MAX_BACKOFF: Duration = Duration::from_secs(30);
/// The most `tools/list` pages read from one MCP server at a start. Servers list their tools in
/// one page, or a few (the spec lets a server page, and says nothing of how far): a server that
/// always answers another `nextCursor` is cut off here, with a reason, instead of paged forever.
pub const MCP_MAX_TOOL_PAGES: usize = 32;
/// The most tools kept from one MCP server's list: the largest servers seen list about a hundred.
pub const MCP_MAX_TOOLS: usize = 2048;
/// The most bytes of tool definitions (names, descriptions, schemas, as JSON) kept from one MCP
/// server's list, over all its pages: a hundred tools with generous schemas are a few hundred KiB.
pub const MCP_MAX_TOOL_BYTES: usize = 8 * 1024 * 1024;
/// Lines of a stdio MCP server's stderr logged per ten seconds, at most (it goes to our log at
/// debug; a chatty server must not flood it).
pub const MCP_STDERR_LINES: u32 = 20;
/// How much of one hit's `metadata.topic` is read for topic tags: SerenMemory's topics are a few
/// short tags, and a store that answers megabytes of them must not cost a search more than this.
pub const MAX_TOPIC_SCAN: usize = 4 * 1024;
/// The most topic tags one hit gives the packet.
pub const MAX_TOPICS_PER_HIT: usize = 32;
/// The most topic tags a packet sends to `/by_topic`: the request stays a few KiB for every store.
pub const MAX_TOPICS: usize = 64;
/// The longest topic tag taken (bytes); a longer one is passed over, not cut, since a cut tag
/// matches nothing.
pub const MAX_TOPIC_BYTES: usize = 128;
/// The bytes of store answers one search may hold at once (bodies as they arrive, then what
/// their decoded hits keep): four stores answering at the body cap, or hundreds answering the
/// usual few KiB. An answer that would pass it is dropped and named in `failed`.
pub const MAX_SEARCH_ANSWER_BYTES: usize = 32 * 1024 * 1024;
/// The bytes of store answers every search under way may hold together, in this process: eight
/// searches at their own bound. Past it an answer is dropped the same way, so many searches at
/// once degrade instead of taking the process's memory.
pub const MAX_ANSWER_BYTES: usize = 256 * 1024 * 1024;
/// How many of a store's latest call latencies its p50 is taken over: enough that one slow call
/// does not move it, few enough to follow a store that changes within a minute of searches (and
/// 1 KiB a store).
pub const STORE_LATENCIES_KEPT: usize = 128;
/// The longest access token read (bytes); a JWT access token is a few hundred bytes to a few KiB.
pub const MAX_TOKEN_BYTES: usize = 8 * 1024;
/// The most scopes read from one token's `scope` or `scp` claim; a token grants a dozen at most,
/// and one past this is refused (not cut: the cut could fall anywhere).
pub const MAX_TOKEN_SCOPES: usize = 256;
/// The most keys kept from one JWKS; an issuer publishes a handful.
pub const MAX_KEYS: usize = 64;
/// How far a token's `exp` and `nbf` may be off, for clocks that disagree (contract §6b).
pub const TOKEN_LEEWAY_S: f64 = 60.0;
/// The least time between two fetches of the issuer's keys, so tokens with made-up key ids cannot
/// make us hammer the issuer.
pub const KEYS_REFETCH_AFTER: Duration = Duration::from_secs(30);
/// How long the issuer's keys are used before they are fetched again, so a key it withdrew stops
/// working. The fetch runs in the background: requests go on with the old keys until it succeeds.
pub const KEYS_MAX_AGE: Duration = Duration::from_secs(3600);
/// The wait before fetching the issuer's keys again after a fetch failed, doubled by each failure
/// in a row: an issuer that is down is asked twice a minute at first, and its log line as often.
pub const KEYS_RETRY_FIRST: Duration = Duration::from_secs(30);
/// The longest such wait: an issuer back up is read again within five minutes.
pub const KEYS_RETRY_MAX: Duration = Duration::from_secs(300);
/// The bound on one fetch of the issuer's discovery document or keys, connect to last byte.
pub const ISSUER_FETCH_TIMEOUT: Duration = Duration::from_secs(5);
/// The largest discovery document or JWKS read from the issuer.
pub const MAX_ISSUER_DOCUMENT_BYTES: usize = 256 * 1024;
/// The largest judgments file `eval` reads (and the largest `queries.tsv` beside TREC qrels): the
/// file is read whole and parsed once before anything is searched. TREC's big pooled qrels
/// (Robust04's 311,410 judgments) are about 7 MiB; past the cap the file is refused, unread past it.
pub const MAX_JUDGMENTS_BYTES: u64 = 16 * 1024 * 1024;
/// The most judged queries one `eval` runs: each costs one fused search and one search per store,
/// so this is hours of searching already; MS MARCO's dev "small" set (6,980 queries) fits.
pub const MAX_JUDGED_QUERIES: usize = 10_000;
/// The most judgments one query may list: TREC's pooled topics get hundreds to a couple of
/// thousand each; a query's judgments are held in memory while its searches run.
pub const MAX_JUDGMENTS_PER_QUERY: usize = 5_000;
/// The longest qid (bytes): it is written into every line of every run file `eval --runs`
/// writes, and TREC's are a few characters.
pub const MAX_QID_BYTES: usize = 128;
/// The most list entries `eval --tune` fuses while it searches settings (each setting tried costs
/// every tuned-on query's per-store rankings once): 50 million is a few seconds of one core.
/// Every combination is tried when they fit; past it, one knob at a time until it is spent.
pub const MAX_TUNE_WORK: usize = 50_000_000;
/// The highest grade a judgment may give. nDCG's gain is `2^grade - 1`: the scales in use run
/// 0..=3 (MS MARCO, TREC DL) or 0..=4, and past 10 one document's gain (1023) drowns every other.
pub const MAX_GRADE: u32 = 10;
/// The longest `telemetry.service_name` (`OTEL_SERVICE_NAME`): a name on every exported span,
/// never a sentence.
pub const MAX_SERVICE_NAME_BYTES: usize = 255;
/// The spans waiting to be exported, at most: about 1 KiB each, so about 2 MiB held while a
/// collector is slow or down; a span past it is dropped and counted
/// (`seren_callosum_trace_spans_dropped_total`), never waited for. The OpenTelemetry SDKs'
/// default batch queue (`OTEL_BSP_MAX_QUEUE_SIZE`).
pub const TRACE_QUEUE_CAP: usize = 2048;
/// The most spans one export sends: the SDKs' default batch (`OTEL_BSP_MAX_EXPORT_BATCH_SIZE`),
/// a request of a few hundred KiB.
pub const TRACE_EXPORT_BATCH: usize = 512;
/// How long one export may take, retries included (the OTLP exporter's default,
/// `OTEL_EXPORTER_OTLP_TIMEOUT`): the batch thread waits this long at most, while spans queue up.
pub const TRACE_EXPORT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a shutdown waits for the spans still queued to be sent, on top of the drain.
pub const TRACE_SHUTDOWN_WAIT: Duration = Duration::from_secs(5);
/// The longest inbound `tracestate` taken: what W3C Trace Context says a vendor must at least
/// pass on; a longer one is dropped (the `traceparent` is still honored).
pub const MAX_TRACESTATE_BYTES: usize = 512;
/// The largest answer read from the trace collector: an export's answer is a few bytes (at most
/// a partial success's message); the OTLP exporter's own clients stop at 4 MiB.
pub const MAX_COLLECTOR_ANSWER_BYTES: usize = 64 * 1024;
