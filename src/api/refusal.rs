//! [`Refusal`]: a request the core will not carry out, its kind (which REST maps to a status
//! code; the status itself is `http.rs`'s) and the message both edges show.

/// What kind of refusal, which REST maps to a status code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefusalKind {
    /// 400: the request is well-formed but asks for something invalid.
    BadRequest,
    /// 403: the caller's view may not do this (contract §6c).
    Forbidden,
    /// 404: no such store.
    NotFound,
    /// 409: it clashes with what exists (a duplicate name, an unreadable overlay).
    Conflict,
    /// 503: too much is under way; retry shortly.
    Busy,
    /// 508: the search came back to a callosum it already passed through.
    Loop,
    /// 413: too large.
    TooLarge,
    /// 422: a field is missing or of the wrong type or range.
    Unprocessable,
    /// 500: the service failed (the overlay could not be written).
    Internal,
}

/// A request the core will not carry out. `detail` is safe to show: it never holds a secret.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{detail}")]
pub struct Refusal {
    pub kind: RefusalKind,
    pub detail: String,
}

impl Refusal {
    pub fn new(kind: RefusalKind, detail: impl Into<String>) -> Self {
        Self {
            kind,
            detail: detail.into(),
        }
    }

    pub fn bad_request(detail: impl Into<String>) -> Self {
        Self::new(RefusalKind::BadRequest, detail)
    }

    pub fn forbidden(detail: impl Into<String>) -> Self {
        Self::new(RefusalKind::Forbidden, detail)
    }

    pub fn unprocessable(detail: impl Into<String>) -> Self {
        Self::new(RefusalKind::Unprocessable, detail)
    }
}
