//! YCSB's number generators (`site.ycsb.generator`), with its constants and its quirks kept, so
//! a workload chooses the same keys with the same skew: FNV-1a-64 hashing, Zipfian (Gray et
//! al.), scrambled Zipfian over 10^10 items, skewed-latest, hotspot, exponential, sequential,
//! uniform, counters and the acknowledged-insert window, and the weighted operation chooser.

use std::sync::atomic::{AtomicI64, Ordering};

use parking_lot::Mutex;
use rand::Rng;

/// FNV-1a 64-bit offset basis, as YCSB's `Utils`.
pub const FNV_OFFSET_BASIS_64: i64 = 0xCBF2_9CE4_8422_2325_u64 as i64;
/// FNV 64-bit prime.
pub const FNV_PRIME_64: i64 = 1_099_511_628_211;

/// YCSB's `Utils.fnvhash64`: FNV-1a over the 8 little-endian octets of `val`, then `abs`
/// (Java's, so `i64::MIN` stays negative).
pub fn fnv_hash64(mut val: i64) -> i64 {
    let mut hash = FNV_OFFSET_BASIS_64;
    for _ in 0..8 {
        let octet = val & 0xff;
        val >>= 8;
        hash ^= octet;
        hash = hash.wrapping_mul(FNV_PRIME_64);
    }
    hash.wrapping_abs()
}

/// The Zipfian constant θ YCSB uses.
pub const ZIPFIAN_CONSTANT: f64 = 0.99;

/// ζ(n, θ) summed from `from` (exclusive count already in `sum`) up to `to`.
fn zeta(from: i64, to: i64, theta: f64, sum: f64) -> f64 {
    let mut sum = sum;
    for i in from..to {
        sum += 1.0 / ((i + 1) as f64).powf(theta);
    }
    sum
}

#[derive(Debug)]
struct ZipfState {
    count_for_zeta: i64,
    zetan: f64,
    eta: f64,
}

/// `ZipfianGenerator`: items in [min, max], item `min` the most popular.
#[derive(Debug)]
pub struct Zipfian {
    items: i64,
    base: i64,
    theta: f64,
    zeta2theta: f64,
    alpha: f64,
    state: Mutex<ZipfState>,
}

impl Zipfian {
    /// Over [min, max] with θ = 0.99, ζ computed here.
    pub fn new(min: i64, max: i64) -> Zipfian {
        let items = max - min + 1;
        Zipfian::with_zetan(
            min,
            max,
            ZIPFIAN_CONSTANT,
            zeta(0, items, ZIPFIAN_CONSTANT, 0.0),
        )
    }

    /// Over [min, max] with a precomputed ζ(n).
    pub fn with_zetan(min: i64, max: i64, theta: f64, zetan: f64) -> Zipfian {
        let items = max - min + 1;
        let zeta2theta = zeta(0, 2, theta, 0.0);
        Zipfian {
            items,
            base: min,
            theta,
            zeta2theta,
            alpha: 1.0 / (1.0 - theta),
            state: Mutex::new(ZipfState {
                count_for_zeta: items,
                zetan,
                eta: (1.0 - (2.0 / items as f64).powf(1.0 - theta)) / (1.0 - zeta2theta / zetan),
            }),
        }
    }

    /// A draw over the first `item_count` items (ζ grows incrementally when the count grows;
    /// as in YCSB, η keeps using the original item count, and a smaller count is not
    /// recomputed).
    pub fn next_long(&self, rng: &mut impl Rng, item_count: i64) -> i64 {
        let (zetan, eta) = {
            let mut s = self.state.lock();
            if item_count > s.count_for_zeta {
                s.zetan = zeta(s.count_for_zeta, item_count, self.theta, s.zetan);
                s.count_for_zeta = item_count;
                s.eta = (1.0 - (2.0 / self.items as f64).powf(1.0 - self.theta))
                    / (1.0 - self.zeta2theta / s.zetan);
            }
            (s.zetan, s.eta)
        };
        let u: f64 = rng.random();
        let uz = u * zetan;
        if uz < 1.0 {
            return self.base;
        }
        if uz < 1.0 + 0.5_f64.powf(self.theta) {
            return self.base + 1;
        }
        self.base + (item_count as f64 * (eta * u - eta + 1.0).powf(self.alpha)) as i64
    }

    /// A draw over every item.
    pub fn next(&self, rng: &mut impl Rng) -> i64 {
        self.next_long(rng, self.items)
    }
}

/// `ScrambledZipfianGenerator`'s fixed item count and its ζ for θ = 0.99.
pub const SCRAMBLED_ITEM_COUNT: i64 = 10_000_000_000;
/// See [`SCRAMBLED_ITEM_COUNT`].
pub const SCRAMBLED_ZETAN: f64 = 26.469_028_201_783_02;

/// `ScrambledZipfianGenerator`: Zipfian popularity, with the popular items spread over
/// [min, max] by hashing.
#[derive(Debug)]
pub struct ScrambledZipfian {
    min: i64,
    item_count: i64,
    zipf: Zipfian,
}

impl ScrambledZipfian {
    /// Over [min, max].
    pub fn new(min: i64, max: i64) -> ScrambledZipfian {
        ScrambledZipfian {
            min,
            item_count: max - min + 1,
            zipf: Zipfian::with_zetan(0, SCRAMBLED_ITEM_COUNT, ZIPFIAN_CONSTANT, SCRAMBLED_ZETAN),
        }
    }

    /// A draw.
    pub fn next(&self, rng: &mut impl Rng) -> i64 {
        let draw = self.zipf.next(rng);
        self.min + fnv_hash64(draw) % self.item_count
    }
}

/// `CounterGenerator`: `start`, `start + 1`, … across threads.
#[derive(Debug)]
pub struct Counter {
    next: AtomicI64,
}

impl Counter {
    /// Starting at `start`.
    pub fn new(start: i64) -> Counter {
        Counter {
            next: AtomicI64::new(start),
        }
    }

    /// The next value.
    pub fn next(&self) -> i64 {
        self.next.fetch_add(1, Ordering::Relaxed)
    }

    /// The last value handed out.
    pub fn last(&self) -> i64 {
        self.next.load(Ordering::Relaxed) - 1
    }
}

/// YCSB's window of unacknowledged inserts.
pub const ACK_WINDOW: usize = 1 << 20;

/// `AcknowledgedCounterGenerator`: hands out insert ids like a counter, but `last()` only
/// moves over a contiguous run of acknowledged ids, so readers never choose a key whose insert
/// has not finished.
pub struct AcknowledgedCounter {
    counter: Counter,
    window: Mutex<AckWindow>,
}

impl std::fmt::Debug for AcknowledgedCounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AcknowledgedCounter")
            .field("last", &self.last())
            .finish_non_exhaustive()
    }
}

struct AckWindow {
    acked: Vec<bool>,
    limit: i64,
}

/// Too many ids handed out and not acknowledged (YCSB: "Too many unacknowledged insertion
/// keys").
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("too many unacknowledged insertion keys (window {ACK_WINDOW})")]
pub struct WindowFull;

impl AcknowledgedCounter {
    /// Counting from `start`; `last()` is `start − 1` until `start` is acknowledged.
    pub fn new(start: i64) -> AcknowledgedCounter {
        AcknowledgedCounter {
            counter: Counter::new(start),
            window: Mutex::new(AckWindow {
                acked: vec![false; ACK_WINDOW],
                limit: start - 1,
            }),
        }
    }

    /// The next id to insert.
    pub fn next(&self) -> i64 {
        self.counter.next()
    }

    /// The highest id below which every id has been acknowledged.
    pub fn last(&self) -> i64 {
        self.window.lock().limit
    }

    /// Marks `value`'s insert as finished.
    pub fn acknowledge(&self, value: i64) -> Result<(), WindowFull> {
        let mask = (ACK_WINDOW - 1) as i64;
        let mut w = self.window.lock();
        let slot = (value & mask) as usize;
        if w.acked[slot] {
            return Err(WindowFull);
        }
        w.acked[slot] = true;
        let mut index = w.limit + 1;
        loop {
            let s = (index & mask) as usize;
            if !w.acked[s] {
                break;
            }
            w.acked[s] = false;
            index += 1;
        }
        w.limit = index - 1;
        Ok(())
    }
}

/// `SkewedLatestGenerator`: the newest acknowledged records are the most popular.
#[derive(Debug)]
pub struct SkewedLatest {
    zipf: Zipfian,
}

impl SkewedLatest {
    /// Over the ids `basis` has acknowledged so far.
    pub fn new(basis: &AcknowledgedCounter) -> SkewedLatest {
        SkewedLatest {
            zipf: Zipfian::new(0, basis.last().max(1) - 1),
        }
    }

    /// A draw: the last acknowledged id minus a Zipfian offset.
    pub fn next(&self, rng: &mut impl Rng, basis: &AcknowledgedCounter) -> i64 {
        let max = basis.last();
        max - self.zipf.next_long(rng, max)
    }
}

/// `HotspotIntegerGenerator`: a fraction of operations go to a fraction of the range.
#[derive(Debug)]
pub struct Hotspot {
    lower: i64,
    hot: i64,
    cold: i64,
    hot_ops: f64,
}

impl Hotspot {
    /// Over [lower, upper]: `hot_data` of it receives `hot_ops` of the draws.
    pub fn new(lower: i64, upper: i64, hot_data: f64, hot_ops: f64) -> Hotspot {
        let interval = upper - lower + 1;
        let hot = (interval as f64 * hot_data) as i64;
        Hotspot {
            lower,
            hot,
            cold: interval - hot,
            hot_ops,
        }
    }

    /// A draw.
    pub fn next(&self, rng: &mut impl Rng) -> i64 {
        let pick = |rng: &mut dyn rand::RngCore, n: i64| {
            if n <= 0 {
                0
            } else {
                (rng.next_u64() >> 1) as i64 % n
            }
        };
        if rng.random::<f64>() < self.hot_ops {
            self.lower + pick(rng, self.hot)
        } else {
            self.lower + self.hot + pick(rng, self.cold)
        }
    }
}

/// `ExponentialGenerator`: `percentile`% of draws fall below `range`.
#[derive(Debug)]
pub struct Exponential {
    gamma: f64,
}

impl Exponential {
    /// As YCSB: γ = −ln(1 − percentile/100) / range.
    pub fn new(percentile: f64, range: f64) -> Exponential {
        Exponential {
            gamma: -(1.0 - percentile / 100.0).ln() / range,
        }
    }

    /// A draw.
    pub fn next(&self, rng: &mut impl Rng) -> i64 {
        let u: f64 = rng.random();
        (-u.ln() / self.gamma) as i64
    }
}

/// `SequentialGenerator`: start, start + 1, …, end, start, … across threads.
#[derive(Debug)]
pub struct Sequential {
    start: i64,
    interval: i64,
    counter: AtomicI64,
}

impl Sequential {
    /// Over [start, end].
    pub fn new(start: i64, end: i64) -> Sequential {
        Sequential {
            start,
            interval: end - start + 1,
            counter: AtomicI64::new(0),
        }
    }

    /// The next value.
    pub fn next(&self) -> i64 {
        self.start + self.counter.fetch_add(1, Ordering::Relaxed) % self.interval
    }
}

/// `DiscreteGenerator`: one of several values by weight (weights need not sum to 1).
#[derive(Debug, Clone)]
pub struct Discrete<T: Copy> {
    values: Vec<(f64, T)>,
}

impl<T: Copy> Discrete<T> {
    /// From (weight, value) pairs; pairs with weight ≤ 0 are left out, as YCSB does.
    pub fn new(pairs: impl IntoIterator<Item = (f64, T)>) -> Discrete<T> {
        Discrete {
            values: pairs.into_iter().filter(|(w, _)| *w > 0.0).collect(),
        }
    }

    /// True if no value has a positive weight.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// A draw (`None` if empty).
    pub fn next(&self, rng: &mut impl Rng) -> Option<T> {
        let sum: f64 = self.values.iter().map(|(w, _)| w).sum();
        let mut val: f64 = rng.random();
        for (weight, value) in &self.values {
            let pw = weight / sum;
            if val < pw {
                return Some(*value);
            }
            val -= pw;
        }
        self.values.last().map(|(_, v)| *v)
    }
}

/// A uniform draw in [min, max].
pub fn uniform(rng: &mut impl Rng, min: i64, max: i64) -> i64 {
    if max <= min {
        min
    } else {
        rng.random_range(min..=max)
    }
}

/// YCSB's `HistogramGenerator` (`fieldlengthdistribution=histogram`): lengths drawn from a
/// histogram of buckets of width one, each value the bucket's upper edge times a block size, so
/// the smallest length is one block. The file: a first line `BlockSize<TAB>n`, then one
/// `bucket<TAB>count` line per bucket, buckets numbered from 0 in order.
#[derive(Debug, Clone, PartialEq)]
pub struct Histogram {
    block_size: i64,
    buckets: Vec<i64>,
    area: i64,
}

impl Histogram {
    /// Parses a histogram file's text; the error says which line is wrong and why.
    pub fn parse(text: &str) -> Result<Histogram, String> {
        let mut lines = text.lines().enumerate();
        let block_size = match lines.next().map(|(_, l)| l.split('\t').collect::<Vec<_>>()) {
            None => return Err("the file is empty".into()),
            Some(first) if first.first() == Some(&"BlockSize") && first.len() >= 2 => first[1]
                .trim()
                .parse::<i64>()
                .map_err(|e| format!("line 1: BlockSize {:?}: {e}", first[1]))?,
            Some(_) => return Err("line 1 is not BlockSize<TAB>n".into()),
        };
        let mut buckets = Vec::new();
        for (index, line) in lines {
            if line.trim().is_empty() {
                continue;
            }
            let number = index + 1;
            let field = |i: usize| {
                line.split('\t')
                    .nth(i)
                    .ok_or_else(|| format!("line {number}: expected bucket<TAB>count"))?
                    .trim()
                    .parse::<i64>()
                    .map_err(|e| format!("line {number}: {e}"))
            };
            let (bucket, count) = (field(0)?, field(1)?);
            if bucket != buckets.len() as i64 {
                return Err(format!(
                    "line {number}: bucket {bucket} where bucket {} was expected (in order from 0)",
                    buckets.len()
                ));
            }
            if count < 0 {
                return Err(format!("line {number}: a negative count {count}"));
            }
            buckets.push(count);
        }
        Histogram::new(buckets, block_size)
    }

    /// From bucket counts and a block size.
    pub fn new(buckets: Vec<i64>, block_size: i64) -> Result<Histogram, String> {
        let area: i64 = buckets.iter().sum();
        if area <= 0 {
            return Err("the histogram has no counts".into());
        }
        Ok(Histogram {
            block_size,
            buckets,
            area,
        })
    }

    /// The mean of the lengths drawn, as YCSB computes it (Σ i·count ÷ Σ count, in blocks).
    pub fn mean(&self) -> f64 {
        let weighted: i64 = self
            .buckets
            .iter()
            .enumerate()
            .map(|(i, c)| i as i64 * c)
            .sum();
        self.block_size as f64 * weighted as f64 / self.area as f64
    }

    /// A length: a uniform draw in [0, area) walked down the buckets; the bucket where it
    /// reaches zero or below gives (bucket + 1) blocks, and a draw past every bucket but the
    /// last gives the last bucket's index in blocks (YCSB's arithmetic, quirks included).
    pub fn next(&self, rng: &mut impl Rng) -> i64 {
        let mut number = rng.random_range(0..self.area);
        let last = self.buckets.len() - 1;
        for (i, count) in self.buckets[..last].iter().enumerate() {
            number -= count;
            if number <= 0 {
                return (i as i64 + 1) * self.block_size;
            }
        }
        last as i64 * self.block_size
    }
}
