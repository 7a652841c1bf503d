//! What went wrong with an MCP server, in the callosum's own words: an error's kind (rmcp's,
//! reqwest's, the system's), never its text, which may quote the url called or what the server
//! sent. The server's own words for a refused call are `answer`'s.

use crate::store::remote::Failure;
use rmcp::service::ServiceError;

/// What went wrong, in the callosum's own words: the kind of error rmcp, reqwest or the system
/// met, never its text. Their texts quote what they were given and got: reqwest the url it
/// called (user-info and query included), rmcp a preview of a body that is not JSON-RPC or a
/// JSON-RPC error's message, serde a value it could not read. The server may have put the query
/// in any of them, and the reason goes to the health page and the log, so nothing is copied.
pub(super) fn cause(error: &(dyn std::error::Error + 'static)) -> String {
    words(error).unwrap_or_else(|| "the transport failed".into())
}

/// The words for the first error in `error`'s chain whose type is known.
fn words(error: &(dyn std::error::Error + 'static)) -> Option<String> {
    use rmcp::transport::DynamicTransportError;
    if let Some(init) = error.downcast_ref::<rmcp::service::ClientInitializeError>() {
        return init_words(init);
    }
    if let Some(service) = error.downcast_ref::<ServiceError>() {
        return service_words(service);
    }
    if let Some(transport) = error.downcast_ref::<DynamicTransportError>() {
        return words(transport.error.as_ref());
    }
    if let Some(words) = http_words(error) {
        return Some(words);
    }
    // A failed handshake sits in the chain as an IO error of kind "invalid data": read for
    // what rustls met instead.
    if let Some(words) = crate::store::clients::rejected(error) {
        return Some(words);
    }
    if let Some(io) = error.downcast_ref::<std::io::Error>() {
        // The kind's own words ("connection refused"), never the message an error may carry.
        return Some(io.kind().to_string());
    }
    if let Some(json) = error.downcast_ref::<serde_json::Error>() {
        return Some(format!(
            "the server's answer is not JSON-RPC (line {}, column {})",
            json.line(),
            json.column()
        ));
    }
    error.source().and_then(words)
}

/// The words for a session that could not be started (rmcp's `ClientInitializeError`).
fn init_words(init: &rmcp::service::ClientInitializeError) -> Option<String> {
    use rmcp::service::ClientInitializeError as Init;
    Some(match init {
        // rmcp holds the transport's error in a field it does not name as the source.
        Init::TransportError { error, .. } => return words(error),
        Init::ConnectionClosed(_) => "the server closed the connection".into(),
        Init::JsonRpcError(error) => {
            format!("the server refused initialize (code {})", error.code.0)
        }
        Init::ExpectedInitResponse(_) | Init::ExpectedInitResult(_) => {
            "the server's answer is not an initialize result".into()
        }
        Init::ConflictInitResponseId(..) | Init::UncorrelatedErrorResponse { .. } => {
            "the server answered with another request's id".into()
        }
        Init::NoCompatibleProtocolVersion { .. } => {
            "the server speaks no protocol version the callosum does".into()
        }
        Init::Cancelled => "cancelled".into(),
        _ => "the server could not be initialized".into(),
    })
}

/// The words for a call in a started session that failed (rmcp's `ServiceError`).
fn service_words(service: &ServiceError) -> Option<String> {
    Some(match service {
        ServiceError::TransportSend(error) => return words(error),
        ServiceError::McpError(error) => {
            format!("the server answered an error (code {})", error.code.0)
        }
        ServiceError::TransportClosed => "the server closed the session".into(),
        ServiceError::UnexpectedResponse => {
            "the server answered with the wrong kind of response".into()
        }
        ServiceError::Timeout { timeout } => Failure::Timeout(*timeout).to_string(),
        ServiceError::Cancelled { .. } => "cancelled".into(),
        _ => "the call failed".into(),
    })
}

/// The words for rmcp's HTTP transport error, `StreamableHttpError<E>`, `E` the error of the
/// reqwest [`crate::store::mcp::http::Metered`] calls with.
fn http_words(error: &(dyn std::error::Error + 'static)) -> Option<String> {
    use rmcp::transport::streamable_http_client::StreamableHttpError as Http;
    let http = error.downcast_ref::<Http<reqwest::Error>>()?;
    Some(match http {
        // The client's error: its source chain ends in an IO error (refused, reset) or not.
        Http::Client(error) => {
            return words(error).or_else(|| Some("the request failed".into()));
        }
        Http::Io(error) => return words(error),
        Http::HttpStatus(status) => format!("status {}", status.status),
        // rmcp words a refused POST as `HTTP <status>: <the body>`; only the status is kept.
        Http::UnexpectedServerResponse(text) => match status_in(text) {
            Some(code) => format!("status {code}"),
            None => "the server's answer is not JSON-RPC".into(),
        },
        Http::UnexpectedContentType(_) => {
            "the server's answer is neither JSON nor an event stream".into()
        }
        Http::ResponseBodyTooLarge { max_size } => Failure::TooLarge(*max_size).to_string(),
        Http::Deserialize(_) => "the server's answer is not JSON-RPC".into(),
        Http::Sse(_) | Http::UnexpectedEndOfStream => "the server's event stream broke off".into(),
        Http::SessionExpired => "the server expired the session".into(),
        Http::AuthRequired(_) => "the server asks for authorization (status 401)".into(),
        Http::InsufficientScope(_) => "the token's scope is not enough (status 403)".into(),
        _ => "the transport failed".into(),
    })
}

/// The status of rmcp's `HTTP 404 Not Found: ...` (its words for a POST answered with an error
/// status): the three digits after `HTTP `, nothing else of the text.
fn status_in(text: &str) -> Option<u16> {
    let digits = text.strip_prefix("HTTP ")?.get(..3)?;
    digits
        .bytes()
        .all(|b| b.is_ascii_digit())
        .then(|| digits.parse().ok())
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_status_is_read_from_rmcp_words_and_nothing_else() {
        let check =
            |text: &str, expected: Option<u16>| assert_eq!(status_in(text), expected, "{text}");
        check("HTTP 404 Not Found: ", Some(404));
        check(
            "HTTP 500 Internal Server Error: no results for 'SECRET'",
            Some(500),
        );
        check("HTTP 5", None);
        check("HTTP abc: 404", None);
        check("could not parse JSON response: HTTP 404", None);
        check("", None);
    }

    /// rmcp's HTTP transport errors quoting `secret`, and their words (`E` is the error of the
    /// client the sessions run on, as in [`http_words`]).
    fn http_errors<C: rmcp::transport::streamable_http_client::StreamableHttpClient>(
        secret: &str,
    ) -> Vec<(Box<dyn std::error::Error>, &'static str)> {
        use rmcp::transport::streamable_http_client::StreamableHttpError as Http;
        let refused = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, secret.to_owned());
        let errors: Vec<(Http<C::Error>, &str)> = vec![
            (
                Http::UnexpectedServerResponse(secret.to_owned().into()),
                "the server's answer is not JSON-RPC",
            ),
            (
                Http::UnexpectedServerResponse(format!("HTTP 502 Bad Gateway: {secret}").into()),
                "status 502",
            ),
            (
                Http::UnexpectedContentType(Some(secret.to_owned())),
                "the server's answer is neither JSON nor an event stream",
            ),
            (Http::Io(refused), "connection refused"),
            (Http::SessionExpired, "the server expired the session"),
        ];
        errors
            .into_iter()
            .map(|(error, words)| (Box::new(error) as Box<dyn std::error::Error>, words))
            .collect()
    }

    #[test]
    fn an_error_is_worded_by_its_kind_never_by_its_text() {
        let check = |error: &(dyn std::error::Error + 'static), expected: &str| {
            assert_eq!(cause(error), expected);
        };
        let secret = "http://user:PASSW0RD@[::1]:9/mcp?api_key=SECRETKEY no results for 'SECRET'";
        let refused = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, secret);
        check(&refused, "connection refused");
        for (error, expected) in http_errors::<crate::store::mcp::http::Metered>(secret) {
            check(error.as_ref(), expected);
        }
        let json = serde_json::from_str::<u32>(&format!("\"{secret}\"")).unwrap_err();
        assert!(
            json.to_string().contains("SECRET"),
            "serde quotes the value: {json}"
        );
        check(
            &json,
            "the server's answer is not JSON-RPC (line 1, column 76)",
        );
        #[derive(Debug)]
        struct Unknown;
        impl std::fmt::Display for Unknown {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("no results for 'SECRET'")
            }
        }
        impl std::error::Error for Unknown {}
        check(&Unknown, "the transport failed");
    }
}
