//! The runtime overlay in PostgreSQL (`server.overlay_url`): for replicas on several hosts, where a
//! shared file's advisory lock cannot be trusted.
//!
//! One table, `seren_corpus_callosum_stores` (`position`, `entry` as `jsonb`), created when first
//! reached. A change is one transaction: the table locked against every other replica (within
//! [`OVERLAY_LOCK_WAIT`]), read, rewritten, then `NOTIFY seren_corpus_callosum_stores` and commit,
//! so every replica listening hears of it as it commits and reads the table again. A listener that
//! loses its connection reconnects (1 s, doubling to 30 s) and reads the table again once it
//! listens, so nothing written meanwhile is missed. Connections are plain TCP (`NoTls`): reach a
//! remote server through a TLS tunnel, or on a private network.

use super::row::{Row, rows};
use crate::limits::OVERLAY_LOCK_WAIT;
use futures_util::StreamExt;
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{Notify, OwnedMutexGuard};
use tokio_postgres::{AsyncMessage, Client, NoTls};
use tokio_util::sync::{CancellationToken, DropGuard};

const TABLE: &str = "seren_corpus_callosum_stores";

/// The overlay's table, reached at one url.
pub struct Overlay {
    config: tokio_postgres::Config,
    /// The connection changes and reads go through, made on first use and again once lost.
    client: Arc<tokio::sync::Mutex<Option<Client>>>,
    /// Told when another replica committed a change (and when the listener (re)connects).
    changes: Arc<Notify>,
    listening: std::sync::Once,
    stop: CancellationToken,
    _stopped: DropGuard,
}

/// A change under way: the transaction holding the table's lock. Dropped without
/// [`Overlay::commit`], it is rolled back.
pub struct Txn {
    client: Option<OwnedMutexGuard<Option<Client>>>,
}

impl Drop for Txn {
    fn drop(&mut self) {
        if let Some(guard) = self.client.take() {
            tokio::spawn(async move {
                if let Some(client) = guard.as_ref() {
                    let _ = client.batch_execute("ROLLBACK").await;
                }
            });
        }
    }
}

impl Overlay {
    /// Reads the url (already checked by the config).
    pub fn new(url: &str) -> Result<Self, String> {
        let mut config: tokio_postgres::Config = url
            .parse()
            .map_err(|e: tokio_postgres::Error| format!("not a PostgreSQL url: {e}"))?;
        config
            .application_name("seren-corpus-callosum")
            .connect_timeout(Duration::from_secs(5));
        let stop = CancellationToken::new();
        Ok(Self {
            config,
            client: Arc::default(),
            changes: Arc::new(Notify::new()),
            listening: std::sync::Once::new(),
            _stopped: stop.clone().drop_guard(),
            stop,
        })
    }

    /// Told when the table may have changed; starts the listener on first call.
    pub fn changes(&self) -> Arc<Notify> {
        self.listening.call_once(|| {
            let (config, changes, stop) =
                (self.config.clone(), self.changes.clone(), self.stop.clone());
            tokio::spawn(async move {
                tokio::select! {
                    () = stop.cancelled() => {}
                    () = listen(config, changes) => {}
                }
            });
        });
        self.changes.clone()
    }

    /// The table's entries, in order.
    pub async fn read(&self) -> Result<Vec<Row>, String> {
        let guard = self.connected().await?;
        let client = guard.as_ref().expect("connected");
        select(client).await
    }

    /// Opens a change: the table locked, and its entries as they stand under the lock.
    pub async fn begin(&self) -> Result<(Txn, Vec<Row>), String> {
        let guard = self.connected().await?;
        let locked = {
            let client = guard.as_ref().expect("connected");
            let sql = format!(
                "BEGIN; SET LOCAL lock_timeout = '{}s'; LOCK TABLE {TABLE} IN EXCLUSIVE MODE",
                OVERLAY_LOCK_WAIT.as_secs()
            );
            client.batch_execute(&sql).await.map_err(|e| {
                if e.code() == Some(&tokio_postgres::error::SqlState::LOCK_NOT_AVAILABLE) {
                    format!(
                        "another replica has held the overlay's table locked for {} s",
                        OVERLAY_LOCK_WAIT.as_secs()
                    )
                } else {
                    words(&e)
                }
            })
        };
        // From here a failure drops the change, which rolls the transaction back.
        let txn = Txn {
            client: Some(guard),
        };
        locked?;
        let entries = select(client_of(&txn)?).await?;
        Ok((txn, entries))
    }

    /// Writes `entries` as the table's rows, tells every replica, and commits.
    pub async fn commit(&self, mut txn: Txn, entries: &[Row]) -> Result<(), String> {
        let text = serde_json::to_string(entries).map_err(|e| e.to_string())?;
        let client = client_of(&txn)?;
        let written = async {
            client.execute(&format!("DELETE FROM {TABLE}"), &[]).await?;
            client
                .execute(
                    &format!(
                        "INSERT INTO {TABLE} (position, entry) \
                         SELECT ordinality, value FROM jsonb_array_elements($1::text::jsonb) WITH ORDINALITY"
                    ),
                    &[&text],
                )
                .await?;
            client
                .batch_execute(&format!("NOTIFY {TABLE}; COMMIT"))
                .await
        }
        .await;
        match written {
            Ok(()) => {
                // Committed: nothing to roll back.
                txn.client = None;
                Ok(())
            }
            Err(e) => Err(words(&e)),
        }
    }

    /// The change connection, made (and the table created) when there is none or it was lost.
    async fn connected(&self) -> Result<OwnedMutexGuard<Option<Client>>, String> {
        let mut guard = self.client.clone().lock_owned().await;
        if guard.as_ref().is_none_or(Client::is_closed) {
            *guard = None;
            let client = connect(&self.config).await?;
            create_table(&client).await?;
            *guard = Some(client);
        }
        Ok(guard)
    }
}

fn client_of(txn: &Txn) -> Result<&Client, String> {
    txn.client
        .as_ref()
        .and_then(|guard| guard.as_ref())
        .ok_or_else(|| "the change was already finished".to_owned())
}

async fn select(client: &Client) -> Result<Vec<Row>, String> {
    let row = client
        .query_one(
            &format!(
                "SELECT coalesce(jsonb_agg(entry ORDER BY position), '[]'::jsonb)::text FROM {TABLE}"
            ),
            &[],
        )
        .await
        .map_err(|e| words(&e))?;
    let text: String = row.get(0);
    match serde_json::from_str::<Value>(&text) {
        Ok(Value::Array(entries)) => Ok(rows(entries)),
        _ => Err("the table's entries are not a JSON array".into()),
    }
}

async fn connect(config: &tokio_postgres::Config) -> Result<Client, String> {
    let (client, connection) = config.connect(NoTls).await.map_err(|e| words(&e))?;
    tokio::spawn(async move {
        if let Err(error) = connection.await {
            tracing::warn!(error = %words(&error), "PostgreSQL overlay: connection lost");
        }
    });
    Ok(client)
}

/// Creates the table when it is missing. Two replicas starting at once may race on it: the loser's
/// error is taken as "it exists now" after a second try.
async fn create_table(client: &Client) -> Result<(), String> {
    let sql = format!(
        "CREATE TABLE IF NOT EXISTS {TABLE} (position bigint PRIMARY KEY, entry jsonb NOT NULL)"
    );
    if client.batch_execute(&sql).await.is_ok() {
        return Ok(());
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    client.batch_execute(&sql).await.map_err(|e| words(&e))
}

/// Listens for changes until cancelled, reconnecting with a growing wait.
async fn listen(config: tokio_postgres::Config, changes: Arc<Notify>) {
    let mut wait = Duration::from_secs(1);
    loop {
        match listen_once(&config, &changes).await {
            Ok(()) => wait = Duration::from_secs(1),
            Err(error) => {
                tracing::warn!(%error, retry_in_s = wait.as_secs(), "PostgreSQL overlay: not listening for changes");
            }
        }
        tokio::time::sleep(wait).await;
        wait = (wait * 2).min(Duration::from_secs(30));
    }
}

/// One listening connection, to its end. Tells `changes` once it listens (what was written while
/// it did not is read then) and at every notification.
async fn listen_once(config: &tokio_postgres::Config, changes: &Notify) -> Result<(), String> {
    let (client, mut connection) = config.connect(NoTls).await.map_err(|e| words(&e))?;
    let (tx, mut heard) = tokio::sync::mpsc::unbounded_channel();
    let driver = tokio::spawn(async move {
        let mut messages = futures_util::stream::poll_fn(move |cx| connection.poll_message(cx));
        while let Some(message) = messages.next().await {
            match message {
                Ok(AsyncMessage::Notification(_)) => {
                    let _ = tx.send(());
                }
                Ok(_) => {}
                Err(error) => return Err(words(&error)),
            }
        }
        Ok(())
    });
    create_table(&client).await?;
    client
        .batch_execute(&format!("LISTEN {TABLE}"))
        .await
        .map_err(|e| words(&e))?;
    tracing::info!("PostgreSQL overlay: listening for changes");
    changes.notify_one();
    while heard.recv().await.is_some() {
        changes.notify_one();
    }
    drop(client);
    let ended = driver.await.unwrap_or_else(|join| Err(join.to_string()));
    ended.and(Err("the connection ended".into()))
}

/// A client error in words: the server's message when it sent one, else the error's own text
/// (which never holds the password).
fn words(error: &tokio_postgres::Error) -> String {
    match error.as_db_error() {
        Some(db) => format!("{}: {}", db.severity(), db.message()),
        None => {
            let mut text = error.to_string();
            let mut source = std::error::Error::source(error);
            while let Some(cause) = source {
                text = format!("{text}: {cause}");
                source = cause.source();
            }
            text
        }
    }
}
