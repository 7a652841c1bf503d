//! The circuit breaker's settings, as the `federation:` block gives them, and how the file's are
//! read and checked. The config owns them, so the type lives here; `health` runs the breaker they
//! set.

use super::range::seconds;
use std::time::Duration;

/// The breaker's settings (from the `federation:` block).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BreakerSettings {
    /// Consecutive failures that open the circuit; 0 turns the breaker off.
    pub failures: u32,
    /// The first cool-down before a probe.
    pub cooldown: Duration,
    /// The longest cool-down, however long the store stays down.
    pub max_cooldown: Duration,
}

impl Default for BreakerSettings {
    fn default() -> Self {
        Self {
            failures: 3,
            cooldown: Duration::from_secs(5),
            max_cooldown: Duration::from_secs(60),
        }
    }
}

/// The settings the file gives (`breaker_failures`, `breaker_cooldown_s`,
/// `breaker_max_cooldown_s`), checked: each duration by the one rule, and the longest cool-down
/// never below the first. Every problem is noted; the defaults stand in for them.
pub(super) fn read(
    failures: Option<u32>,
    (cooldown_s, max_cooldown_s): (Option<f64>, Option<f64>),
    problems: &mut Vec<String>,
) -> BreakerSettings {
    let defaults = BreakerSettings::default();
    let cooldown = seconds(
        "federation.breaker_cooldown_s",
        cooldown_s,
        defaults.cooldown,
        problems,
    );
    let max_cooldown = seconds(
        "federation.breaker_max_cooldown_s",
        max_cooldown_s,
        defaults.max_cooldown.max(cooldown),
        problems,
    );
    if max_cooldown < cooldown {
        problems.push(format!(
            "federation.breaker_max_cooldown_s ({}) must not be below breaker_cooldown_s ({})",
            max_cooldown.as_secs_f64(),
            cooldown.as_secs_f64()
        ));
    }
    BreakerSettings {
        failures: failures.unwrap_or(defaults.failures),
        cooldown,
        max_cooldown,
    }
}
