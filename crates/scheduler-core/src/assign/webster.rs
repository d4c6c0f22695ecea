//! The Webster (Sainte-Laguë) dispenser the reference divides replicas with.
//!
//! Seats go one at a time to the party with the highest `votes / (2·seats + 1)`. The
//! priority is an IEEE-754 double quotient compared with `==`/`>` exactly as upstream (not
//! an integer cross-multiplication, which differs once votes exceed 2^53). Ties go to the
//! party with fewer seats, then by name in the order chosen by the binding's UID.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use karmada_api::work::TargetCluster;

/// A party of the apportionment: a cluster, its weight and the replicas it holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Party {
    pub name: String,
    pub votes: i64,
    pub seats: i32,
}

/// Which name wins a tie between parties of equal priority and equal seats.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NameOrder {
    /// The lexicographically smaller name wins.
    Ascending,
    /// The lexicographically larger name wins.
    Descending,
}

/// FNV-1a, 32 bits.
pub fn fnv1a32(bytes: &[u8]) -> u32 {
    bytes.iter().fold(2_166_136_261u32, |h, b| {
        (h ^ u32::from(*b)).wrapping_mul(16_777_619)
    })
}

/// The tie-break order for a binding: descending names when the UID hashes to an odd value,
/// ascending otherwise (and for an empty UID, whose hash is never consulted).
pub fn name_order_for_uid(uid: &str) -> NameOrder {
    if !uid.is_empty() && fnv1a32(uid.as_bytes()) & 1 == 1 {
        NameOrder::Descending
    } else {
        NameOrder::Ascending
    }
}

/// `votes / (2·seats + 1)`; the denominator is computed in i32 (wrapping) and then
/// converted, like upstream.
fn priority(votes: i64, seats: i32) -> f64 {
    votes as f64 / f64::from(seats.wrapping_mul(2).wrapping_add(1))
}

/// A party in the heap: its position in name order stands for its name (names are unique
/// among parties, so comparing positions orders them exactly as comparing names), and its
/// priority is kept up to date with its seats. `Ord` puts the party that should win the next
/// seat on top.
#[derive(Clone, Copy)]
struct Ranked {
    priority: f64,
    seats: i32,
    votes: i64,
    rank: u32,
    order: NameOrder,
}

impl PartialEq for Ranked {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Ranked {}

impl PartialOrd for Ranked {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Ranked {
    /// Greater is better: higher priority, then fewer seats, then the name the order
    /// prefers. Priorities are never NaN (finite votes over an odd denominator); were they,
    /// neither side would be better, as upstream's `!=`/`>` comparisons give.
    fn cmp(&self, other: &Self) -> Ordering {
        let (pa, pb) = (self.priority, other.priority);
        if pa != pb {
            return if pa > pb {
                Ordering::Greater
            } else if pb > pa {
                Ordering::Less
            } else {
                Ordering::Equal
            };
        }
        other.seats.cmp(&self.seats).then_with(|| match self.order {
            NameOrder::Ascending => other.rank.cmp(&self.rank),
            NameOrder::Descending => self.rank.cmp(&other.rank),
        })
    }
}

/// The Webster apportionment on borrowed names: `(name, votes, seats)` of every party,
/// sorted by name. Same rules as [`allocate_webster_seats`].
pub(crate) fn webster<'n>(
    new_seats: i32,
    votes: &[(&'n str, i64)],
    initial: &[(&'n str, i32)],
    order: NameOrder,
) -> Vec<(&'n str, i64, i32)> {
    // Map semantics by a stable sort: per name, the initial entries in order (each one
    // replacing the party), then the votes in order (each one replacing its votes).
    let mut entries: Vec<(&str, Option<i64>, i32)> = initial
        .iter()
        .map(|&(n, seats)| (n, None, seats))
        .chain(votes.iter().map(|&(n, v)| (n, Some(v), 0)))
        .collect();
    entries.sort_by(|a, b| a.0.cmp(b.0));
    let mut parties: Vec<(&'n str, i64, i32)> = Vec::with_capacity(entries.len());
    for (name, v, seats) in entries {
        match (parties.last_mut(), v) {
            (Some(last), Some(v)) if last.0 == name => last.1 = v,
            (Some(last), None) if last.0 == name => *last = (name, 0, seats),
            (_, Some(v)) => parties.push((name, v, 0)),
            (_, None) => parties.push((name, 0, seats)),
        }
    }
    apportion(new_seats, parties, order)
}

/// [`webster`] without initial seats, for parties whose names are ordered as `positions`
/// order them (equal positions for equal names, as snapshot positions are): they are put in
/// name order by comparing positions, not names.
fn webster_positioned<'n>(
    new_seats: i32,
    votes: &[(&'n str, i64)],
    positions: &[usize],
    order: NameOrder,
) -> Vec<(&'n str, i64, i32)> {
    let mut by_position: Vec<(usize, usize)> =
        positions.iter().copied().zip(0..votes.len()).collect();
    // Equal positions keep their input order, so the last vote of a party wins.
    by_position.sort_unstable();
    let mut parties: Vec<(&'n str, i64, i32)> = Vec::with_capacity(votes.len());
    let mut last = None;
    for (p, i) in by_position {
        let (name, v) = votes[i];
        match parties.last_mut() {
            Some(party) if last == Some(p) => party.1 = v,
            _ => parties.push((name, v, 0)),
        }
        last = Some(p);
    }
    apportion(new_seats, parties, order)
}

/// Hand out `new_seats` seats to `parties` (name order, unique names).
fn apportion(
    new_seats: i32,
    mut parties: Vec<(&str, i64, i32)>,
    order: NameOrder,
) -> Vec<(&str, i64, i32)> {
    if parties.is_empty() {
        return parties;
    }
    let ranked: Vec<Ranked> = parties
        .iter()
        .enumerate()
        .map(|(i, &(_, votes, seats))| Ranked {
            priority: priority(votes, seats),
            seats,
            votes,
            rank: i as u32,
            order,
        })
        .collect();
    if closed_form_pays(new_seats, ranked.len())
        && let Some(seats) = closed_form(new_seats, &ranked)
    {
        for (party, s) in parties.iter_mut().zip(seats) {
            party.2 = s;
        }
        return parties;
    }
    let mut heap = BinaryHeap::from(ranked);
    for _ in 0..new_seats.max(0) {
        let Some(mut top) = heap.peek_mut() else {
            break;
        };
        top.seats = top.seats.wrapping_add(1);
        top.priority = priority(top.votes, top.seats);
    }
    for r in heap.into_vec() {
        parties[r.rank as usize].2 = r.seats;
    }
    parties
}

/// Whether [`closed_form`] is cheaper than handing the seats out one at a time: it costs
/// about 2,000 priority computations per party, a seat about a dozen heap steps.
fn closed_form_pays(new_seats: i32, parties: usize) -> bool {
    i64::from(new_seats) > (parties as i64 * 256).max(4096)
}

/// The seats the one-at-a-time dispenser ends with, computed from the answer instead of the
/// input: its cost grows with the log of the seats, not with the seats (a binding asking for
/// two billion replicas took minutes of CPU one seat at a time).
///
/// Each party's successive seat claims `(priority, seats, name)` only get worse as it gains
/// seats (for votes ≥ 0 and no seat count past `i32::MAX`, including the denominator's i32
/// wrap, past which priorities turn negative and keep falling), and claims of different
/// parties never compare equal. So handing out `n` seats one at a time gives each party
/// exactly its claims among the `n` best of all claims: the `n`-th best claim is found by
/// bisection, first on the priority (as the dispenser compares it: f64, `==`), then on the
/// seats, then by name. `None` where the claims are not ordered so (negative votes, seat
/// counts that would wrap): those inputs are dispensed one at a time.
fn closed_form(new_seats: i32, ranked: &[Ranked]) -> Option<Vec<i32>> {
    let n = i64::from(new_seats);
    let ordered = ranked
        .iter()
        .all(|r| r.votes >= 0 && r.seats >= 0 && i64::from(r.seats) + n <= i64::from(i32::MAX));
    if !ordered || ranked.is_empty() {
        return None;
    }
    // The priority of a party's k-th claim, k < n (no party can take more than n seats).
    let claim = |r: &Ranked, k: i64| priority(r.votes, r.seats + k as i32);
    // Claims of `r` whose priority satisfies `keep` (a prefix, since priorities never rise).
    let prefix = |r: &Ranked, keep: &dyn Fn(f64) -> bool| -> i64 {
        let (mut lo, mut hi) = (0i64, n);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if keep(claim(r, mid)) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    };
    let at_least = |p: f64| -> i64 { ranked.iter().map(|r| prefix(r, &|q| q >= p)).sum() };
    // The n-th best priority: the highest p with at least n claims of priority >= p, searched
    // over the f64s in order (-0.0 and 0.0 compare equal and count alike).
    let key = |p: f64| -> u64 {
        let b = p.to_bits();
        if b >> 63 == 1 { !b } else { b | 1 << 63 }
    };
    let value = |k: u64| -> f64 { f64::from_bits(if k >> 63 == 1 { k & !(1 << 63) } else { !k }) };
    let (mut lo, mut hi) = (u64::MAX, 0u64);
    for r in ranked {
        lo = lo.min(key(claim(r, n - 1)));
        hi = hi.max(key(claim(r, 0)));
    }
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        if at_least(value(mid)) >= n {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    let p = value(lo);
    // Per party: claims better than p, and the range [above, upto) of claims at p.
    let above: Vec<i64> = ranked.iter().map(|r| prefix(r, &|q| q > p)).collect();
    let upto: Vec<i64> = ranked.iter().map(|r| prefix(r, &|q| q >= p)).collect();
    let mut left = n - above.iter().sum::<i64>();
    // Among claims at p, fewer seats first: the seat count s at which the rest is reached.
    let at_or_below = |s: i64| -> i64 {
        ranked
            .iter()
            .zip(above.iter().zip(&upto))
            .map(|(r, (&a, &u))| (s - i64::from(r.seats) + 1).clamp(a, u) - a)
            .sum()
    };
    let (mut slo, mut shi) = (0i64, i64::from(i32::MAX));
    while slo < shi {
        let mid = slo + (shi - slo) / 2;
        if at_or_below(mid) >= left {
            shi = mid;
        } else {
            slo = mid + 1;
        }
    }
    let cut = slo;
    left -= at_or_below(cut - 1);
    let mut seats: Vec<i64> = ranked
        .iter()
        .zip(above.iter().zip(&upto))
        .map(|(r, (&a, &u))| {
            i64::from(r.seats) + a + ((cut - 1) - i64::from(r.seats) + 1).clamp(a, u) - a
        })
        .collect();
    // Claims at p with exactly `cut` seats: by name, in the binding's order.
    let mut tied: Vec<&Ranked> = ranked
        .iter()
        .zip(above.iter().zip(&upto))
        .filter(|(r, (a, u))| {
            let k = cut - i64::from(r.seats);
            (**a..**u).contains(&k)
        })
        .map(|(r, _)| r)
        .collect();
    tied.sort_by(|x, y| match x.order {
        NameOrder::Ascending => x.rank.cmp(&y.rank),
        NameOrder::Descending => y.rank.cmp(&x.rank),
    });
    for r in tied.into_iter().take(left.max(0) as usize) {
        seats[r.rank as usize] += 1;
    }
    Some(seats.into_iter().map(|s| s as i32).collect())
}

/// `AllocateWebsterSeats`: hand out `new_seats` seats on top of `initial`.
///
/// A party of `initial` without votes keeps its seats and competes with 0 votes; a later
/// entry with the same name overrides an earlier one (map semantics upstream). The result
/// holds every party, zero-seat ones included, sorted by name; it is empty without parties.
/// The comparison is a strict total order, so a heap and a linear scan pick the same winner.
pub fn allocate_webster_seats(
    new_seats: i32,
    votes: &[(String, i64)],
    initial: &[(String, i32)],
    order: NameOrder,
) -> Vec<Party> {
    let votes: Vec<(&str, i64)> = votes.iter().map(|(n, v)| (n.as_str(), *v)).collect();
    let initial: Vec<(&str, i32)> = initial.iter().map(|(n, s)| (n.as_str(), *s)).collect();
    webster(new_seats, &votes, &initial, order)
        .into_iter()
        .map(|(name, votes, seats)| Party {
            name: name.to_string(),
            votes,
            seats,
        })
        .collect()
}

/// The upstream `Dispenser`: divide `replicas` by `weights` on top of `init`, with the tie
/// order derived from the binding `uid`.
///
/// Returns `init` unchanged when there is nothing to do (`replicas == 0` with a non-empty
/// `init`, or weights summing to 0); otherwise every party, sorted by name.
pub fn dispense_by_weight<N: AsRef<str>>(
    replicas: i32,
    init: &[TargetCluster],
    weights: &[(N, i64)],
    uid: &str,
) -> Vec<TargetCluster> {
    if replicas == 0 && !init.is_empty() {
        return init.to_vec();
    }
    let sum = weights.iter().fold(0i64, |s, (_, w)| s.wrapping_add(*w));
    if sum == 0 {
        return init.to_vec();
    }
    let weights: Vec<(&str, i64)> = weights.iter().map(|(n, w)| (n.as_ref(), *w)).collect();
    let initial: Vec<(&str, i32)> = init.iter().map(|t| (t.name.as_str(), t.replicas)).collect();
    webster(replicas, &weights, &initial, name_order_for_uid(uid))
        .into_iter()
        .map(|(name, _, seats)| TargetCluster::new(name, seats))
        .collect()
}

/// [`dispense_by_weight`] without an initial distribution, on borrowed names: every party
/// with its seats, sorted by name; empty when the weights sum to 0.
///
/// `positions`, when given, are the parties' snapshot positions (one per weight, ordered as
/// the names are); they spare comparing names.
pub(crate) fn dispense<'n>(
    replicas: i32,
    weights: &[(&'n str, i64)],
    positions: Option<&[usize]>,
    uid: &str,
) -> Vec<(&'n str, i32)> {
    let sum = weights.iter().fold(0i64, |s, (_, w)| s.wrapping_add(*w));
    if sum == 0 {
        return Vec::new();
    }
    let order = name_order_for_uid(uid);
    let parties = match positions {
        Some(p) if p.len() == weights.len() => webster_positioned(replicas, weights, p, order),
        _ => webster(replicas, weights, &[], order),
    };
    parties
        .into_iter()
        .map(|(name, _, seats)| (name, seats))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use NameOrder::{Ascending, Descending};

    fn votes(v: &[(&str, i64)]) -> Vec<(String, i64)> {
        v.iter().map(|(n, x)| (n.to_string(), *x)).collect()
    }

    fn seats(v: &[(&str, i32)]) -> Vec<(String, i32)> {
        v.iter().map(|(n, x)| (n.to_string(), *x)).collect()
    }

    fn parties(p: &[(&str, i64, i32)]) -> Vec<Party> {
        p.iter()
            .map(|(n, v, s)| Party {
                name: n.to_string(),
                votes: *v,
                seats: *s,
            })
            .collect()
    }

    fn tcs(v: &[(&str, i32)]) -> Vec<TargetCluster> {
        v.iter().map(|(n, r)| TargetCluster::new(*n, *r)).collect()
    }

    #[test]
    fn fnv_examples_of_the_spec() {
        assert_eq!(
            fnv1a32(b"11111111-1111-1111-1111-111111111111"),
            0x3d75_cc01
        );
        assert_eq!(
            fnv1a32(b"7c5f1a6e-2d3b-4c8e-9f10-1a2b3c4d5e6f"),
            0xdc6e_a878
        );
        assert_eq!(
            name_order_for_uid("11111111-1111-1111-1111-111111111111"),
            Descending
        );
        assert_eq!(
            name_order_for_uid("7c5f1a6e-2d3b-4c8e-9f10-1a2b3c4d5e6f"),
            Ascending
        );
        assert_eq!(name_order_for_uid(""), Ascending);
        // The UIDs of upstream's dispenser tests.
        assert_eq!(
            name_order_for_uid("d43fdeeb-d750-4e2b-bee3-64eb94534f4c"),
            Descending
        );
        assert_eq!(
            name_order_for_uid("4858ca61-3ff8-4095-8267-f3d059d8074c"),
            Ascending
        );
    }

    #[test]
    fn worked_example_table_of_the_spec() {
        let v = votes(&[("m1", 6), ("m2", 8), ("m3", 10)]);
        // Seats after each round, as in the worked example.
        let rounds = [
            (0, 0, 1),
            (0, 1, 1),
            (1, 1, 1),
            (1, 1, 2),
            (1, 2, 2),
            (2, 2, 2),
            (2, 2, 3),
            (2, 3, 3),
            (2, 3, 4),
            (3, 3, 4),
            (3, 4, 4),
            (3, 4, 5),
        ];
        for (i, want) in rounds.iter().enumerate() {
            let got = allocate_webster_seats(i as i32 + 1, &v, &[], Ascending);
            assert_eq!(
                (got[0].seats, got[1].seats, got[2].seats),
                *want,
                "round {}",
                i + 1
            );
        }
    }

    #[test]
    fn other_checks_of_the_spec() {
        let s = |v: &[(&str, i64)], n, o| -> Vec<i32> {
            allocate_webster_seats(n, &votes(v), &[], o)
                .iter()
                .map(|p| p.seats)
                .collect()
        };
        assert_eq!(s(&[("m1", 1), ("m2", 1)], 3, Ascending), [2, 1]);
        assert_eq!(s(&[("m1", 1), ("m2", 1)], 3, Descending), [1, 2]);
        assert_eq!(
            s(&[("A", 2), ("B", 1), ("C", 1), ("D", 1)], 7, Ascending),
            [3, 2, 1, 1]
        );
        assert_eq!(s(&[("a", 3), ("b", 2), ("c", 1)], 12, Ascending), [6, 4, 2]);
        assert_eq!(s(&[("a", 3), ("b", 2), ("c", 1)], 13, Ascending), [7, 4, 2]);
        assert_eq!(s(&[("a", 3), ("b", 2), ("c", 1)], 14, Ascending), [7, 5, 2]);
        // Upstream's example: 1200/900/400 votes, 4 seats.
        assert_eq!(
            s(
                &[("Alpha", 1200), ("Beta", 900), ("Gamma", 400)],
                4,
                Ascending
            ),
            [2, 1, 1]
        );
    }

    /// Upstream `TestAllocateWebsterSeats`, re-expressed.
    #[test]
    fn allocate_webster_seats_upstream_table() {
        let classic = votes(&[
            ("PartyA", 100000),
            ("PartyB", 80000),
            ("PartyC", 30000),
            ("PartyD", 20000),
        ]);
        let rounds = [
            [1, 0, 0, 0],
            [1, 1, 0, 0],
            [2, 1, 0, 0],
            [2, 1, 1, 0],
            [2, 2, 1, 0],
            [2, 2, 1, 1],
            [3, 2, 1, 1],
            [3, 3, 1, 1],
        ];
        for (i, want) in rounds.iter().enumerate() {
            let got = allocate_webster_seats(i as i32 + 1, &classic, &[], Ascending);
            let got: Vec<i32> = got.iter().map(|p| p.seats).collect();
            assert_eq!(got, want, "classic round {}", i + 1);
        }
        assert_eq!(allocate_webster_seats(1, &[], &[], Ascending), vec![]);
        assert_eq!(allocate_webster_seats(0, &[], &[], Ascending), vec![]);
        assert_eq!(
            allocate_webster_seats(
                0,
                &votes(&[("PartyA", 100), ("PartyB", 200)]),
                &[],
                Ascending
            ),
            parties(&[("PartyA", 100, 0), ("PartyB", 200, 0)])
        );
        type Case = (
            i32,
            Vec<(String, i64)>,
            Vec<(String, i32)>,
            NameOrder,
            Vec<Party>,
        );
        let cases: Vec<Case> = vec![
            (
                1,
                votes(&[("PartyA", 3), ("PartyB", 1)]),
                seats(&[("PartyA", 1), ("PartyB", 0)]),
                Ascending,
                parties(&[("PartyA", 3, 1), ("PartyB", 1, 1)]),
            ),
            (
                1,
                votes(&[("PartyA", 1), ("PartyB", 1)]),
                vec![],
                Ascending,
                parties(&[("PartyA", 1, 1), ("PartyB", 1, 0)]),
            ),
            (
                1,
                votes(&[("PartyA", 1), ("PartyB", 1)]),
                vec![],
                Descending,
                parties(&[("PartyA", 1, 0), ("PartyB", 1, 1)]),
            ),
            (
                2,
                votes(&[("NewParty1", 1), ("NewParty2", 1)]),
                seats(&[("OldParty", 0)]),
                Ascending,
                parties(&[("NewParty1", 1, 1), ("NewParty2", 1, 1), ("OldParty", 0, 0)]),
            ),
            (
                2,
                votes(&[("OldParty", 1), ("NewParty", 1)]),
                seats(&[("OldParty", 1)]),
                Ascending,
                parties(&[("NewParty", 1, 2), ("OldParty", 1, 1)]),
            ),
            (
                2,
                votes(&[("PartyA", 100)]),
                seats(&[("PartyB", 3)]),
                Ascending,
                parties(&[("PartyA", 100, 2), ("PartyB", 0, 3)]),
            ),
        ];
        for (i, (n, v, init, order, want)) in cases.into_iter().enumerate() {
            assert_eq!(
                allocate_webster_seats(n, &v, &init, order),
                want,
                "case {i}"
            );
        }
    }

    /// Upstream `Test_dispenser_AllocateByWeight`, re-expressed (exact order asserted).
    #[test]
    fn dispenser_upstream_table() {
        const ODD: &str = "d43fdeeb-d750-4e2b-bee3-64eb94534f4c";
        const EVEN: &str = "4858ca61-3ff8-4095-8267-f3d059d8074c";
        let abc = tcs(&[("A", 1), ("B", 2), ("C", 3)]);
        let w123 = votes(&[("A", 1), ("B", 2), ("C", 3)]);
        type Case<'a> = (
            i32,
            Vec<TargetCluster>,
            Vec<(String, i64)>,
            &'a str,
            Vec<TargetCluster>,
        );
        let cases: Vec<Case<'_>> = vec![
            (
                6,
                abc.clone(),
                w123.clone(),
                "",
                tcs(&[("A", 2), ("B", 4), ("C", 6)]),
            ),
            (
                3,
                abc.clone(),
                w123.clone(),
                "",
                tcs(&[("A", 2), ("B", 3), ("C", 4)]),
            ),
            (
                2,
                abc.clone(),
                w123.clone(),
                "",
                tcs(&[("A", 1), ("B", 3), ("C", 4)]),
            ),
            (
                1,
                vec![],
                votes(&[("A", 2), ("B", 1)]),
                "",
                tcs(&[("A", 1), ("B", 0)]),
            ),
            (
                2,
                vec![],
                votes(&[("A", 2), ("B", 1)]),
                "",
                tcs(&[("A", 1), ("B", 1)]),
            ),
            (
                3,
                vec![],
                votes(&[("A", 2), ("B", 1)]),
                "",
                tcs(&[("A", 2), ("B", 1)]),
            ),
            (
                5,
                vec![],
                votes(&[("A", 170), ("B", 110), ("C", 60)]),
                "",
                tcs(&[("A", 2), ("B", 2), ("C", 1)]),
            ),
            (
                6,
                vec![],
                votes(&[("A", 170), ("B", 110), ("C", 60)]),
                "",
                tcs(&[("A", 3), ("B", 2), ("C", 1)]),
            ),
            (
                5,
                vec![],
                votes(&[("A", 1), ("B", 1)]),
                ODD,
                tcs(&[("A", 2), ("B", 3)]),
            ),
            (
                5,
                vec![],
                votes(&[("A", 1), ("B", 1)]),
                EVEN,
                tcs(&[("A", 3), ("B", 2)]),
            ),
        ];
        for (i, (n, init, w, uid, want)) in cases.into_iter().enumerate() {
            assert_eq!(dispense_by_weight(n, &init, &w, uid), want, "case {i}");
        }
    }

    /// Upstream `TestDispenseReplicasByTargetClusters`: weights are the target replicas.
    #[test]
    fn spread_by_target_clusters_upstream_table() {
        let spread = |sum, w: &[(&str, i64)]| dispense_by_weight(sum, &[], &votes(w), "");
        assert_eq!(spread(10, &[]), vec![]);
        assert_eq!(spread(10, &[("member1", 5)]), tcs(&[("member1", 10)]));
        assert_eq!(
            spread(12, &[("member1", 5), ("member2", 5), ("member3", 5)]),
            tcs(&[("member1", 4), ("member2", 4), ("member3", 4)])
        );
        assert_eq!(
            spread(10, &[("member1", 5), ("member2", 5), ("member3", 5)]),
            tcs(&[("member1", 4), ("member2", 3), ("member3", 3)])
        );
        assert_eq!(
            spread(13, &[("member1", 1), ("member2", 2), ("member3", 3)]),
            tcs(&[("member1", 2), ("member2", 4), ("member3", 7)])
        );
    }

    #[test]
    fn priorities_are_float_quotients() {
        // 2^53+1 and 2^53 are the same double: the tie goes to the name, not the votes.
        let big = 1i64 << 53;
        let got = allocate_webster_seats(1, &votes(&[("a", big), ("b", big + 1)]), &[], Ascending);
        assert_eq!(got[0].seats, 1);
    }

    /// The seats one at a time (the reference's loop), for comparing with [`closed_form`].
    fn one_at_a_time(new_seats: i32, ranked: &[Ranked]) -> Vec<i32> {
        let mut heap = BinaryHeap::from(ranked.to_vec());
        for _ in 0..new_seats {
            let mut top = heap.peek_mut().unwrap();
            top.seats = top.seats.wrapping_add(1);
            top.priority = priority(top.votes, top.seats);
        }
        let mut seats = vec![0; ranked.len()];
        for r in heap.into_vec() {
            seats[r.rank as usize] = r.seats;
        }
        seats
    }

    fn ranked(parties: &[(i64, i32)], order: NameOrder) -> Vec<Ranked> {
        parties
            .iter()
            .enumerate()
            .map(|(i, &(votes, seats))| Ranked {
                priority: priority(votes, seats),
                seats,
                votes,
                rank: i as u32,
                order,
            })
            .collect()
    }

    proptest::proptest! {
        /// The closed form gives every party the seats of the one-at-a-time loop: small and
        /// equal votes (ties by seats and by name), zero votes, votes past 2^53, initial seats,
        /// and seat counts across 2^30, where the i32 denominator wraps.
        #[test]
        fn the_closed_form_hands_out_the_seats_of_the_loop(
            parties in proptest::collection::vec(
                (proptest::prop_oneof![0i64..4, 0i64..1_000, (1i64 << 53)..(1i64 << 53) + 8, 0i64..i64::MAX],
                 proptest::prop_oneof![0i32..3, 0i32..50, (1i32 << 30) - 300..(1i32 << 30) + 300]),
                1..7,
            ),
            new_seats in 1i32..3_000,
            descending in proptest::bool::ANY,
        ) {
            let order = if descending { NameOrder::Descending } else { NameOrder::Ascending };
            let r = ranked(&parties, order);
            if let Some(got) = closed_form(new_seats, &r) {
                proptest::prop_assert_eq!(got, one_at_a_time(new_seats, &r));
            }
        }
    }

    /// Two billion replicas over two clusters cost what two do: half each, the wrapped
    /// denominators included (the loop gives 1,073,741,824 and 1,073,741,823 here).
    #[test]
    fn two_billion_seats_in_closed_form() {
        let r = ranked(&[(1, 0), (1, 0)], NameOrder::Ascending);
        assert_eq!(
            closed_form(i32::MAX, &r),
            Some(vec![1 << 30, (1 << 30) - 1])
        );
        let got = allocate_webster_seats(
            i32::MAX,
            &votes(&[("a", 3), ("b", 1), ("c", 0)]),
            &[],
            Ascending,
        );
        assert_eq!(
            got.iter().map(|p| i64::from(p.seats)).sum::<i64>(),
            i64::from(i32::MAX)
        );
        // Negative votes are not ordered claims: dispensed one at a time.
        assert_eq!(
            closed_form(10, &ranked(&[(-1, 0), (2, 0)], Ascending)),
            None
        );
    }
}
