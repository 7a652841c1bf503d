//! An MCP server's stdout as the callosum reads it: every byte of a line counted against the
//! process's bound on store answers ([`Ledger`]) as it arrives, and given back at the line's end,
//! when the line (one JSON-RPC message) is whole and goes to rmcp. Past the bound the read fails:
//! rmcp closes the session, its buffer goes, and the store starts again later (the session's
//! backoff). The line itself is capped by rmcp's codec (`DEFAULT_BODY_CAP`).

use crate::ledger::{Inflow, Ledger};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, ReadBuf};

/// A reader whose bytes are counted until each line ends.
pub struct Counted<R> {
    inner: R,
    line: Inflow,
}

impl<R> Counted<R> {
    pub fn new(inner: R, answers: Arc<Ledger>) -> Self {
        Self {
            inner,
            line: Inflow::new(answers),
        }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for Counted<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let this = &mut *self;
        std::task::ready!(Pin::new(&mut this.inner).poll_read(cx, buf))?;
        let read = &buf.filled()[before..];
        // What follows the last line end is the next line's beginning, still held.
        let open = match read.iter().rposition(|&b| b == b'\n') {
            Some(end) => {
                this.line.release();
                read.len() - end - 1
            }
            None => read.len(),
        };
        match this.line.take(open) {
            Ok(()) => Poll::Ready(Ok(())),
            Err(over) => {
                // Nothing of this read reaches rmcp: the session ends on the error.
                buf.set_filled(before);
                Poll::Ready(Err(std::io::Error::other(super::http::Bound::Memory(over))))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    #[tokio::test]
    async fn a_line_is_counted_until_it_ends_and_one_past_the_bound_fails_the_read() {
        let ledger = Arc::new(Ledger::new(10));
        let (mut write, read) = tokio::io::duplex(64);
        let mut counted = Counted::new(read, ledger.clone());
        let mut buf = [0u8; 64];
        tokio::io::AsyncWriteExt::write_all(&mut write, b"abcd")
            .await
            .unwrap();
        assert_eq!(counted.read(&mut buf).await.unwrap(), 4);
        assert_eq!(ledger.held(), 4, "an open line is counted");
        tokio::io::AsyncWriteExt::write_all(&mut write, b"e\nfg")
            .await
            .unwrap();
        assert_eq!(counted.read(&mut buf).await.unwrap(), 4);
        assert_eq!(
            ledger.held(),
            2,
            "the line ended; the next one's beginning is held"
        );
        tokio::io::AsyncWriteExt::write_all(&mut write, b"hijklmnopq")
            .await
            .unwrap();
        let refused = counted.read(&mut buf).await.unwrap_err().to_string();
        assert!(refused.contains("answer dropped"), "{refused}");
        assert_eq!(ledger.held(), 2, "nothing of the refused read is counted");
        drop(counted);
        assert_eq!(ledger.held(), 0, "a reader dropped gives everything back");
    }
}
