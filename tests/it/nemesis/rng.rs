//! A seeded generator (SplitMix64): the same seed gives the same plan
//! (keys, timings, instances, faults, isolation, skew). Thread scheduling
//! and the servers' own timing are not replayed, so a seed reproduces a
//! history's shape, not its exact interleaving.

#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `low..high` (`low` when the range is empty).
    pub fn range(&mut self, low: u64, high: u64) -> u64 {
        if high <= low {
            return low;
        }
        low + self.next_u64() % (high - low)
    }

    /// `true` with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        ((self.next_u64() >> 11) as f64 / (1u64 << 53) as f64) < p
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.range(0, items.len() as u64) as usize]
    }

    /// A generator of its own for one part of the plan, so that adding
    /// draws to one part leaves the others as they were.
    pub fn fork(&mut self) -> Rng {
        Rng(self.next_u64())
    }
}

/// A seed from the system's CSPRNG.
pub fn random_seed() -> u64 {
    use std::io::Read;
    let mut bytes = [0u8; 8];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut source| source.read_exact(&mut bytes))
        .expect("/dev/urandom");
    // Short enough to type in a replay command.
    u64::from_le_bytes(bytes) % 1_000_000_000_000
}
