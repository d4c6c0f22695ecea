//! Exhaustive group selection: every combination of groups whose size is
//! within `[min, max]` and whose summed value reaches the target, ranked by weight, value and
//! discovery order, preferring a shorter prefix of the winner.

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
    let mut search = Search {
        groups: &groups,
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
}
