//! A scriptable misbehaving store on raw TCP: it can hang, trickle, never end its body, lie about
//! its length, reset mid-body, close a kept-alive connection, or answer any bytes at all. Its behaviour can be switched while it
//! runs, so a test can take a store down and bring it back.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

/// How the store treats each request.
#[derive(Clone, Debug)]
pub enum Fault {
    /// Answer 200 with these bytes as the body.
    Body(Vec<u8>),
    /// Read the request, then never answer (a black hole).
    Hang,
    /// Wait this long before the status line.
    SlowHeaders(Duration),
    /// Send the headers, then one body byte every 50 ms, for as long as the client listens.
    Trickle,
    /// Send a chunked body that never ends (bounded at 64 MiB so the test cannot run away).
    Endless,
    /// Announce a 9 MiB body.
    Oversize,
    /// Announce 1000 bytes, send 10, then reset the connection.
    ResetMidBody,
    /// Answer the first request on a connection with these bytes and keep the connection open,
    /// then read the next request on it and close without answering: a keep-alive timeout that
    /// fires just as a pooled connection is reused.
    ClosesKeptConnection(Vec<u8>),
    /// Read the request, then close the connection without answering.
    CloseUnanswered,
}

pub struct FaultStore {
    pub url: String,
    fault: Arc<Mutex<Fault>>,
    connections: Arc<AtomicUsize>,
    /// Told of every accepted connection, so a test can wait for one without polling.
    accepted: Arc<tokio::sync::Notify>,
    stop: CancellationToken,
}

impl Drop for FaultStore {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

impl FaultStore {
    pub async fn start(fault: Fault) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let fault = Arc::new(Mutex::new(fault));
        let stop = CancellationToken::new();
        let connections = Arc::new(AtomicUsize::new(0));
        let accepted = Arc::new(tokio::sync::Notify::new());
        let (shared, token, count) = (fault.clone(), stop.clone(), connections.clone());
        let told = accepted.clone();
        tokio::spawn(async move {
            loop {
                let accepted = tokio::select! {
                    accepted = listener.accept() => accepted,
                    () = token.cancelled() => return,
                };
                let Ok((stream, _)) = accepted else { return };
                count.fetch_add(1, Ordering::SeqCst);
                told.notify_waiters();
                let fault = shared.lock().unwrap().clone();
                let token = token.clone();
                tokio::spawn(async move {
                    tokio::select! {
                        () = serve(stream, fault) => {}
                        () = token.cancelled() => {}
                    }
                });
            }
        });
        Self {
            url,
            fault,
            connections,
            accepted,
            stop,
        }
    }

    /// How many connections the store has accepted.
    pub fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }

    /// Waits (at most `limit`) until the store has accepted `n` connections; false if it has not.
    pub async fn wait_for_connections(&self, n: usize, limit: std::time::Duration) -> bool {
        tokio::time::timeout(limit, async {
            loop {
                // Registered before the count is read, so an accept in between is not missed.
                let accepted = self.accepted.notified();
                tokio::pin!(accepted);
                accepted.as_mut().enable();
                if self.connections() >= n {
                    return;
                }
                accepted.await;
            }
        })
        .await
        .is_ok()
    }

    /// A store answering `body` (a JSON text) with 200.
    pub async fn json(body: impl Into<String>) -> Self {
        Self::start(Fault::Body(body.into().into_bytes())).await
    }

    /// Switches the behaviour for the requests that come next.
    pub fn set(&self, fault: Fault) {
        *self.fault.lock().unwrap() = fault;
    }
}

async fn read_request(stream: &mut TcpStream) -> Option<()> {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..n]);
        if let Some(at) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
    };
    let head = String::from_utf8_lossy(&buffer[..head_end]).to_ascii_lowercase();
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    let mut have = buffer.len() - head_end;
    while have < length {
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        have += n;
    }
    Some(())
}

const CHUNKED: &[u8] = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n";

/// Writes a 200 with this JSON body and any extra header lines.
async fn answer(stream: &mut TcpStream, body: &[u8], extra: &str) {
    let head = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n{extra}\r\n",
        body.len()
    );
    let _ = stream.write_all(head.as_bytes()).await;
    let _ = stream.write_all(body).await;
}

async fn serve(mut stream: TcpStream, fault: Fault) {
    if read_request(&mut stream).await.is_none() {
        return;
    }
    match fault {
        Fault::Body(body) => {
            answer(&mut stream, &body, "connection: close\r\n").await;
            let _ = stream.shutdown().await;
        }
        Fault::ClosesKeptConnection(body) => {
            answer(&mut stream, &body, "").await;
            if read_request(&mut stream).await.is_some() {
                let _ = stream.shutdown().await;
            }
        }
        Fault::CloseUnanswered => {
            let _ = stream.shutdown().await;
        }
        Fault::Hang => std::future::pending::<()>().await,
        Fault::SlowHeaders(wait) => {
            tokio::time::sleep(wait).await;
            let _ = stream
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 11\r\n\r\n{\"hits\":[]}")
                .await;
        }
        Fault::Trickle => {
            if stream.write_all(CHUNKED).await.is_err() {
                return;
            }
            for _ in 0..2400 {
                if stream.write_all(b"1\r\n \r\n").await.is_err() {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
        Fault::Endless => {
            if stream.write_all(CHUNKED).await.is_err() {
                return;
            }
            let chunk = format!("10000\r\n{}\r\n", " ".repeat(0x10000));
            for _ in 0..1024 {
                if stream.write_all(chunk.as_bytes()).await.is_err() {
                    return;
                }
            }
        }
        Fault::Oversize => {
            let _ = stream
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 9437184\r\n\r\n{\"hits\":[")
                .await;
            std::future::pending::<()>().await;
        }
        Fault::ResetMidBody => {
            let _ = stream
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n{\"hits\":[")
                .await;
            let _ = stream.flush().await;
            // Linger 0 turns the close into a reset (RST) instead of an orderly FIN. The deprecation
            // warns that a lingering close blocks the thread; with a zero linger it does not.
            #[allow(deprecated)]
            let _ = stream.set_linger(Some(Duration::ZERO));
            drop(stream);
        }
    }
}
