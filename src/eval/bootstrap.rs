//! How sure a mean over the judged queries is: a 95% percentile bootstrap interval. The queries
//! are drawn with replacement [`RESAMPLES`] times, each draw's mean is taken, and the interval
//! runs from the 2.5th to the 97.5th percentile of those means (with 1,000 draws, sorted: the
//! 26th and the 975th).
//!
//! The draws come from SplitMix64 (Steele, Lea and Flood, "Fast splittable pseudorandom number
//! generators", OOPSLA 2014; the generator `java.util.SplittableRandom` uses) seeded with
//! [`SEED`], so one set of judgments gives the same interval on every run and machine, and every
//! run of one evaluation (the fusion, each store) is drawn on the same resampled query sets: their
//! intervals are paired. A draw's index is `floor(x * n / 2^64)` for the generator's next `x`
//! (Lemire's multiply-shift, whose bias for any n we meet is below 2^-40). Pure.

/// How many resamples an interval is taken over.
pub const RESAMPLES: usize = 1000;
/// The generator's seed, fixed.
pub const SEED: u64 = 0x5EED_CA11_05A1;
/// The interval's coverage.
pub const LEVEL: f64 = 0.95;

/// SplitMix64: a 64-bit state stepped by the golden ratio's odd constant, each output mixed by
/// two multiply-xorshift rounds. Small, fast, and good enough for resampling (it passes BigCrush).
#[derive(Debug, Clone)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    pub fn new(seed: u64) -> Self {
        Self { state: seed }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A draw from `0..n` (`n` at least 1).
    pub fn below(&mut self, n: usize) -> usize {
        ((u128::from(self.next_u64()) * n as u128) >> 64) as usize
    }
}

/// The mean of `values`; 0 for none.
pub fn mean(values: &[f64]) -> f64 {
    if values.is_empty() {
        0.0
    } else {
        values.iter().sum::<f64>() / values.len() as f64
    }
}

/// A mean with its interval.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Estimate {
    pub mean: f64,
    /// The interval's lower end.
    pub low: f64,
    /// The interval's upper end.
    pub high: f64,
}

/// The mean of `values` (one a query) and its 95% interval, from [`RESAMPLES`] resamples drawn
/// from [`SEED`]. No values: all three 0.
pub fn estimate(values: &[f64]) -> Estimate {
    estimate_with(values, RESAMPLES, SEED)
}

/// [`estimate`] with another number of resamples (at least 1) and seed.
pub fn estimate_with(values: &[f64], resamples: usize, seed: u64) -> Estimate {
    let n = values.len();
    let mean = mean(values);
    if n == 0 {
        return Estimate {
            mean,
            low: 0.0,
            high: 0.0,
        };
    }
    let resamples = resamples.max(1);
    let mut random = SplitMix64::new(seed);
    let mut means: Vec<f64> = (0..resamples)
        .map(|_| (0..n).map(|_| values[random.below(n)]).sum::<f64>() / n as f64)
        .collect();
    means.sort_unstable_by(f64::total_cmp);
    let tail = (1.0 - LEVEL) / 2.0;
    // floor(0.025 * B) and ceil(0.975 * B) - 1: with 1,000 draws the 26th and the 975th.
    let low = ((tail * resamples as f64).floor() as usize).min(resamples - 1);
    let high = (((1.0 - tail) * resamples as f64).ceil() as usize)
        .saturating_sub(1)
        .min(resamples - 1);
    Estimate {
        mean,
        low: means[low],
        high: means[high],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitmix64_gives_the_reference_sequence() {
        // The first outputs for seed 1234567, as the reference C code (Vigna's splitmix64.c)
        // gives them.
        let mut random = SplitMix64::new(1_234_567);
        let first: Vec<u64> = (0..3).map(|_| random.next_u64()).collect();
        assert_eq!(
            first,
            [
                6_457_827_717_110_365_317,
                3_203_168_211_198_807_973,
                9_817_491_932_198_370_423
            ]
        );
    }

    #[test]
    fn draws_stay_in_range_and_cover_it() {
        let mut random = SplitMix64::new(SEED);
        let mut seen = [0usize; 7];
        for _ in 0..7000 {
            seen[random.below(7)] += 1;
        }
        assert!(
            seen.iter().all(|&count| (800..1200).contains(&count)),
            "{seen:?}"
        );
        assert_eq!(SplitMix64::new(1).below(1), 0);
    }

    #[test]
    fn the_same_values_give_the_same_interval() {
        let values: Vec<f64> = (0..37).map(|i| f64::from(i % 5) / 4.0).collect();
        let first = estimate(&values);
        assert_eq!(first, estimate(&values));
        assert!(
            first.low <= first.mean && first.mean <= first.high,
            "{first:?}"
        );
        assert!(first.low < first.high, "{first:?}");
        // Another seed draws other resamples.
        assert_ne!(estimate_with(&values, RESAMPLES, SEED + 1), first);
    }

    #[test]
    fn the_interval_is_the_percentiles_of_the_resampled_means() {
        // Recomputed here the long way: 1,000 means from the same draws, sorted, the 26th and the
        // 975th.
        let values = [0.0, 1.0, 0.5, 0.25, 1.0, 0.0, 0.75];
        let mut random = SplitMix64::new(SEED);
        let mut means = Vec::new();
        for _ in 0..1000 {
            let mut sum = 0.0;
            for _ in 0..values.len() {
                sum += values[random.below(values.len())];
            }
            means.push(sum / values.len() as f64);
        }
        means.sort_by(|a, b| a.partial_cmp(b).unwrap());
        let got = estimate(&values);
        assert_eq!((got.low, got.high), (means[25], means[974]));
        assert_eq!(got.mean, 3.5 / 7.0);
    }

    #[test]
    fn one_query_or_none() {
        let one = estimate(&[0.4]);
        assert_eq!((one.mean, one.low, one.high), (0.4, 0.4, 0.4));
        let none = estimate(&[]);
        assert_eq!((none.mean, none.low, none.high), (0.0, 0.0, 0.0));
    }
}
