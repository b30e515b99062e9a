//! One seed per test run: printed, and replayable from `KEEL_SEED`.

use std::time::{SystemTime, UNIX_EPOCH};

use rand::SeedableRng;
use rand::rngs::StdRng;

/// The environment variable that fixes the seed (decimal, or hexadecimal with `0x`).
pub const SEED_ENV: &str = "KEEL_SEED";

/// The seed for this test: `KEEL_SEED` if set, otherwise a fresh one. Either way it is printed
/// to stderr (shown by the test harness when the test fails) with the line that replays it.
///
/// # Panics
/// If `KEEL_SEED` is set but is not a number: a typo must not silently run another seed.
pub fn seed() -> u64 {
    let seed = match std::env::var(SEED_ENV) {
        Ok(text) => parse_seed(&text)
            .unwrap_or_else(|| panic!("{SEED_ENV}={text:?} is not a decimal or 0x-hex u64")),
        Err(_) => fresh_seed(),
    };
    #[expect(
        clippy::print_stderr,
        reason = "the seed must reach the test log to be replayable"
    )]
    {
        eprintln!("keel-testkit: seed {seed} (replay with {SEED_ENV}={seed})");
    }
    seed
}

/// A deterministic RNG seeded by [`seed`].
pub fn rng() -> StdRng {
    StdRng::seed_from_u64(seed())
}

fn parse_seed(text: &str) -> Option<u64> {
    let text = text.trim();
    match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => text.parse().ok(),
    }
}

/// Time and process id mixed by splitmix64: distinct across runs and across parallel tests,
/// without asking the OS for entropy.
fn fresh_seed() -> u64 {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let counter = {
        use std::sync::atomic::{AtomicU64, Ordering};
        static CALLS: AtomicU64 = AtomicU64::new(0);
        CALLS.fetch_add(1, Ordering::Relaxed)
    };
    let mut z = nanos ^ (u64::from(std::process::id()) << 32) ^ counter.wrapping_mul(0x9E37);
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use rand::Rng;

    use super::*;

    #[test]
    fn parses_decimal_and_hex() {
        assert_eq!(parse_seed("42"), Some(42));
        assert_eq!(parse_seed(" 0x2a "), Some(42));
        assert_eq!(parse_seed("0XFF"), Some(255));
        assert_eq!(parse_seed("forty-two"), None);
        assert_eq!(parse_seed("0xZZ"), None);
    }

    #[test]
    fn same_seed_same_sequence() {
        let a: Vec<u64> = (0..4)
            .map({
                let mut r = StdRng::seed_from_u64(7);
                move |_| r.random()
            })
            .collect();
        let b: Vec<u64> = (0..4)
            .map({
                let mut r = StdRng::seed_from_u64(7);
                move |_| r.random()
            })
            .collect();
        assert_eq!(a, b);
    }

    #[test]
    fn fresh_seeds_differ() {
        assert_ne!(fresh_seed(), fresh_seed());
    }
}
