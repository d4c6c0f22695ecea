//! SplitMix64 (Steele, Lea, Flood 2014): the one seeded generator of the tests, the bench and
//! the fault proxy. Tiny, fast, and the same stream for a seed on every machine and with every
//! version of the dependencies (so no `rand`). [`Rng`] adds the draws (ranges, chances,
//! picks) of the input generator and the bench, whose streams must stay as they are; the fault
//! proxy keeps its own.

/// The generator; the field is its state.
#[derive(Clone, Debug)]
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)` (the top 53 bits).
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// 64-bit FNV-1a of the concatenation of `parts`: a stable hash (the same on every machine
/// and with every version of the dependencies) for seeds and stub answers.
pub fn fnv1a(parts: &[&str]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in parts.iter().flat_map(|s| s.bytes()) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// [`SplitMix64`] with the draws of the input generator ([`crate::inputs`]) and the bench.
/// Each helper's draws are part of the streams the tests depend on: keep them as they are.
#[derive(Clone, Debug)]
pub struct Rng(pub SplitMix64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(SplitMix64(seed))
    }

    /// A generator for item `index` of the run seeded with `seed`, independent of the others,
    /// so that one item (an input file) can be regenerated on its own.
    pub fn derive(seed: u64, index: u64) -> Self {
        let mut r = Rng::new(seed ^ index.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        r.next_u64();
        r
    }

    /// A new independent stream, derived from this one and a label (so that adding a draw to
    /// one stream does not shift the others).
    pub fn fork(&self, label: &str) -> Rng {
        Rng(SplitMix64(self.0.0 ^ fnv1a(&[label])))
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }

    /// Uniform in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }

    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + (self.next_u64() % ((hi - lo + 1) as u64)) as i64
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        self.0.next_f64() <= p
    }

    /// True with probability `percent`/100; no draw when `percent` is 0, so that a corner
    /// one mix of [`crate::inputs`] never takes leaves that mix's stream as it was.
    pub fn percent(&mut self, percent: u32) -> bool {
        percent > 0 && self.below(100) < percent as usize
    }

    pub fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len())]
    }

    /// Index chosen with the given relative weights.
    pub fn weighted(&mut self, weights: &[u32]) -> usize {
        let total: u32 = weights.iter().sum();
        let mut x = self.below(total as usize) as u32;
        for (i, w) in weights.iter().enumerate() {
            if x < *w {
                return i;
            }
            x -= w;
        }
        weights.len() - 1
    }

    pub fn shuffle<T>(&mut self, xs: &mut [T]) {
        for i in (1..xs.len()).rev() {
            let j = self.below(i + 1);
            xs.swap(i, j);
        }
    }

    /// Between `min` and `max` distinct elements of `xs`, in random order (the first ones of
    /// a shuffle of all of them).
    pub fn choose<T: Clone>(&mut self, xs: &[T], min: usize, max: usize) -> Vec<T> {
        let mut idx: Vec<usize> = (0..xs.len()).collect();
        self.shuffle(&mut idx);
        let max = max.min(idx.len());
        let min = min.min(max);
        let n = self.range(min as i64, max as i64) as usize;
        idx[..n].iter().map(|&i| xs[i].clone()).collect()
    }

    /// `k` distinct indices of `0..n` (all of them when `k >= n`), in ascending order.
    pub fn sample(&mut self, n: usize, k: usize) -> Vec<usize> {
        let mut idx: Vec<usize> = (0..n).collect();
        let k = k.min(n);
        for i in 0..k {
            let j = i + self.below(n - i);
            idx.swap(i, j);
        }
        let mut out = idx[..k].to_vec();
        out.sort_unstable();
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_stream() {
        let mut a = Rng::new(7);
        let mut b = Rng::new(7);
        for _ in 0..100 {
            assert_eq!(a.next_u64(), b.next_u64());
        }
        assert_ne!(
            Rng::new(7).fork("x").next_u64(),
            Rng::new(7).fork("y").next_u64()
        );
    }

    #[test]
    fn helpers_stay_in_bounds() {
        let mut r = Rng::new(1);
        for _ in 0..1000 {
            assert!((3..=9).contains(&r.range(3, 9)));
            assert!(r.weighted(&[0, 5, 0]) == 1);
            assert!(!r.percent(0));
        }
        let s = r.sample(10, 4);
        assert_eq!(s.len(), 4);
        assert!(s.windows(2).all(|w| w[0] < w[1]));
        let c = r.choose(&[1, 2, 3, 4, 5], 2, 3);
        assert!((2..=3).contains(&c.len()));
    }
}
