//! How many reviews `/debug/explain` may send the API server, split so that callers it cannot
//! vouch for yet cannot spend what callers it knows need.
//!
//! - Known callers: SubjectAccessReviews (only sent for users a TokenReview accepted), and
//!   TokenReviews of tokens the API server accepted within [`SEEN_VALID_FOR`] (told apart by
//!   their hash): [`KNOWN_QPS`] a second, burst [`KNOWN_BURST`].
//! - Every other token (a new one, or a made-up one: nothing tells them apart before a
//!   review): [`SOURCE_QPS`] a second per source address (burst [`SOURCE_BURST`]), and
//!   [`UNKNOWN_QPS`] a second in all (burst [`UNKNOWN_BURST`]). The total bounds what made-up
//!   tokens cost the API server whatever the number of addresses; the share per address keeps
//!   a flood from fewer than `UNKNOWN_QPS / SOURCE_QPS` addresses from using up the total.

use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use component_base::lru::Lru;
use component_base::ratelimit::TokenBucket;
use tokio::time::Instant;

/// Reviews a second for known callers, and their burst.
pub const KNOWN_QPS: f64 = 5.0;
pub const KNOWN_BURST: f64 = 10.0;
/// TokenReviews a second of tokens not seen valid, from all addresses, and their burst.
pub const UNKNOWN_QPS: f64 = 10.0;
pub const UNKNOWN_BURST: f64 = 40.0;
/// TokenReviews a second of tokens not seen valid, from one address, and their burst.
pub const SOURCE_QPS: f64 = 0.5;
pub const SOURCE_BURST: f64 = 5.0;
/// Addresses whose share is remembered (the least recently used is forgotten, and starts
/// again with a full share: the total still holds).
pub const SOURCES: usize = 1024;
/// How long a token the API server accepted counts as a known caller's.
pub const SEEN_VALID_FOR: Duration = Duration::from_secs(10 * 60);

/// Where a request came from, as the budgets count addresses: an IPv4 address, or the /64
/// prefix of an IPv6 one (one host commonly holds a whole /64). Requests whose peer is not
/// known share one source.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Source(IpAddr);

impl Source {
    pub fn of(peer: Option<SocketAddr>) -> Self {
        let Some(peer) = peer else {
            return Self(IpAddr::from([0u8; 4]));
        };
        match peer.ip().to_canonical() {
            IpAddr::V6(ip) => {
                let prefix = u128::from(ip) & !((1u128 << 64) - 1);
                Self(IpAddr::V6(Ipv6Addr::from(prefix)))
            }
            v4 => Self(v4),
        }
    }
}

/// The review budgets of one daemon.
pub struct Budgets {
    known: TokenBucket,
    unknown: TokenBucket,
    sources: Lru<Source, TokenBucket>,
}

impl Default for Budgets {
    fn default() -> Self {
        let now = Instant::now();
        Self {
            known: TokenBucket::new_at(KNOWN_QPS, KNOWN_BURST, now),
            unknown: TokenBucket::new_at(UNKNOWN_QPS, UNKNOWN_BURST, now),
            sources: Lru::new(SOURCES),
        }
    }
}

impl Budgets {
    /// One review for a known caller, if the budget allows it now.
    pub fn known(&mut self) -> bool {
        self.known.allow_at(Instant::now())
    }

    /// One TokenReview of a token not seen valid, from `source`, if both its share and the
    /// total allow it now (neither is spent otherwise).
    pub fn unknown(&mut self, source: Source) -> bool {
        let now = Instant::now();
        if self.unknown.tokens_at(now) < 1.0 {
            return false;
        }
        if self.sources.get_mut(&source).is_none() {
            self.sources
                .insert(source, TokenBucket::new_at(SOURCE_QPS, SOURCE_BURST, now));
        }
        let share = self
            .sources
            .get_mut(&source)
            .is_some_and(|b| b.allow_at(now));
        share && self.unknown.allow_at(now)
    }

    #[cfg(test)]
    fn sources_remembered(&self) -> usize {
        self.sources.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn from(ip: [u8; 4]) -> Source {
        Source::of(Some(SocketAddr::from((ip, 4242))))
    }

    /// Reviews taken from `s` until one is refused.
    fn spend_all(b: &mut Budgets, s: Source) -> usize {
        let mut n = 0;
        while b.unknown(s) {
            n += 1;
        }
        n
    }

    #[tokio::test(start_paused = true)]
    async fn each_address_has_its_share_of_reviews_for_tokens_not_seen_valid() {
        let mut b = Budgets::default();
        let (a, c) = (from([127, 0, 0, 2]), from([127, 0, 0, 1]));
        assert_eq!(spend_all(&mut b, a), SOURCE_BURST as usize);
        // Another address is not held back by the first one's flood.
        assert!(b.unknown(c));
        tokio::time::advance(Duration::from_secs_f64(1.0 / SOURCE_QPS)).await;
        assert_eq!(spend_all(&mut b, a), 1);
        // Over a minute, one address gets its rate and no more.
        let mut got = 0;
        for _ in 0..600 {
            tokio::time::advance(Duration::from_millis(100)).await;
            got += spend_all(&mut b, a);
        }
        assert_eq!(got, (60.0 * SOURCE_QPS) as usize);
    }

    #[tokio::test(start_paused = true)]
    async fn the_total_for_tokens_not_seen_valid_holds_whatever_the_number_of_addresses() {
        let mut b = Budgets::default();
        let mut got = 0;
        // 10,000 addresses, more than are remembered, each asking every 100 ms for 10 s.
        for tick in 0..100 {
            for i in 0..10_000u32 {
                let [_, x, y, z] = i.to_be_bytes();
                got += usize::from(b.unknown(from([10, x, y, z])));
            }
            assert!(b.sources_remembered() <= SOURCES);
            let bound = UNKNOWN_BURST + UNKNOWN_QPS * f64::from(tick) / 10.0;
            assert!(got as f64 <= bound, "{got} reviews by tick {tick}");
            tokio::time::advance(Duration::from_millis(100)).await;
        }
        assert!(got >= 100, "{got}");
        // Known callers' reviews are not touched by all that.
        assert_eq!((0..100).filter(|_| b.known()).count(), KNOWN_BURST as usize);
    }

    #[tokio::test(start_paused = true)]
    async fn a_flood_from_a_few_addresses_leaves_room_for_another() {
        let mut b = Budgets::default();
        let flood: Vec<Source> = (2..10).map(|i| from([127, 0, 0, i])).collect();
        // Every 10 ms for 30 s, the flood asks as much as it can; each second, a reader with a
        // new token from an address of its own asks once, and is let through every time.
        for tick in 0..3000 {
            for s in &flood {
                spend_all(&mut b, *s);
            }
            if tick % 100 == 50 {
                let reader = from([10, 0, 0, (tick / 100) as u8]);
                assert!(b.unknown(reader), "the reader was refused at tick {tick}");
            }
            tokio::time::advance(Duration::from_millis(10)).await;
        }
    }

    #[test]
    fn ipv6_addresses_count_by_their_64_bit_prefix() {
        let v6 = |s: &str| Source::of(Some(SocketAddr::new(s.parse().unwrap(), 1)));
        assert_eq!(v6("2001:db8:1:2::1"), v6("2001:db8:1:2:ffff::9"));
        assert_ne!(v6("2001:db8:1:2::1"), v6("2001:db8:1:3::1"));
        assert_eq!(v6("::ffff:10.0.0.1"), from([10, 0, 0, 1]));
        assert_ne!(from([10, 0, 0, 1]), from([10, 0, 0, 2]));
        assert_eq!(Source::of(None), Source::of(None));
    }
}
