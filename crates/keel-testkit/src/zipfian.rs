//! YCSB's zipfian generator, for benchmarks and workloads.

use rand::Rng;

/// YCSB's `ZipfianGenerator(min, max)` with θ = 0.99 (Gray et al., as YCSB's CoreWorkload uses
/// it for `requestdistribution` and `fieldlengthdistribution=zipfian`): `min` is the most popular.
#[derive(Clone, Debug)]
pub struct Zipfian {
    base: u64,
    items: f64,
    theta: f64,
    zeta_n: f64,
    alpha: f64,
    eta: f64,
}

impl Zipfian {
    /// Items `min..=max`, most popular first (`min`).
    pub fn new(min: u64, max: u64) -> Zipfian {
        let theta = 0.99;
        let items = (max - min + 1) as f64;
        let zeta = |n: u64| (1..=n).map(|i| 1.0 / (i as f64).powf(theta)).sum::<f64>();
        let (zeta_2, zeta_n) = (zeta(2), zeta(max - min + 1));
        let eta = (1.0 - (2.0 / items).powf(1.0 - theta)) / (1.0 - zeta_2 / zeta_n);
        Zipfian {
            base: min,
            items,
            theta,
            zeta_n,
            alpha: 1.0 / (1.0 - theta),
            eta,
        }
    }

    /// The next item.
    pub fn next(&self, rng: &mut impl Rng) -> u64 {
        let u: f64 = rng.random();
        let uz = u * self.zeta_n;
        if uz < 1.0 {
            return self.base;
        }
        if uz < 1.0 + 0.5f64.powf(self.theta) {
            return self.base + 1;
        }
        self.base + (self.items * (self.eta * u - self.eta + 1.0).powf(self.alpha)) as u64
    }
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    use super::*;

    #[test]
    fn stays_in_range_and_favours_the_minimum() {
        let zipf = Zipfian::new(1, 1000);
        let mut rng = StdRng::seed_from_u64(1);
        let draws: Vec<u64> = (0..10_000).map(|_| zipf.next(&mut rng)).collect();
        assert!(draws.iter().all(|d| (1..=1000).contains(d)));
        let ones = draws.iter().filter(|d| **d == 1).count();
        assert!(
            ones > 1_000,
            "item 1 is drawn about 13% of the time: {ones}"
        );
    }
}
