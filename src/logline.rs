//! Log lines on stderr, gathered into batches while a server runs.
//!
//! A server under load logs a line per request (`server.access_log`). Written one `write(2)` each,
//! every line is a system call, and a reader on the other end of the pipe (journald, a host, a
//! terminal) is woken for each one. While a [`Batch`] is held, lines instead gather in memory for
//! up to [`GATHER`] and one thread writes them out together: a few writes a second, whatever the
//! load, and none when the server is idle.
//!
//! Nothing is lost and nothing is reordered:
//! - the lines waiting are bounded ([`MAX_PENDING`] bytes); a writer that finds them full waits for
//!   the thread to write them (the same back-pressure a full pipe gives a plain `write`), and a
//!   line is never dropped;
//! - one lock is held across taking the waiting lines and writing them, so batches leave in the
//!   order their lines came;
//! - outside a batch (start-up, one-shot commands, the last words of a failing run) every line is
//!   written at once, after any still waiting; dropping the [`Batch`] writes what waits, and so does
//!   a panic, before its message.
//!
//! A sink that fails (stderr closed) takes the lines all the same and drops them, as `eprintln!`
//! would have: a logger must never hold a search up.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::Duration;

/// How long a line may wait for others to join it.
pub const GATHER: Duration = Duration::from_millis(10);

/// The bytes of lines that may wait at once (1 MiB: some 4,000 access lines).
pub const MAX_PENDING: usize = 1 << 20;

/// Lines on their way to one sink (stderr for the process; a buffer in tests).
pub struct Lines {
    pending: Mutex<Vec<u8>>,
    /// Signalled when the first line of a batch arrives.
    arrived: Condvar,
    /// Signalled when the waiting lines were taken.
    room: Condvar,
    out: Mutex<Box<dyn Write + Send>>,
    batching: AtomicBool,
    writer_started: AtomicBool,
    cap: usize,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic elsewhere while a lock was held leaves only bytes behind: still fit to write.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Lines {
    /// Lines to `sink`, at most `cap` bytes of them waiting in a batch.
    pub fn new(sink: Box<dyn Write + Send>, cap: usize) -> Arc<Self> {
        Arc::new(Self {
            pending: Mutex::new(Vec::new()),
            arrived: Condvar::new(),
            room: Condvar::new(),
            out: Mutex::new(sink),
            batching: AtomicBool::new(false),
            writer_started: AtomicBool::new(false),
            cap,
        })
    }

    /// Writes one line (or any bytes): at once outside a batch, else with the next batch.
    pub fn write(&self, bytes: &[u8]) {
        if !self.batching.load(Ordering::Acquire) {
            let mut out = lock(&self.out);
            self.take_and_write(&mut out);
            let _ = out.write_all(bytes).and_then(|()| out.flush());
            return;
        }
        let mut pending = lock(&self.pending);
        // A line longer than the bound goes alone, once nothing else waits.
        while !pending.is_empty()
            && pending.len() + bytes.len() > self.cap
            && self.batching.load(Ordering::Acquire)
        {
            pending = self
                .room
                .wait(pending)
                .unwrap_or_else(PoisonError::into_inner);
        }
        if pending.is_empty() {
            self.arrived.notify_one();
        }
        pending.extend_from_slice(bytes);
    }

    /// Writes every waiting line now.
    pub fn flush(&self) {
        let mut out = lock(&self.out);
        self.take_and_write(&mut out);
    }

    /// Takes what waits and writes it, under `out` so that batches leave in order.
    fn take_and_write(&self, out: &mut MutexGuard<'_, Box<dyn Write + Send>>) {
        let bytes = std::mem::take(&mut *lock(&self.pending));
        self.room.notify_all();
        if !bytes.is_empty() {
            let _ = out.write_all(&bytes).and_then(|()| out.flush());
        }
    }

    /// Starts gathering lines into batches until the returned guard is dropped. Without a
    /// writer thread (it could not be started) lines keep going out one by one.
    pub fn batch(self: &Arc<Self>) -> Batch {
        if !self.writer_started.swap(true, Ordering::AcqRel) {
            let lines = self.clone();
            let started = std::thread::Builder::new()
                .name("log-writer".into())
                .spawn(move || lines.run_writer());
            if started.is_err() {
                self.writer_started.store(false, Ordering::Release);
                return Batch { lines: None };
            }
        }
        self.batching.store(true, Ordering::Release);
        Batch {
            lines: Some(self.clone()),
        }
    }

    /// The writer thread: waits for a line, lets others join it for [`GATHER`], writes them all.
    fn run_writer(&self) {
        loop {
            {
                let mut pending = lock(&self.pending);
                while pending.is_empty() {
                    pending = self
                        .arrived
                        .wait(pending)
                        .unwrap_or_else(PoisonError::into_inner);
                }
            }
            std::thread::sleep(GATHER);
            self.flush();
        }
    }
}

/// Lines gather into batches while this is held; dropping it writes what waits.
#[must_use = "lines are batched only while the guard lives"]
pub struct Batch {
    lines: Option<Arc<Lines>>,
}

impl Drop for Batch {
    fn drop(&mut self) {
        if let Some(lines) = self.lines.take() {
            lines.batching.store(false, Ordering::Release);
            lines.flush();
        }
    }
}

/// The process's stderr.
pub fn stderr() -> &'static Arc<Lines> {
    static STDERR: OnceLock<Arc<Lines>> = OnceLock::new();
    STDERR.get_or_init(|| {
        // A panic's message follows the lines logged before it.
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if let Some(lines) = STDERR.get() {
                lines.flush();
            }
            previous(info);
        }));
        Lines::new(Box::new(std::io::stderr()), MAX_PENDING)
    })
}

/// The log layer's writer: every event's line goes to [`stderr`].
pub struct Stderr;

/// One event's line, as the log layer writes it.
pub struct LineWriter(&'static Lines);

impl Write for LineWriter {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.write(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Stderr {
    type Writer = LineWriter;
    fn make_writer(&'a self) -> LineWriter {
        LineWriter(stderr())
    }
}

/// Whether a line may be written around tracing's formatter ([`Line`]): set by `init_logging`
/// when its one layer writes plain text (no ANSI, no target) to [`Stderr`].
static PLAIN: AtomicBool = AtomicBool::new(false);

/// Says that the process's log layer writes plain lines to [`Stderr`] (or no longer does).
pub fn set_plain(plain: bool) {
    PLAIN.store(plain, Ordering::Release);
}

/// An info line written byte for byte as the log layer writes an event (timestamp, level, the
/// message, then `name=value` fields, each value as its `Debug` shows it), for the line logged once
/// per request: tracing's formatter (its field visitor, its styles even when they are off) was 2%
/// of a search's CPU. `None` unless the layer writes [`PLAIN`] lines and no span is entered
/// (whose names the layer would put first); the caller checks that its event is enabled.
pub struct Line(String);

impl Line {
    pub fn info(message: &str) -> Option<Self> {
        if !PLAIN.load(Ordering::Acquire) || in_span() {
            return None;
        }
        let since = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .ok()?;
        Some(Self::at(message, since))
    }

    /// The line of an event at `since_epoch`, whatever the layer.
    fn at(message: &str, since_epoch: Duration) -> Self {
        let mut line = String::with_capacity(192);
        push_timestamp(&mut line, since_epoch);
        line.push_str("  INFO ");
        line.push_str(message);
        Self(line)
    }

    /// The line of an event now, whatever the layer (to compare with the layer's own).
    #[cfg(test)]
    pub fn now(message: &str) -> Self {
        let since = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap();
        Self::at(message, since)
    }

    /// Adds ` name=value`, the value as `Debug` shows it.
    pub fn field(mut self, name: &str, value: impl std::fmt::Debug) -> Self {
        use std::fmt::Write as _;
        // Writing to a String cannot fail.
        let _ = write!(self.0, " {name}={value:?}");
        self
    }

    /// Adds ` name=value` when there is a value, as tracing records an `Option`.
    pub fn maybe(self, name: &str, value: Option<impl std::fmt::Debug>) -> Self {
        match value {
            Some(value) => self.field(name, value),
            None => self,
        }
    }

    /// Ends the line and writes it to [`stderr`].
    pub fn write(self) {
        stderr().write(self.end().as_bytes());
    }

    /// The line, ended.
    pub fn end(mut self) -> String {
        self.0.push('\n');
        self.0
    }
}

fn in_span() -> bool {
    tracing::dispatcher::get_default(|dispatch| dispatch.current_span().id().is_some())
}

/// `2026-12-07T12:00:00.123456Z` (UTC, microseconds), as the log layer's timer writes it.
fn push_timestamp(line: &mut String, since_epoch: Duration) {
    use std::fmt::Write as _;
    let secs = since_epoch.as_secs();
    let (days, of_day) = (secs / 86_400, secs % 86_400);
    let (year, month, day) = civil_from_days(days);
    let _ = write!(
        line,
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:06}Z",
        of_day / 3600,
        of_day / 60 % 60,
        of_day % 60,
        since_epoch.subsec_micros()
    );
}

/// The proleptic Gregorian date `days` after 1970-01-01 (Howard Hinnant's `civil_from_days`).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[test]
    fn timestamps_are_utc_to_the_microsecond() {
        let at = |secs: u64, micros: u32| {
            let mut line = String::new();
            push_timestamp(
                &mut line,
                Duration::from_secs(secs) + Duration::from_micros(micros.into()),
            );
            line
        };
        assert_eq!(at(0, 0), "1970-01-01T00:00:00.000000Z");
        assert_eq!(at(951_782_400, 7), "2000-02-29T00:00:00.000007Z");
        assert_eq!(at(951_868_799, 999_999), "2000-02-29T23:59:59.999999Z");
        assert_eq!(at(1_798_761_599, 123_456), "2026-12-31T23:59:59.123456Z");
        assert_eq!(at(1_803_859_200, 0), "2027-03-01T00:00:00.000000Z");
        assert_eq!(at(4_107_542_400, 0), "2100-03-01T00:00:00.000000Z");
    }

    #[test]
    fn a_line_is_timestamp_level_message_then_fields() {
        let line = Line::at("request", Duration::from_secs(1))
            .field("n", 3)
            .maybe("none", None::<u8>)
            .maybe("q", Some("a \"b\""))
            .end();
        assert_eq!(&line[..26], "1970-01-01T00:00:01.000000");
        assert_eq!(
            &line[26..],
            "Z  INFO request n=3 q=\"a \\\"b\\\"\"\n",
            "{line}"
        );
        assert!(
            Line::info("request").is_none(),
            "not while the layer is not plain"
        );
    }

    /// A sink that keeps what it is sent, and the largest single write.
    #[derive(Clone, Default)]
    struct Sink {
        bytes: Arc<Mutex<Vec<u8>>>,
        largest: Arc<Mutex<usize>>,
        writes: Arc<Mutex<usize>>,
        /// Sleep this long in every write (a slow reader on the pipe).
        stall: Duration,
        /// Fail every write (a closed stderr).
        fail: bool,
    }

    impl Write for Sink {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            std::thread::sleep(self.stall);
            *self.writes.lock().unwrap() += 1;
            if self.fail {
                return Err(std::io::Error::other("closed"));
            }
            let mut largest = self.largest.lock().unwrap();
            *largest = (*largest).max(bytes.len());
            self.bytes.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl Sink {
        fn text(&self) -> String {
            String::from_utf8(self.bytes.lock().unwrap().clone()).unwrap()
        }
    }

    /// `threads` threads writing `each` numbered lines at once.
    fn write_from_threads(lines: &Arc<Lines>, threads: usize, each: usize) {
        std::thread::scope(|scope| {
            for t in 0..threads {
                scope.spawn(move || {
                    for n in 0..each {
                        lines.write(
                            format!("thread {t} line {n:05} {}\n", "x".repeat(40)).as_bytes(),
                        );
                    }
                });
            }
        });
    }

    /// Every thread's lines, in the order the sink got them, each line whole.
    fn lines_by_thread(text: &str, threads: usize) -> Vec<Vec<usize>> {
        let mut seen = vec![Vec::new(); threads];
        for line in text.lines() {
            let words: Vec<&str> = line.split(' ').collect();
            assert_eq!(words.len(), 5, "a line was torn: {line:?}");
            assert_eq!(words[4], "x".repeat(40), "a line was torn: {line:?}");
            seen[words[1].parse::<usize>().unwrap()].push(words[3].parse().unwrap());
        }
        seen
    }

    #[test]
    fn lines_batched_from_many_threads_all_arrive_whole_and_in_each_threads_order() {
        let sink = Sink::default();
        let lines = Lines::new(Box::new(sink.clone()), MAX_PENDING);
        let batch = lines.batch();
        write_from_threads(&lines, 4, 2_000);
        drop(batch);
        for (t, numbers) in lines_by_thread(&sink.text(), 4).iter().enumerate() {
            assert_eq!(*numbers, (0..2_000).collect::<Vec<_>>(), "thread {t}");
        }
        // Gathered: far fewer writes than lines.
        let writes = *sink.writes.lock().unwrap();
        assert!(writes < 8_000 / 4, "{writes} writes for 8,000 lines");
    }

    #[test]
    fn a_stalled_sink_holds_writers_back_to_the_bound_and_loses_no_line() {
        let sink = Sink {
            stall: Duration::from_millis(2),
            ..Sink::default()
        };
        let cap = 4 * 1024;
        let lines = Lines::new(Box::new(sink.clone()), cap);
        let batch = lines.batch();
        write_from_threads(&lines, 3, 1_000);
        drop(batch);
        let seen = lines_by_thread(&sink.text(), 3);
        for numbers in &seen {
            assert_eq!(*numbers, (0..1_000).collect::<Vec<_>>());
        }
        let largest = *sink.largest.lock().unwrap();
        assert!(
            largest <= cap,
            "a write of {largest} bytes past the {cap}-byte bound"
        );
    }

    #[test]
    fn outside_a_batch_a_line_goes_out_at_once_after_any_still_waiting() {
        let sink = Sink::default();
        let lines = Lines::new(Box::new(sink.clone()), MAX_PENDING);
        lines.write(b"before\n");
        assert_eq!(sink.text(), "before\n");
        let batch = lines.batch();
        lines.write(b"during\n");
        drop(batch);
        lines.write(b"after\n");
        assert_eq!(sink.text(), "before\nduring\nafter\n");
    }

    #[test]
    fn a_batched_line_goes_out_without_anything_else_to_push_it() {
        let sink = Sink::default();
        let lines = Lines::new(Box::new(sink.clone()), MAX_PENDING);
        let _batch = lines.batch();
        lines.write(b"listening\n");
        // The writer thread writes it by itself; bounded so that a broken writer fails here.
        let began = Instant::now();
        while sink.text().is_empty() && began.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(sink.text(), "listening\n");
    }

    #[test]
    fn a_failing_sink_never_holds_a_writer_up() {
        let sink = Sink {
            fail: true,
            ..Sink::default()
        };
        let lines = Lines::new(Box::new(sink.clone()), 1024);
        let batch = lines.batch();
        write_from_threads(&lines, 2, 2_000);
        drop(batch);
        lines.write(b"after\n");
        assert!(*sink.writes.lock().unwrap() > 0);
        assert!(sink.text().is_empty());
    }

    #[test]
    fn a_line_longer_than_the_bound_goes_out_alone_and_whole() {
        let sink = Sink::default();
        let lines = Lines::new(Box::new(sink.clone()), 64);
        let batch = lines.batch();
        lines.write(b"short\n");
        let long = format!("{}\n", "y".repeat(500));
        lines.write(long.as_bytes());
        drop(batch);
        assert_eq!(sink.text(), format!("short\n{long}"));
    }
}
