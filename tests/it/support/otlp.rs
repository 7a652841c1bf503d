//! A trace collector for tests: an OTLP/HTTP receiver on a loopback port (axum, `POST
//! /v1/traces`) that decodes each export's protobuf (`ExportTraceServiceRequest`, with the
//! `opentelemetry-proto` crate's own types) into flat [`Received`] spans, and keeps every body as
//! it came, so a test can look for a string in all that was exported, whatever field holds it.

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::post;
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use prost::Message;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;

/// One span as the collector got it: ids in lower-case hex (`parent_id` empty for a root).
#[derive(Clone, Debug)]
pub struct Received {
    pub service: String,
    pub name: String,
    /// OTLP's `SpanKind`: 1 internal, 2 server, 3 client.
    pub kind: i32,
    pub trace_id: String,
    pub span_id: String,
    pub parent_id: String,
    pub attributes: BTreeMap<String, String>,
    /// OTLP's status code: 0 unset, 1 ok, 2 error.
    pub status: i32,
}

pub const INTERNAL: i32 = 1;
pub const SERVER: i32 = 2;
pub const CLIENT: i32 = 3;

impl Received {
    pub fn attr(&self, key: &str) -> &str {
        self.attributes
            .get(key)
            .unwrap_or_else(|| panic!("{} has no {key}: {self:?}", self.name))
    }
}

#[derive(Clone, Default)]
struct Kept {
    spans: Arc<Mutex<Vec<Received>>>,
    bodies: Arc<Mutex<Vec<Vec<u8>>>>,
}

/// The receiver; stopped when dropped.
pub struct Receiver {
    /// The base url (`http://127.0.0.1:PORT`): a callosum's `telemetry.otlp_endpoint`.
    pub url: String,
    kept: Kept,
    _stop: tokio_util::sync::DropGuard,
}

impl Receiver {
    pub async fn start() -> Self {
        let kept = Kept::default();
        let router = Router::new()
            .route("/v1/traces", post(export))
            .with_state(kept.clone());
        let stop = CancellationToken::new();
        let url = super::serve_loopback(router, stop.clone()).await;
        Self {
            url,
            kept,
            _stop: stop.drop_guard(),
        }
    }

    /// Every span received so far.
    pub fn spans(&self) -> Vec<Received> {
        self.kept.spans.lock().unwrap().clone()
    }

    /// Whether any export's bytes hold `needle`.
    pub fn bodies_contain(&self, needle: &str) -> bool {
        let needle = needle.as_bytes();
        (self.kept.bodies.lock().unwrap().iter())
            .any(|body| body.windows(needle.len()).any(|w| w == needle))
    }
}

async fn export(State(kept): State<Kept>, body: Bytes) -> (StatusCode, Vec<u8>) {
    let Ok(request) = ExportTraceServiceRequest::decode(body.clone()) else {
        return (StatusCode::BAD_REQUEST, Vec::new());
    };
    kept.bodies.lock().unwrap().push(body.to_vec());
    let mut spans = kept.spans.lock().unwrap();
    for resource_spans in request.resource_spans {
        let resource = resource_spans.resource.unwrap_or_default().attributes;
        let service = attributes(&resource)
            .remove("service.name")
            .unwrap_or_default();
        for scope in resource_spans.scope_spans {
            for span in scope.spans {
                spans.push(Received {
                    service: service.clone(),
                    name: span.name,
                    kind: span.kind,
                    trace_id: hex(&span.trace_id),
                    span_id: hex(&span.span_id),
                    parent_id: hex(&span.parent_span_id),
                    attributes: attributes(&span.attributes),
                    status: span.status.map_or(0, |s| s.code),
                });
            }
        }
    }
    (
        StatusCode::OK,
        ExportTraceServiceResponse::default().encode_to_vec(),
    )
}

fn attributes(pairs: &[KeyValue]) -> BTreeMap<String, String> {
    (pairs.iter())
        .map(|kv| (kv.key.clone(), text(kv.value.as_ref())))
        .collect()
}

fn text(value: Option<&AnyValue>) -> String {
    match value.and_then(|v| v.value.as_ref()) {
        Some(any_value::Value::StringValue(s)) => s.clone(),
        Some(any_value::Value::IntValue(i)) => i.to_string(),
        Some(any_value::Value::BoolValue(b)) => b.to_string(),
        Some(any_value::Value::DoubleValue(d)) => d.to_string(),
        other => format!("{other:?}"),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
