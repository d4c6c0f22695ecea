//! Group selection: of every combination of groups whose size is within `[min, max]` and whose
//! summed value reaches the target (as the reference's depth-first search records them), the
//! best by weight, value and discovery order, then the shortest of its prefixes that the
//! reference's final pass would prefer.
//!
//! The reference enumerates every combination, 2^groups of them. Here the best combination
//! comes from a table over (next group, length, sum) when that table is small (polynomial in
//! the groups, the length and the target), else from a search that skips every branch that
//! cannot beat the best found so far; the prefixes of the winner are then checked directly.
//! The answer is the reference's at a fraction of the work (forty regions took the
//! enumeration seconds of CPU, eighty for ever).

/// A candidate group: a name, its value (feasible clusters in it) and weight (group score).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Group {
    pub name: String,
    pub value: i64,
    pub weight: i64,
}

#[derive(Clone, Debug)]
struct Path {
    id: usize,
    groups: Vec<Group>,
    weight: i64,
    value: i64,
}

impl Path {
    /// Whether `sub` is strictly shorter and a name-wise prefix of `self`.
    fn has_prefix(&self, sub: &Path) -> bool {
        sub.groups.len() < self.groups.len()
            && sub
                .groups
                .iter()
                .zip(&self.groups)
                .all(|(a, b)| a.name == b.name)
    }
}

/// The best groups, each path's groups ordered by weight desc, name asc; empty when none fits.
pub fn select_groups(mut groups: Vec<Group>, min: i64, max: i64, target: i64) -> Vec<Group> {
    if groups.is_empty() {
        return Vec::new();
    }
    groups.sort_by(|a, b| {
        a.value
            .cmp(&b.value)
            .then_with(|| b.weight.cmp(&a.weight))
            .then_with(|| a.name.cmp(&b.name))
    });
    // The reference explores a single path when every group is needed for the minimum, and
    // negative weights or values, or sums past i64, would void the bounds: those cases are
    // searched in full.
    let bounded = groups.iter().all(|g| g.weight >= 0 && g.value >= 0)
        && groups
            .iter()
            .try_fold(0i64, |s, g| s.checked_add(g.weight)?.checked_add(g.value))
            .is_some();
    if groups.len() as i64 == min || !bounded {
        return exhaustive(&groups, min, max, target);
    }
    let best =
        tabulated(&groups, min, max, target).unwrap_or_else(|| searched(&groups, min, max, target));
    let Some(best) = best else {
        return Vec::new();
    };
    let winner = path_of(&groups, &best.indices, 0);
    // The final pass of the reference walks the paths from the best down and moves to any
    // shorter name-wise prefix of the current pick: only prefixes of the winner can be picked,
    // each one if the search recorded it, in the order the paths are ranked.
    let mut prefixes: Vec<(Path, Vec<usize>)> = (1..winner.groups.len())
        .filter_map(|len| {
            let mut indices: Vec<usize> = winner.groups[..len]
                .iter()
                .map(|g| index_of(&best.indices, &groups, &g.name))
                .collect();
            indices.sort_unstable();
            recorded(&groups, &indices, min, max, target)
                .then(|| (path_of(&groups, &indices, 0), indices))
        })
        .collect();
    prefixes.sort_by(|(a, ai), (b, bi)| {
        b.weight
            .cmp(&a.weight)
            .then_with(|| b.value.cmp(&a.value))
            .then_with(|| ai.cmp(bi))
    });
    let mut pick = winner;
    for (p, _) in prefixes {
        if p.groups.len() < pick.groups.len() {
            pick = p;
        }
    }
    pick.groups
}

/// The best recorded path by the bounded search ([`Bounded`]).
fn searched(groups: &[Group], min: i64, max: i64, target: i64) -> Option<Best> {
    let mut search = Bounded {
        groups,
        min,
        max,
        target,
        path: Vec::new(),
        best: None,
        scratch: Vec::new(),
    };
    search.dfs(0, 0, 0);
    search.best
}

/// Cells of [`tabulated`]'s table beyond which the bounded search is used instead.
const TABLE_CELLS: usize = 1 << 24;

/// The best recorded path, by the reference's order (weight, value, then discovery), from a
/// table instead of a search: what a path can still become depends only on where it stands
/// (the next group it may take, its length, its sum), so the best ending of every such state
/// is worked out once, from the last group back. `None` when the table would be too large
/// (sums far past the target, thousands of groups); `Some(None)` when no path qualifies.
#[allow(clippy::option_option)]
fn tabulated(groups: &[Group], min: i64, max: i64, target: i64) -> Option<Option<Best>> {
    let n = groups.len();
    let longest = usize::try_from(max.max(0)).unwrap_or(usize::MAX).min(n);
    let most_value = groups.iter().map(|g| g.value).max().unwrap_or(0);
    let total: i64 = groups.iter().map(|g| g.value).sum();
    // A state is left only when its sum stays under the target, or passes it before `min`
    // groups: its sum never exceeds this.
    let sums = (target.max(1) - 1)
        .saturating_add(most_value.saturating_mul(min.max(1)))
        .min(total);
    let sums = usize::try_from(sums).ok()? + 1;
    let layer = (longest + 1).checked_mul(sums)?;
    if layer.checked_mul(n + 1)? > TABLE_CELLS {
        return None;
    }
    let records = |len: usize, sum: i64| {
        let len = len as i64;
        sum >= target && min <= len && len <= max
    };
    // best[l * sums + s]: the best (weight added, final value) from a state at the current
    // group; take[b][..]: whether that best takes group b.
    let mut next: Vec<Option<(i64, i64)>> = vec![None; layer];
    let mut take = vec![false; layer * (n + 1)];
    for b in (0..n).rev() {
        let mut here: Vec<Option<(i64, i64)>> = vec![None; layer];
        let g = &groups[b];
        for l in 0..longest {
            for s in 0..sums {
                let sum = s as i64;
                if records(l, sum) {
                    continue;
                }
                let after = sum + g.value;
                let taken = if records(l + 1, after) {
                    Some((g.weight, after))
                } else if l + 1 >= longest {
                    None
                } else {
                    usize::try_from(after)
                        .ok()
                        .filter(|&a| a < sums)
                        .and_then(|a| next[(l + 1) * sums + a])
                        .map(|(w, v)| (w.wrapping_add(g.weight), v))
                };
                let skipped = next[l * sums + s];
                let cell = l * sums + s;
                here[cell] = match (taken, skipped) {
                    (Some(t), Some(k)) if k > t => Some(k),
                    (Some(t), _) => {
                        take[b * layer + cell] = true;
                        Some(t)
                    }
                    (None, k) => k,
                };
            }
        }
        next = here;
    }
    if records(0, 0) {
        return Some(Some(Best {
            weight: 0,
            value: 0,
            indices: Vec::new(),
        }));
    }
    let Some((weight, value)) = next.first().copied().flatten() else {
        return Some(None);
    };
    let (mut l, mut s, mut indices) = (0usize, 0i64, Vec::new());
    for (b, g) in groups.iter().enumerate() {
        if records(l, s) {
            break;
        }
        if take[b * layer + l * sums + s as usize] {
            indices.push(b);
            l += 1;
            s += g.value;
        }
    }
    Some(Some(Best {
        weight,
        value,
        indices,
    }))
}

/// The index of the group named `name` among `indices` (names are unique).
fn index_of(indices: &[usize], groups: &[Group], name: &str) -> usize {
    *indices
        .iter()
        .find(|&&i| groups[i].name == name)
        .expect("a group of the path")
}

/// The path of these groups as the reference records it: ordered by weight (descending) and
/// name, with its summed weight and value.
fn path_of(groups: &[Group], indices: &[usize], id: usize) -> Path {
    let mut path: Vec<Group> = indices.iter().map(|&i| groups[i].clone()).collect();
    let weight = path.iter().map(|g| g.weight).fold(0i64, i64::wrapping_add);
    let value = path.iter().map(|g| g.value).sum();
    path.sort_by(|a, b| b.weight.cmp(&a.weight).then_with(|| a.name.cmp(&b.name)));
    Path {
        id,
        groups: path,
        weight,
        value,
    }
}

/// Whether the reference's search records exactly the groups at `indices` (ascending): no
/// shorter part of it was recorded or cut off at `max` first, and it qualifies itself.
fn recorded(groups: &[Group], indices: &[usize], min: i64, max: i64, target: i64) -> bool {
    let mut sum = 0;
    for (len, &i) in indices.iter().enumerate() {
        let len = len as i64;
        if (sum >= target && min <= len && len <= max) || len >= max {
            return false;
        }
        sum += groups[i].value;
    }
    let len = indices.len() as i64;
    sum >= target && min <= len && len <= max
}

/// The best recorded path found so far: its weight, value and groups (indices, ascending).
struct Best {
    weight: i64,
    value: i64,
    indices: Vec<usize>,
}

/// The reference's depth-first search, in its order, skipping each branch whose best
/// possible path (the heaviest and the most valuable groups left, counted apart) cannot
/// beat the best found so far: a lighter path loses, and so does an equal one found later.
struct Bounded<'g> {
    groups: &'g [Group],
    min: i64,
    max: i64,
    target: i64,
    path: Vec<usize>,
    best: Option<Best>,
    scratch: Vec<i64>,
}

impl Bounded<'_> {
    fn dfs(&mut self, sum: i64, weight: i64, begin: usize) {
        let len = self.path.len() as i64;
        if sum >= self.target && self.min <= len && len <= self.max {
            let better = self
                .best
                .as_ref()
                .is_none_or(|b| (weight, sum) > (b.weight, b.value));
            if better {
                self.best = Some(Best {
                    weight,
                    value: sum,
                    indices: self.path.clone(),
                });
            }
            return;
        }
        if len >= self.max {
            return;
        }
        if let Some(b) = &self.best {
            let (bw, bv) = (b.weight, b.value);
            let room = usize::try_from(self.max - len).unwrap_or(usize::MAX);
            let most_weight = weight.saturating_add(self.most_weight(sum, len, begin, room));
            if most_weight < bw {
                return;
            }
            if most_weight == bw && self.most_value(sum, len, begin, room) <= bv {
                return;
            }
        }
        for i in begin..self.groups.len() {
            self.path.push(i);
            let g = &self.groups[i];
            self.dfs(sum + g.value, weight.wrapping_add(g.weight), i + 1);
            self.path.pop();
        }
    }

    /// At most the weight a recorded path through this node adds, from the groups from
    /// `begin`, at most `room` of them. A path is recorded as soon as its sum reaches the
    /// target at `min` groups or more: past the target, only the groups `min` still asks for
    /// are added; below it, the groups taken before the one that reaches it fit under the
    /// target (bounded by a fractional knapsack), and then one more, or as many as `min`
    /// still asks for.
    fn most_weight(&mut self, sum: i64, len: i64, begin: usize, room: usize) -> i64 {
        let by_count = self.top(begin, room, |g| g.weight);
        let missing = usize::try_from(self.min - len).unwrap_or(0);
        if sum >= self.target {
            return self.top(begin, missing.min(room), |g| g.weight);
        }
        let capacity = self.target - 1 - sum;
        let rest = self.groups.len() - begin;
        let mut by_ratio: Vec<usize> = (begin..self.groups.len()).collect();
        // Heaviest per unit of value first (a zero value is worth its whole weight).
        by_ratio.sort_unstable_by(|&a, &b| {
            let (ga, gb) = (&self.groups[a], &self.groups[b]);
            (i128::from(gb.weight) * i128::from(ga.value.max(0)))
                .cmp(&(i128::from(ga.weight) * i128::from(gb.value.max(0))))
        });
        let mut left = capacity;
        let mut fits = 0i64;
        for &i in by_ratio.iter().take(rest.min(room)) {
            let g = &self.groups[i];
            if g.value <= left {
                left -= g.value;
                fits = fits.saturating_add(g.weight);
            } else {
                // The fraction that fits, rounded up.
                fits = fits.saturating_add(
                    ((i128::from(g.weight) * i128::from(left) + i128::from(g.value) - 1)
                        / i128::from(g.value)) as i64,
                );
                break;
            }
        }
        let last = self.top(begin, missing.max(1).min(room), |g| g.weight);
        by_count.min(fits.saturating_add(last))
    }

    /// At most the value of a recorded path through this node: it stops at the first group
    /// that reaches the target (below it before that one), or at the `min`-th group after.
    fn most_value(&mut self, sum: i64, len: i64, begin: usize, room: usize) -> i64 {
        let missing = usize::try_from(self.min - len).unwrap_or(0);
        let by_count = sum.saturating_add(self.top(begin, room, |g| g.value));
        let by_target = if sum >= self.target {
            sum.saturating_add(self.top(begin, missing.min(room), |g| g.value))
        } else {
            (self.target - 1).saturating_add(self.top(begin, missing.max(1).min(room), |g| g.value))
        };
        by_count.min(by_target)
    }

    /// The sum of the `n` largest `field`s of the groups from `begin`.
    fn top(&mut self, begin: usize, n: usize, field: impl Fn(&Group) -> i64) -> i64 {
        self.scratch.clear();
        self.scratch.extend(self.groups[begin..].iter().map(field));
        if n < self.scratch.len() {
            self.scratch.select_nth_unstable_by(n, |a, b| b.cmp(a));
            self.scratch.truncate(n);
        }
        self.scratch.iter().fold(0i64, |s, v| s.saturating_add(*v))
    }
}

/// Every path, as the reference enumerates them.
fn exhaustive(groups: &[Group], min: i64, max: i64, target: i64) -> Vec<Group> {
    let mut search = Search {
        groups,
        min,
        max,
        target,
        path: Vec::new(),
        paths: Vec::new(),
    };
    search.dfs(0, 0);
    let mut paths = search.paths;
    if paths.is_empty() {
        return Vec::new();
    }
    if paths.len() == 1 {
        return paths.swap_remove(0).groups;
    }
    paths.sort_by(|a, b| {
        b.weight
            .cmp(&a.weight)
            .then_with(|| b.value.cmp(&a.value))
            .then_with(|| a.id.cmp(&b.id))
    });
    let mut best = 0;
    for i in 1..paths.len() {
        if paths[best].has_prefix(&paths[i]) {
            best = i;
        }
    }
    paths.swap_remove(best).groups
}

struct Search<'g> {
    groups: &'g [Group],
    min: i64,
    max: i64,
    target: i64,
    path: Vec<usize>,
    paths: Vec<Path>,
}

impl Search<'_> {
    fn dfs(&mut self, sum: i64, begin: usize) {
        let len = self.path.len() as i64;
        if sum >= self.target && self.min <= len && len <= self.max {
            self.record();
            return;
        }
        if len >= self.max {
            return;
        }
        for i in begin..self.groups.len() {
            self.path.push(i);
            self.dfs(sum + self.groups[i].value, i + 1);
            // When every group is needed for the minimum, only the full path is explored.
            if self.groups.len() as i64 == self.min {
                break;
            }
            self.path.pop();
        }
    }

    fn record(&mut self) {
        let mut groups: Vec<Group> = self.path.iter().map(|&i| self.groups[i].clone()).collect();
        let weight = groups
            .iter()
            .map(|g| g.weight)
            .fold(0i64, i64::wrapping_add);
        let value = groups.iter().map(|g| g.value).sum();
        groups.sort_by(|a, b| b.weight.cmp(&a.weight).then_with(|| a.name.cmp(&b.name)));
        let id = self.paths.len() + 1;
        self.paths.push(Path {
            id,
            groups,
            weight,
            value,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn g(name: &str, value: i64, weight: i64) -> Group {
        Group {
            name: name.into(),
            value,
            weight,
        }
    }

    fn run(groups: Vec<Group>, min: i64, max: i64, target: i64) -> Vec<String> {
        select_groups(groups, min, max, target)
            .into_iter()
            .map(|g| g.name)
            .collect()
    }

    // karmada v1.18.2 spreadconstraint/select_groups_test.go: TestSelectGroups.
    #[test]
    fn upstream_cases() {
        assert!(run(vec![], 2, 3, 1).is_empty(), "empty groups");
        assert!(
            run(vec![g("R1", 1, 80)], 2, 3, 1).is_empty(),
            "no enough groups"
        );
        assert!(
            run(vec![g("R1", 1, 80), g("R2", 2, 30)], 2, 3, 4).is_empty(),
            "no enough value"
        );
        assert_eq!(
            run(vec![g("R1", 1, 80)], 1, 3, 1),
            ["R1"],
            "select one group"
        );
        assert_eq!(
            run(
                vec![
                    g("R1", 1, 80),
                    g("R3", 1, 80),
                    g("R2", 1, 60),
                    g("R5", 2, 60),
                    g("R4", 5, 50),
                    g("R6", 3, 50)
                ],
                1,
                3,
                10
            ),
            ["R5", "R4", "R6"],
            "prioritize one path"
        );
        assert_eq!(
            run(
                vec![
                    g("R1", 1, 80),
                    g("R2", 4, 40),
                    g("R3", 1, 30),
                    g("R4", 3, 30),
                    g("R5", 3, 20),
                    g("R6", 5, 10)
                ],
                2,
                6,
                5
            ),
            ["R1", "R2"],
            "select groups with less total number"
        );
        assert_eq!(
            run(
                vec![
                    g("R1", 1, 60),
                    g("R2", 1, 50),
                    g("R3", 1, 40),
                    g("R4", 3, 30),
                    g("R5", 3, 20),
                    g("R6", 3, 10)
                ],
                1,
                3,
                6
            ),
            ["R1", "R4", "R5"],
            "select groups with the highest score"
        );
        assert_eq!(
            run(
                vec![
                    g("R1", 1, 60),
                    g("R2", 2, 50),
                    g("R3", 3, 40),
                    g("R4", 4, 30)
                ],
                1,
                2,
                5
            ),
            ["R1", "R4"],
            "select groups that are chosen earlier"
        );
        assert_eq!(
            run(
                vec![
                    g("R4", 1, 60),
                    g("R3", 3, 50),
                    g("R1", 3, 40),
                    g("R2", 4, 30)
                ],
                1,
                2,
                5
            ),
            ["R3", "R1"],
            "select groups with greater value"
        );
    }

    // worked example: R2(1,8000) R1(2,8000) R3(3,7000), exactly 2, target 3.
    #[test]
    fn worked_example() {
        let got = run(
            vec![g("R1", 2, 8000), g("R2", 1, 8000), g("R3", 3, 7000)],
            2,
            2,
            3,
        );
        assert_eq!(got, ["R1", "R2"]);
    }

    #[test]
    fn take_everything_when_min_is_all() {
        assert_eq!(run(vec![g("a", 1, 1), g("b", 1, 5)], 2, 2, 0), ["b", "a"]);
        // Target reached with the empty path when min is 0.
        assert!(run(vec![g("a", 1, 1)], 0, 0, 0).is_empty());
    }

    proptest::proptest! {
        /// The table and the bounded search pick what the reference's full enumeration picks: equal
        /// weights and values (ties by discovery order), prefixes of the winner, every
        /// `[min, max]` and target.
        #[test]
        fn the_bounded_search_picks_what_the_full_one_picks(
            raw in proptest::collection::vec((1i64..4, 0i64..4), 0..9),
            min in 0i64..4,
            span in 0i64..5,
            target in 0i64..12,
        ) {
            let groups: Vec<Group> = raw
                .iter()
                .enumerate()
                .map(|(i, &(value, weight))| g(&format!("R{i}"), value, weight * 10))
                .collect();
            let mut sorted = groups.clone();
            sorted.sort_by(|a, b| {
                a.value
                    .cmp(&b.value)
                    .then_with(|| b.weight.cmp(&a.weight))
                    .then_with(|| a.name.cmp(&b.name))
            });
            let want = exhaustive(&sorted, min, min + span, target);
            proptest::prop_assert_eq!(select_groups(groups, min, min + span, target), want);
            // The table and the bounded search find the same best path.
            if sorted.len() as i64 != min {
                let table = tabulated(&sorted, min, min + span, target).expect("a small table");
                let search = searched(&sorted, min, min + span, target);
                proptest::prop_assert_eq!(
                    table.map(|b| (b.weight, b.value, b.indices)),
                    search.map(|b| (b.weight, b.value, b.indices))
                );
            }
        }
    }

    /// Sixty regions of equal score: the reference's enumeration (about 10^17 paths of up to
    /// 30 regions) never ends; the bounded search answers at once.
    #[test]
    fn sixty_equal_regions_are_selected_at_once() {
        let groups: Vec<Group> = (0..60).map(|i| g(&format!("R{i:02}"), 1, 50)).collect();
        let got = run(groups, 1, 30, 30);
        assert_eq!(got.len(), 30);
        assert_eq!(got[0], "R00");
        assert_eq!(got[29], "R29");
    }

    /// Eighty regions of mixed sizes and scores, many combinations tying: the table answers
    /// at once; on forty of them it agrees with the bounded search.
    #[test]
    fn eighty_mixed_regions_are_selected_at_once() {
        let mixed = |n: usize| -> Vec<Group> {
            let mut groups: Vec<Group> = (0..n)
                .map(|i| {
                    g(
                        &format!("R{i:02}"),
                        1 + (i * 7 % 5) as i64,
                        (i * 37 % 10 * 10) as i64,
                    )
                })
                .collect();
            groups.sort_by(|a, b| {
                a.value
                    .cmp(&b.value)
                    .then_with(|| b.weight.cmp(&a.weight))
                    .then_with(|| a.name.cmp(&b.name))
            });
            groups
        };
        let forty = mixed(40);
        let table = tabulated(&forty, 3, 10, 20).expect("a small table");
        let search = searched(&forty, 3, 10, 20);
        assert_eq!(
            table.map(|b| (b.weight, b.value, b.indices)),
            search.map(|b| (b.weight, b.value, b.indices))
        );
        let got = select_groups(mixed(80), 3, 10, 20);
        assert!((3..=10).contains(&got.len()), "{got:?}");
        assert!(got.iter().map(|g| g.value).sum::<i64>() >= 20, "{got:?}");
    }
}
