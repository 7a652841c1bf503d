//! Per-store health: every call's outcome and latency, and the circuit breaker that reads them.
//!
//! Records are keyed by store name and live beside the roster, not in it, so they survive changes
//! to the roster around them; a store's own record goes when the store does (a new store under
//! that name starts afresh, breaker closed). The breaker exists so that a store
//! that hangs does not tax every search with its full timeout: after `failures` consecutive
//! failures the store is skipped at once (named in `failed` as `circuit open: <last error>`), then
//! one probe call is let through after a cool-down that doubles, up to a maximum, while the store
//! stays down; the first success closes the circuit.
//!
//! One std mutex guards the map. It is only ever held for a few field updates, never across an
//! await, so it cannot stall the runtime.

use crate::api::{BreakerState, HealthStatus, StoreHealth};
pub use crate::config::BreakerSettings;
use crate::limits::STORE_LATENCIES_KEPT as RECENT;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The breaker's state for one store.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Breaker {
    Closed,
    /// Skipping calls until `until`, then probing; `cooldown` is the wait that led here.
    Open {
        until: Instant,
        cooldown: Duration,
    },
    /// One probe is under way; other calls are skipped until it reports.
    Probing {
        cooldown: Duration,
    },
}

/// What to do with a call to a store.
#[derive(Debug, Clone, PartialEq)]
pub enum Admission {
    /// Call it.
    Call,
    /// Call it as the one probe of an open circuit.
    Probe,
    /// Do not call it: the circuit is open, after this failure.
    Skip { last_error: Option<String> },
}

/// How a call to a store ended, as its record sees it.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// The store answered.
    Answered,
    /// The store failed (down, slow, broken): this is the reason.
    Failed(String),
    /// The store refused this request for what it asked (400, 413, 414, 422): a failed call in
    /// the record, but it says nothing about whether the store is up, so the breaker ignores it.
    Refused(String),
}

#[derive(Debug, Clone)]
struct Record {
    total_calls: u64,
    successful_calls: u64,
    failed_calls: u64,
    short_circuited: u64,
    last_latency: f64,
    avg_latency: f64,
    max_latency: f64,
    recent: Recent,
    last_error: Option<String>,
    consecutive_failures: u32,
    last_call_ts: Option<f64>,
    last_success_ts: Option<f64>,
    breaker: Breaker,
}

impl Default for Record {
    fn default() -> Self {
        Self {
            total_calls: 0,
            successful_calls: 0,
            failed_calls: 0,
            short_circuited: 0,
            last_latency: 0.0,
            avg_latency: 0.0,
            max_latency: 0.0,
            recent: Recent::default(),
            last_error: None,
            consecutive_failures: 0,
            last_call_ts: None,
            last_success_ts: None,
            breaker: Breaker::Closed,
        }
    }
}

/// The latencies of a store's last [`RECENT`] calls, in seconds: a ring, the oldest overwritten.
#[derive(Debug, Clone, Default)]
struct Recent {
    latencies: Vec<f64>,
    /// Where the next latency goes once the ring is full.
    next: usize,
}

impl Recent {
    fn push(&mut self, seconds: f64) {
        if self.latencies.len() < RECENT {
            self.latencies.reserve_exact(RECENT - self.latencies.len());
            self.latencies.push(seconds);
        } else {
            self.latencies[self.next] = seconds;
            self.next = (self.next + 1) % RECENT;
        }
    }

    /// The median: a latency one of the calls took (the lower middle one of an even count);
    /// 0 before the first call.
    fn p50(&self) -> f64 {
        if self.latencies.is_empty() {
            return 0.0;
        }
        let mut sorted = self.latencies.clone();
        let middle = (sorted.len() - 1) / 2;
        *sorted.select_nth_unstable_by(middle, f64::total_cmp).1
    }
}

/// Every store's health.
#[derive(Debug, Default, Clone)]
pub struct Health {
    settings: BreakerSettings,
    records: Arc<Mutex<HashMap<String, Record>>>,
}

impl Health {
    pub fn new(settings: BreakerSettings) -> Self {
        Self {
            settings,
            records: Arc::default(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Record>> {
        // A panic while holding this lock can only have left counters half-updated; the numbers
        // are statistics, so carrying on with them is better than failing every search.
        self.records
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Decides whether to call `store` now.
    pub fn admit(&self, store: &str) -> Admission {
        self.admit_at(store, Instant::now())
    }

    fn admit_at(&self, store: &str, now: Instant) -> Admission {
        let mut records = self.lock();
        let Some(record) = records.get_mut(store) else {
            return Admission::Call;
        };
        let skip = |record: &mut Record| {
            record.short_circuited += 1;
            Admission::Skip {
                last_error: record.last_error.clone(),
            }
        };
        match record.breaker {
            Breaker::Closed => Admission::Call,
            Breaker::Open { until, cooldown } if now >= until => {
                record.breaker = Breaker::Probing { cooldown };
                Admission::Probe
            }
            Breaker::Open { .. } | Breaker::Probing { .. } => skip(record),
        }
    }

    /// Records how a call (or a probe) to `store` that took `latency` ended.
    pub fn record(&self, store: &str, latency: Duration, outcome: Outcome) {
        self.record_at(store, latency, outcome, Instant::now());
    }

    fn record_at(&self, store: &str, latency: Duration, outcome: Outcome, now: Instant) {
        let mut records = self.lock();
        let record = records.entry(store.to_owned()).or_default();
        let seconds = latency.as_secs_f64();
        record.total_calls += 1;
        record.last_latency = seconds;
        record.max_latency = record.max_latency.max(seconds);
        record.recent.push(seconds);
        record.avg_latency = if record.total_calls == 1 {
            seconds
        } else {
            0.2 * seconds + 0.8 * record.avg_latency
        };
        let wall = unix_now();
        record.last_call_ts = Some(wall);
        match &outcome {
            Outcome::Answered => {
                record.successful_calls += 1;
                if record.consecutive_failures > 0 && record.breaker == Breaker::Closed {
                    tracing::info!(store, "store answering again");
                }
                record.consecutive_failures = 0;
                record.last_success_ts = Some(wall);
            }
            Outcome::Failed(reason) => {
                record.failed_calls += 1;
                record.last_error = Some(crate::text::cut(reason, 200));
                record.consecutive_failures = record.consecutive_failures.saturating_add(1);
                if record.consecutive_failures == 1 {
                    tracing::warn!(store, %reason, "store failing; later failures in this run are logged at debug");
                }
            }
            Outcome::Refused(reason) => {
                record.failed_calls += 1;
                record.last_error = Some(crate::text::cut(reason, 200));
            }
        }
        let before = record.breaker;
        record.breaker = before.after(&outcome, record.consecutive_failures, self.settings, now);
        match record.breaker {
            Breaker::Closed if before != Breaker::Closed => {
                tracing::info!(store, "circuit closed: the store answered again");
            }
            Breaker::Open { cooldown, .. } if matches!(outcome, Outcome::Failed(_)) => {
                tracing::warn!(
                    store,
                    failures = record.consecutive_failures,
                    retry_in_s = cooldown.as_secs_f64(),
                    "circuit open: skipping the store until a probe succeeds"
                );
            }
            _ => {}
        }
    }

    /// Drops the records of stores no longer in the roster, so a removed store leaves the public
    /// health page, and a new store that takes its name starts with a closed breaker.
    pub fn retain<'a>(&self, names: impl IntoIterator<Item = &'a str>) {
        let keep: std::collections::HashSet<&str> = names.into_iter().collect();
        self.lock().retain(|name, _| keep.contains(name.as_str()));
    }

    /// Drops one store's record: the store was bound again from a changed entry (another url,
    /// another token), so what its old self did says nothing of it.
    pub fn forget(&self, store: &str) {
        self.lock().remove(store);
    }

    /// A probe that ended without an outcome (its search was dropped): let the next call probe.
    pub fn abandon_probe(&self, store: &str) {
        let mut records = self.lock();
        if let Some(record) = records.get_mut(store)
            && let Breaker::Probing { cooldown } = record.breaker
        {
            record.breaker = Breaker::Open {
                until: Instant::now(),
                cooldown,
            };
        }
    }

    /// The breaker state of `store`.
    pub fn breaker(&self, store: &str) -> BreakerState {
        self.lock()
            .get(store)
            .map_or(BreakerState::Closed, |record| record.breaker.state())
    }

    /// Every store in `names` (unknown when never called) plus every store with a record, sorted
    /// by name.
    pub fn snapshot<'a>(&self, names: impl IntoIterator<Item = &'a str>) -> Vec<StoreHealth> {
        let now = Instant::now();
        let records = self.lock();
        let mut all: Vec<String> = records.keys().cloned().collect();
        all.extend(names.into_iter().map(str::to_owned));
        all.sort_unstable();
        all.dedup();
        let empty = Record::default();
        all.into_iter()
            .map(|name| {
                let record = records.get(&name).unwrap_or(&empty);
                let rate = if record.total_calls == 0 {
                    0.0
                } else {
                    record.successful_calls as f64 / record.total_calls as f64
                };
                let status = if record.total_calls == 0 {
                    HealthStatus::Unknown
                } else if rate >= 0.9 && record.consecutive_failures == 0 {
                    HealthStatus::Healthy
                } else if rate >= 0.7 && record.consecutive_failures < 3 {
                    HealthStatus::Degraded
                } else {
                    HealthStatus::Unhealthy
                };
                StoreHealth {
                    total_calls: record.total_calls,
                    successful_calls: record.successful_calls,
                    failed_calls: record.failed_calls,
                    short_circuited: record.short_circuited,
                    success_rate: round4(rate),
                    avg_latency: round4(record.avg_latency),
                    p50_latency: round4(record.recent.p50()),
                    max_latency: round4(record.max_latency),
                    last_latency: round4(record.last_latency),
                    last_error: record.last_error.clone(),
                    consecutive_failures: record.consecutive_failures,
                    health_status: status,
                    breaker: record.breaker.state(),
                    breaker_retry_in_s: match record.breaker {
                        Breaker::Open { until, .. } => {
                            Some(round4(until.saturating_duration_since(now).as_secs_f64()))
                        }
                        _ => None,
                    },
                    last_call_ts: record.last_call_ts,
                    last_success_ts: record.last_success_ts,
                    name,
                }
            })
            .collect()
    }
}

impl Breaker {
    /// The breaker after a call ended with `outcome`, the store now `failures` failures in a
    /// row. A pure step, so each transition can be tested on a clock of its own.
    fn after(
        self,
        outcome: &Outcome,
        failures: u32,
        settings: BreakerSettings,
        now: Instant,
    ) -> Breaker {
        let open = |cooldown| Breaker::Open {
            until: now + cooldown,
            cooldown,
        };
        match (outcome, self) {
            (Outcome::Answered, _) => Breaker::Closed,
            // A refusal says nothing about the store: a probe that met one is handed on.
            (Outcome::Refused(_), Breaker::Probing { cooldown }) => Breaker::Open {
                until: now,
                cooldown,
            },
            (Outcome::Refused(_), unchanged) => unchanged,
            // A failed probe: wait twice as long before the next one.
            (
                Outcome::Failed(_),
                Breaker::Probing { cooldown } | Breaker::Open { cooldown, .. },
            ) => open((cooldown * 2).min(settings.max_cooldown)),
            (Outcome::Failed(_), Breaker::Closed)
                if settings.failures > 0 && failures >= settings.failures =>
            {
                open(settings.cooldown.min(settings.max_cooldown))
            }
            (Outcome::Failed(_), Breaker::Closed) => Breaker::Closed,
        }
    }

    fn state(self) -> BreakerState {
        match self {
            Breaker::Closed => BreakerState::Closed,
            Breaker::Open { .. } => BreakerState::Open,
            Breaker::Probing { .. } => BreakerState::Probing,
        }
    }
}

fn round4(x: f64) -> f64 {
    (x * 1e4).round() / 1e4
}

/// Now, in Unix seconds.
pub(crate) fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    fn health() -> Health {
        Health::new(BreakerSettings {
            failures: 3,
            cooldown: Duration::from_secs(5),
            max_cooldown: Duration::from_secs(12),
        })
    }

    #[test]
    fn the_breaker_opens_probes_backs_off_and_closes() {
        let h = health();
        let t0 = Instant::now();
        assert_eq!(h.admit_at("s", t0), Admission::Call, "no record yet");
        h.record_at("s", MS, Outcome::Failed("timeout after 5.00s".into()), t0);
        h.record_at("s", MS, Outcome::Failed("timeout after 5.00s".into()), t0);
        assert_eq!(
            h.admit_at("s", t0),
            Admission::Call,
            "two failures: still closed"
        );
        h.record_at("s", MS, Outcome::Failed("timeout after 5.00s".into()), t0);
        assert_eq!(
            h.admit_at("s", t0 + Duration::from_secs(1)),
            Admission::Skip {
                last_error: Some("timeout after 5.00s".into())
            }
        );
        // After the cool-down one probe goes through; others are skipped while it runs.
        let t1 = t0 + Duration::from_secs(5);
        assert_eq!(h.admit_at("s", t1), Admission::Probe);
        assert!(matches!(h.admit_at("s", t1), Admission::Skip { .. }));
        assert_eq!(h.breaker("s"), BreakerState::Probing);
        // A failed probe doubles the wait (5 s -> 10 s), capped at the maximum (12 s).
        h.record_at(
            "s",
            MS,
            Outcome::Failed("connect: connection refused".into()),
            t1,
        );
        assert_eq!(
            h.admit_at("s", t1 + Duration::from_secs(9)),
            Admission::Skip {
                last_error: Some("connect: connection refused".into())
            }
        );
        let t2 = t1 + Duration::from_secs(10);
        assert_eq!(h.admit_at("s", t2), Admission::Probe);
        h.record_at("s", MS, Outcome::Failed("status 500".into()), t2);
        assert!(matches!(
            h.admit_at("s", t2 + Duration::from_secs(11)),
            Admission::Skip { .. }
        ));
        let t3 = t2 + Duration::from_secs(12);
        assert_eq!(h.admit_at("s", t3), Admission::Probe);
        // The first success closes it.
        h.record_at("s", MS, Outcome::Answered, t3);
        assert_eq!(h.admit_at("s", t3), Admission::Call);
        assert_eq!(h.breaker("s"), BreakerState::Closed);
        let snapshot = &h.snapshot([])[0];
        assert_eq!(snapshot.consecutive_failures, 0);
        assert_eq!(snapshot.short_circuited, 4);
        assert_eq!(snapshot.total_calls, 6);
    }

    #[test]
    fn an_abandoned_probe_lets_the_next_call_probe() {
        let h = health();
        let t0 = Instant::now();
        for _ in 0..3 {
            h.record_at("s", MS, Outcome::Failed("x".into()), t0);
        }
        assert_eq!(
            h.admit_at("s", t0 + Duration::from_secs(6)),
            Admission::Probe
        );
        h.abandon_probe("s");
        assert_eq!(h.admit("s"), Admission::Probe);
    }

    #[test]
    fn zero_failures_turns_the_breaker_off() {
        let h = Health::new(BreakerSettings {
            failures: 0,
            ..BreakerSettings::default()
        });
        for _ in 0..50 {
            h.record("s", MS, Outcome::Failed("x".into()));
        }
        assert_eq!(h.admit("s"), Admission::Call);
    }

    #[test]
    fn statuses_follow_the_python_rules() {
        use HealthStatus::*;
        let h = health();
        let check = |name: &str, outcomes: &[bool], status: HealthStatus| {
            for ok in outcomes {
                h.record(
                    name,
                    MS,
                    if *ok {
                        Outcome::Answered
                    } else {
                        Outcome::Failed("e".into())
                    },
                );
            }
            let snapshot = h.snapshot([name]);
            let row = snapshot.iter().find(|r| r.name == name).unwrap();
            assert_eq!(row.health_status, status, "{name}");
        };
        check("never", &[], Unknown);
        check("fine", &[true; 10], Healthy);
        check(
            "wobbly",
            &[true, true, true, true, true, true, true, true, false],
            Degraded,
        );
        check("down", &[true, false, false, false], Unhealthy);
        let names: Vec<String> = h.snapshot(["zz"]).into_iter().map(|r| r.name).collect();
        assert_eq!(
            names,
            ["down", "fine", "wobbly", "zz"],
            "sorted by name: the stores with a record, and those asked for"
        );
    }

    #[test]
    fn a_refusal_caused_by_the_request_never_opens_the_circuit() {
        let h = health();
        let t0 = Instant::now();
        for _ in 0..10 {
            h.record("s", MS, Outcome::Refused("status 422".into()));
        }
        assert_eq!(h.admit_at("s", t0), Admission::Call);
        let row = &h.snapshot(["s"])[0];
        assert_eq!(
            (row.total_calls, row.failed_calls, row.consecutive_failures),
            (10, 10, 0)
        );
        assert_eq!(row.last_error.as_deref(), Some("status 422"));
        // Open for real, then probed: a 422 on the probe hands the probe on, it does not decide.
        for _ in 0..3 {
            h.record_at("s", MS, Outcome::Failed("timeout after 5.00s".into()), t0);
        }
        let later = t0 + Duration::from_secs(6);
        assert_eq!(h.admit_at("s", later), Admission::Probe);
        h.record("s", MS, Outcome::Refused("status 422".into()));
        assert_eq!(h.admit("s"), Admission::Probe);
    }

    #[test]
    fn records_of_stores_that_left_the_roster_are_dropped() {
        let h = health();
        h.record("gone", MS, Outcome::Failed("x".into()));
        h.record("kept", MS, Outcome::Answered);
        h.retain(["kept", "new"]);
        let names: Vec<String> = h.snapshot([]).into_iter().map(|r| r.name).collect();
        assert_eq!(names, ["kept"]);
    }

    #[test]
    fn the_breaker_steps_are_a_pure_function_of_outcome_failures_and_time() {
        let settings = BreakerSettings::default();
        let t = Instant::now();
        let failed = Outcome::Failed("x".into());
        let refused = Outcome::Refused("status 422".into());
        let open = |secs| Breaker::Open {
            until: t + Duration::from_secs(secs),
            cooldown: Duration::from_secs(secs),
        };
        let probing = |secs| Breaker::Probing {
            cooldown: Duration::from_secs(secs),
        };
        for (before, outcome, failures, after) in [
            (Breaker::Closed, &failed, 2, Breaker::Closed),
            (Breaker::Closed, &failed, 3, open(5)),
            (probing(5), &failed, 4, open(10)),
            (probing(40), &failed, 9, open(60)),
            (probing(5), &Outcome::Answered, 0, Breaker::Closed),
            (open(5), &Outcome::Answered, 0, Breaker::Closed),
            (Breaker::Closed, &refused, 7, Breaker::Closed),
            (open(5), &refused, 3, open(5)),
            (
                probing(5),
                &refused,
                3,
                Breaker::Open {
                    until: t,
                    cooldown: Duration::from_secs(5),
                },
            ),
        ] {
            assert_eq!(
                before.after(outcome, failures, settings, t),
                after,
                "{before:?} + {outcome:?} at {failures}"
            );
        }
    }

    #[test]
    fn the_p50_is_the_median_of_the_last_128_calls() {
        let check = |latencies_ms: &[u64], p50: f64| {
            let h = health();
            for ms in latencies_ms {
                h.record("s", Duration::from_millis(*ms), Outcome::Answered);
            }
            assert_eq!(h.snapshot(["s"])[0].p50_latency, p50, "{latencies_ms:?}");
        };
        check(&[], 0.0);
        check(&[7], 0.007);
        check(&[30, 10, 20], 0.02);
        check(&[40, 10, 30, 20], 0.02);
        // 200 calls: the 72 slow ones come first and fall out of the window of 128.
        let calls: Vec<u64> = [5000; 72].into_iter().chain([3; 128]).collect();
        check(&calls, 0.003);
        // Half slow, half fast within the window: the lower middle is fast.
        let calls: Vec<u64> = [900; 64].into_iter().chain([2; 64]).collect();
        check(&calls, 0.002);
    }

    #[test]
    fn latencies_are_tracked() {
        let h = health();
        h.record("s", Duration::from_millis(100), Outcome::Answered);
        h.record("s", Duration::from_millis(300), Outcome::Answered);
        let row = &h.snapshot([])[0];
        assert_eq!(row.last_latency, 0.3);
        assert_eq!(row.max_latency, 0.3);
        assert_eq!(row.avg_latency, 0.14, "EMA 0.2*0.3 + 0.8*0.1");
        assert!(row.last_success_ts.is_some());
    }
}
