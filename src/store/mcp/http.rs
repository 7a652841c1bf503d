//! The client side of MCP's streamable HTTP for `mcp` stores: rmcp's protocol worker over the
//! callosum's own reqwest client, every answer's bytes counted against the process's bound on
//! store answers ([`Ledger`]) as they arrive.
//!
//! rmcp's reqwest client reads each JSON body and each event of a stream whole (16 MiB by default)
//! before anything of ours sees it, so forty searches answered at once with an event just under
//! that held over half a gigabyte outside the ledger. Here a POST's JSON body is read chunk by
//! chunk within `max_json_response_size`, and an event stream's bytes go through an [`Inflow`]
//! before the SSE parser: past the process's bound, or past `max_sse_event_size` in one event, the
//! stream ends (its bytes given back) instead of growing, and the request it answered gets a
//! JSON-RPC error of ours in its place ([`dropped`]), so that one call fails with the reason and
//! the session goes on. Once a message is whole it is handed to rmcp and its bytes are given
//! back; what the search keeps of the tool result is counted in the search's purse
//! (`McpStore::search`).
//!
//! The wire is the one rmcp's own client speaks (POST with `Accept: application/json,
//! text/event-stream`, the session header, 202 for notifications, 404 for an expired session, GET
//! for the server's stream, DELETE at the end); its legacy `server/discover` fallback is not
//! needed, since the callosum starts sessions with `initialize`.

use crate::ledger::{Inflow, Ledger, Over};
use bytes::Bytes;
use futures_util::stream::{BoxStream, Stream, StreamExt};
use reqwest::StatusCode;
use reqwest::header::{
    ACCEPT, CONTENT_TYPE, HeaderName, HeaderValue, RETRY_AFTER, WWW_AUTHENTICATE,
};
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::common::http_header::{
    EVENT_STREAM_MIME_TYPE, HEADER_LAST_EVENT_ID, HEADER_SESSION_ID, JSON_MIME_TYPE,
};
use rmcp::transport::streamable_http_client::{
    AuthRequiredError, HttpStatusError, InsufficientScopeError, SseError, StreamableHttpClient,
    StreamableHttpError, StreamableHttpPostResponse, StreamableHttpResponseLimits,
};
use sse_stream::{Sse, SseStream};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

type Failed = StreamableHttpError<reqwest::Error>;

/// The HTTP client an `mcp` store's session runs on: the store's reqwest client and the process's
/// ledger its answers are counted in.
#[derive(Clone)]
pub struct Metered {
    client: reqwest::Client,
    answers: Arc<Ledger>,
}

impl Metered {
    pub fn new(client: reqwest::Client, answers: Arc<Ledger>) -> Self {
        Self { client, answers }
    }

    /// A request with the headers every MCP request carries.
    fn request(
        &self,
        builder: reqwest::RequestBuilder,
        session_id: Option<&str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> reqwest::RequestBuilder {
        let mut builder = builder.header(
            ACCEPT,
            format!("{JSON_MIME_TYPE}, {EVENT_STREAM_MIME_TYPE}"),
        );
        if let Some(token) = auth_header {
            builder = builder.bearer_auth(token);
        }
        if let Some(session) = session_id {
            builder = builder.header(HEADER_SESSION_ID, session);
        }
        // rmcp's worker puts `MCP-Protocol-Version` here once the session is initialized.
        for (name, value) in custom_headers {
            builder = builder.header(name, value);
        }
        builder
    }
}

impl StreamableHttpClient for Metered {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, Failed> {
        let limits = StreamableHttpResponseLimits::default();
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            limits,
        )
        .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, Failed> {
        let dropped = dropped_answer(&message);
        let builder = self.client.post(uri.as_ref()).json(&message);
        let request = self.request(builder, session_id.as_deref(), auth_header, custom_headers);
        let response = request.send().await.map_err(StreamableHttpError::Client)?;
        let status = response.status();
        refuse_auth(&response)?;
        if matches!(status, StatusCode::ACCEPTED | StatusCode::NO_CONTENT) {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        if status == StatusCode::NOT_FOUND && session_id.is_some() {
            return Err(StreamableHttpError::SessionExpired);
        }
        let session = response
            .headers()
            .get(HEADER_SESSION_ID)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let kind = content_kind(&response);
        if !status.is_success() {
            // A JSON-RPC error may come with an error status: read it (within the bound) so the
            // call fails with the server's refusal; any other body is left unread.
            let error = status_error(&response);
            if kind == Some(Kind::Json) && status != StatusCode::TOO_MANY_REQUESTS {
                let body =
                    match read_body(response, limits.max_json_response_size, &self.answers).await {
                        Err(Refused::Bound(bound)) => return dropped.json(bound, session),
                        read => read?,
                    };
                if let Ok(message @ ServerJsonRpcMessage::Error(_)) = serde_json::from_slice(&body)
                {
                    return Ok(StreamableHttpPostResponse::Json(message, session));
                }
            }
            return Err(error.into());
        }
        let awaits_nothing = !matches!(message, ClientJsonRpcMessage::Request(_));
        match kind {
            Some(Kind::Events) => Ok(StreamableHttpPostResponse::Sse(
                events(response, limits.max_sse_event_size, &self.answers, dropped),
                session,
            )),
            Some(Kind::Json) => {
                let body =
                    match read_body(response, limits.max_json_response_size, &self.answers).await {
                        Err(Refused::Bound(bound)) => return dropped.json(bound, session),
                        read => read?,
                    };
                if body.is_empty() && awaits_nothing {
                    return Ok(StreamableHttpPostResponse::Accepted);
                }
                let message = serde_json::from_slice(&body)?;
                Ok(StreamableHttpPostResponse::Json(message, session))
            }
            // Some servers answer a notification with an empty 200 and no content type.
            None if awaits_nothing && response.content_length() == Some(0) => {
                Ok(StreamableHttpPostResponse::Accepted)
            }
            None => Err(unexpected_type(&response)),
        }
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), Failed> {
        let builder = self.client.delete(uri.as_ref());
        let request = self.request(builder, Some(&session_id), auth_header, custom_headers);
        let response = request.send().await.map_err(StreamableHttpError::Client)?;
        // A server that keeps no sessions to delete says 405.
        if response.status() == StatusCode::METHOD_NOT_ALLOWED {
            return Ok(());
        }
        response
            .error_for_status()
            .map(drop)
            .map_err(StreamableHttpError::Client)
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, Failed> {
        let limit = StreamableHttpResponseLimits::default().max_sse_event_size;
        self.get_stream_with_max_sse_event_size(
            uri,
            session_id,
            last_event_id,
            auth_header,
            custom_headers,
            limit,
        )
        .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, Failed> {
        let mut builder = self.client.get(uri.as_ref());
        if let Some(id) = last_event_id {
            builder = builder.header(HEADER_LAST_EVENT_ID, id);
        }
        let request = self.request(builder, session_id.as_deref(), auth_header, custom_headers);
        let response = request.send().await.map_err(StreamableHttpError::Client)?;
        if response.status() == StatusCode::METHOD_NOT_ALLOWED {
            return Err(StreamableHttpError::ServerDoesNotSupportSse);
        }
        refuse_auth(&response)?;
        if !response.status().is_success() {
            return Err(status_error(&response).into());
        }
        match content_kind(&response) {
            Some(_) => Ok(events(
                response,
                max_sse_event_size,
                &self.answers,
                Dropped(None),
            )),
            None => Err(unexpected_type(&response)),
        }
    }
}

/// What an answer's content type says it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Json,
    Events,
}

/// rmcp's error for an answer that is neither JSON nor an event stream.
fn unexpected_type(response: &reqwest::Response) -> Failed {
    let content_type = response.headers().get(CONTENT_TYPE);
    StreamableHttpError::UnexpectedContentType(
        content_type.map(|ct| String::from_utf8_lossy(ct.as_bytes()).into_owned()),
    )
}

fn content_kind(response: &reqwest::Response) -> Option<Kind> {
    let value = response.headers().get(CONTENT_TYPE)?.to_str().ok()?;
    let essence = value.split(';').next()?.trim();
    if essence.eq_ignore_ascii_case(JSON_MIME_TYPE) {
        Some(Kind::Json)
    } else if essence.eq_ignore_ascii_case(EVENT_STREAM_MIME_TYPE) {
        Some(Kind::Events)
    } else {
        None
    }
}

/// A 401 or 403 with a challenge, as rmcp's errors for them (the callosum's words say the status).
fn refuse_auth(response: &reqwest::Response) -> Result<(), Failed> {
    let challenge = || {
        let header = response.headers().get(WWW_AUTHENTICATE)?;
        Some(String::from_utf8_lossy(header.as_bytes()).into_owned())
    };
    match response.status() {
        StatusCode::UNAUTHORIZED => Err(StreamableHttpError::AuthRequired(AuthRequiredError::new(
            challenge().unwrap_or_default(),
        ))),
        StatusCode::FORBIDDEN if challenge().is_some() => {
            Err(StreamableHttpError::InsufficientScope(
                InsufficientScopeError::new(challenge().unwrap_or_default(), None),
            ))
        }
        _ => Ok(()),
    }
}

fn status_error(response: &reqwest::Response) -> HttpStatusError {
    let retry_after = response
        .headers()
        .get(RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .filter(|v| v.len() <= 64)
        .map(str::to_owned);
    HttpStatusError::new(response.status().as_u16(), retry_after)
}

/// The chunks of a body as they arrive.
fn chunks(response: reqwest::Response) -> impl Stream<Item = Result<Bytes, reqwest::Error>> {
    futures_util::stream::try_unfold(response, |mut response| async move {
        Ok(response.chunk().await?.map(|chunk| (chunk, response)))
    })
}

/// Why a body was not read: the transport's error, or a bound of ours.
enum Refused {
    Failed(Failed),
    Bound(Bound),
}

impl From<Refused> for Failed {
    fn from(refused: Refused) -> Self {
        match refused {
            Refused::Failed(failed) => failed,
            Refused::Bound(bound) => StreamableHttpError::Io(std::io::Error::other(bound)),
        }
    }
}

/// A JSON body, read within `max` bytes and the process's bound; counted while it arrives (the
/// caller parses it at once).
async fn read_body(
    response: reqwest::Response,
    max: usize,
    answers: &Arc<Ledger>,
) -> Result<Vec<u8>, Refused> {
    if response.content_length().is_some_and(|n| n > max as u64) {
        return Err(Refused::Bound(Bound::Body(max)));
    }
    let inflow = Inflow::new(answers.clone());
    let mut body = Vec::new();
    let mut stream = std::pin::pin!(chunks(response));
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| Refused::Failed(StreamableHttpError::Client(e)))?;
        if chunk.len() > max - body.len() {
            return Err(Refused::Bound(Bound::Body(max)));
        }
        let counted = inflow.take(chunk.len());
        counted.map_err(|over| Refused::Bound(Bound::Memory(over)))?;
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// Each byte arriving is counted this many times: it sits in the SSE parser's buffer, then in the
/// event's text, which rmcp parses into the message (the text freed after). Two copies are
/// live at most.
const COPIES: usize = 2;

/// An event stream whose bytes are counted as they arrive ([`COPIES`] times each). A stream that
/// answers a request (`dropped` names it) holds its bytes until rmcp drops it, after the answer
/// is parsed and on its way to the call, and is bounded whole by `max_event`; the server's own
/// stream (GET) gives each event's bytes back as the event is handed on, each event within
/// `max_event`. Past a bound the stream ends: the bytes go back, and the request it answers gets
/// our error in its place ([`Dropped`]).
fn events(
    response: reqwest::Response,
    max_event: usize,
    answers: &Arc<Ledger>,
    dropped: Dropped,
) -> BoxStream<'static, Result<Sse, SseError>> {
    let inflow = Arc::new(Inflow::new(answers.clone()));
    let answers_a_call = dropped.0.is_some();
    // The bound broken, set by the byte side and read by the event side.
    let broken = Arc::new(Mutex::new(None::<Bound>));
    let counted = {
        let (inflow, broken) = (inflow.clone(), broken.clone());
        chunks(response).map(move |chunk| {
            let mut broken = broken.lock().unwrap_or_else(PoisonError::into_inner);
            if broken.is_some() {
                // The parser may read on after an error; nothing more is let in.
                return Err(std::io::Error::other("the stream ended at a bound"));
            }
            let chunk = chunk.map_err(std::io::Error::other)?;
            let checked = if inflow.held() / COPIES + chunk.len() > max_event {
                Err(Bound::Event(max_event))
            } else {
                inflow.take(chunk.len() * COPIES).map_err(Bound::Memory)
            };
            checked.map(|()| chunk).map_err(|bound| {
                let error = std::io::Error::other(bound.to_string());
                *broken = Some(bound);
                error
            })
        })
    };
    SseStream::from_bytes_stream(counted)
        .map(move |event| {
            let error = match event {
                Ok(event) => {
                    // On the server's own stream what arrived for the event goes back: it is
                    // whole and goes to rmcp (a chunk that also began the next event gives back
                    // that beginning too: at most one chunk).
                    if !answers_a_call {
                        inflow.release();
                    }
                    return (Ok(event), false);
                }
                Err(error) => error,
            };
            inflow.release();
            let bound = broken.lock().unwrap_or_else(PoisonError::into_inner).take();
            let last = match bound.and_then(|bound| dropped.text(&bound)) {
                Some(text) => Ok(Sse {
                    event: Some("message".into()),
                    data: Some(text),
                    ..Sse::default()
                }),
                None => Err(error),
            };
            (last, true)
        })
        // Nothing is read after an error, or the error of ours standing in for it.
        .scan(false, |ended, (item, last)| {
            let item = (!*ended).then_some(item);
            *ended |= last;
            std::future::ready(item)
        })
        .boxed()
}

/// Which bound an answer broke.
#[derive(Debug, thiserror::Error)]
pub enum Bound {
    #[error("the server's event stream is over {} MiB", .0 / (1024 * 1024))]
    Event(usize),
    #[error("the server's answer is over {} MiB", .0 / (1024 * 1024))]
    Body(usize),
    #[error("{0}")]
    Memory(Over),
}

impl Bound {
    fn name(&self) -> &'static str {
        match self {
            Bound::Event(_) | Bound::Body(_) => "size",
            Bound::Memory(_) => "memory",
        }
    }
}

/// The JSON-RPC error that stands in for an answer dropped at a bound, for the request whose
/// answer it was (`None`: the message awaits no answer, or the stream is the server's own).
struct Dropped(Option<serde_json::Value>);

/// The code of a dropped answer's error, and the `data` that tells it from a server's error.
const DROPPED_CODE: i32 = -32603;
const DROPPED_BY: &str = "seren-corpus-callosum";

fn dropped_answer(message: &ClientJsonRpcMessage) -> Dropped {
    match message {
        ClientJsonRpcMessage::Request(request) => Dropped(serde_json::to_value(&request.id).ok()),
        _ => Dropped(None),
    }
}

impl Dropped {
    /// The error's JSON text, when there is a request to answer.
    fn text(&self, bound: &Bound) -> Option<String> {
        let id = self.0.as_ref()?;
        let error = serde_json::json!({
            "jsonrpc": "2.0",
            "id": id,
            "error": {"code": DROPPED_CODE, "message": bound.to_string(),
                      "data": {"dropped_by": DROPPED_BY, "bound": bound.name()}},
        });
        Some(error.to_string())
    }

    /// The error as a POST's JSON answer; the bound as the POST's error when there is no request
    /// to answer.
    fn json(
        &self,
        bound: Bound,
        session: Option<String>,
    ) -> Result<StreamableHttpPostResponse, Failed> {
        match self.text(&bound).map(|text| serde_json::from_str(&text)) {
            Some(Ok(message)) => Ok(StreamableHttpPostResponse::Json(message, session)),
            _ => Err(Refused::Bound(bound).into()),
        }
    }
}

/// The bound a JSON-RPC error names when it is a dropped answer's of ours: `"memory"` (the
/// process's bound on store answers) or `"size"` (one message's cap). A server could send such an
/// error too; it then reads as ours, which says no more than that the call failed.
pub fn dropped_bound(error: &rmcp::model::ErrorData) -> Option<&str> {
    let data = error.data.as_ref()?;
    if error.code.0 != DROPPED_CODE || data.get("dropped_by")? != DROPPED_BY {
        return None;
    }
    data.get("bound")?.as_str()
}
