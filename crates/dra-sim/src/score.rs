//! Node scores of kube-scheduler's default profile, as far as they can differ between nodes in
//! a simulation.
//!
//! | plugin | weight | raw score | normalised |
//! |---|---|---|---|
//! | `TaintToleration` | 3 | intolerable PreferNoSchedule taints | reversed, over the feasible nodes |
//! | `NodeAffinity` | 2 | weights of matching preferred terms (skipped without terms) | over the feasible nodes |
//! | `NodeResourcesFit` | 1 | `LeastAllocated` (default) or `MostAllocated` on cpu and memory, weight 1 each, with the scoring defaults for containers without requests | no |
//! | `NodeResourcesBalancedAllocation` | 1 | `(1 - std) * 100` of the cpu and memory fractions (skipped for best-effort pods) | no |
//! | `DynamicResources` | 1 | Σ `8 - index` of the allocated `firstAvailable` subrequests | over the feasible nodes |
//!
//! `PodTopologySpread`, `InterPodAffinity` and `ImageLocality` are not modelled (they score 0 or
//! skip for the pods and nodes a DRA simulation describes).

use serde::Serialize;

use crate::fit::{PodFacts, SimNode};

/// `framework.MaxNodeScore`.
pub const MAX_NODE_SCORE: i64 = 100;
/// `resourceapi.FirstAvailableDeviceRequestMaxSize`.
pub const FIRST_AVAILABLE_MAX_SIZE: i64 = 8;

/// Plugin weights of the default profile.
pub const WEIGHT_TAINT_TOLERATION: i64 = 3;
pub const WEIGHT_NODE_AFFINITY: i64 = 2;
pub const WEIGHT_NODE_RESOURCES_FIT: i64 = 1;
pub const WEIGHT_BALANCED_ALLOCATION: i64 = 1;
pub const WEIGHT_DYNAMIC_RESOURCES: i64 = 1;

/// `NodeResourcesFit` scoring strategy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FitStrategy {
    LeastAllocated,
    MostAllocated,
}

fn least_requested(requested: i64, capacity: i64) -> i64 {
    if capacity == 0 || requested > capacity {
        return 0;
    }
    scaled(capacity - requested, capacity)
}

fn most_requested(requested: i64, capacity: i64) -> i64 {
    if capacity == 0 {
        return 0;
    }
    scaled(requested.min(capacity), capacity)
}

/// `part * MAX_NODE_SCORE / whole` on the exact product, truncated: in i64 when the product
/// fits (always but for nodes without allocatable, whose capacity is i64::MAX), else in i128,
/// whose division is a library call that was a visible part of scoring nodes.
fn scaled(part: i64, whole: i64) -> i64 {
    match part.checked_mul(MAX_NODE_SCORE) {
        Some(product) => product / whole,
        None => ((i128::from(part) * i128::from(MAX_NODE_SCORE)) / i128::from(whole)) as i64,
    }
}

/// `NodeResourcesFit` score on cpu and memory (weights 1 and 1).
pub fn resource_fit_score(strategy: FitStrategy, pod: &PodFacts, node: &SimNode) -> i64 {
    let pairs = [
        (
            node.allocatable.resources.milli_cpu,
            node.non_zero_milli_cpu
                .saturating_add(pod.non_zero_milli_cpu),
        ),
        (
            node.allocatable.resources.memory,
            node.non_zero_memory.saturating_add(pod.non_zero_memory),
        ),
    ];
    let mut score = 0i64;
    let mut weights = 0i64;
    for (capacity, requested) in pairs {
        if capacity == 0 {
            continue;
        }
        score += match strategy {
            FitStrategy::LeastAllocated => least_requested(requested, capacity),
            FitStrategy::MostAllocated => most_requested(requested, capacity),
        };
        weights += 1;
    }
    if weights == 0 { 0 } else { score / weights }
}

/// `NodeResourcesBalancedAllocation` score; `None` for best-effort pods (the plugin skips).
pub fn balanced_allocation_score(pod: &PodFacts, node: &SimNode) -> Option<i64> {
    if pod.requests.milli_cpu == 0 && pod.requests.memory == 0 {
        return None;
    }
    let pairs = [
        (
            node.allocatable.resources.milli_cpu,
            node.requested
                .milli_cpu
                .saturating_add(pod.requests.milli_cpu),
        ),
        (
            node.allocatable.resources.memory,
            node.requested.memory.saturating_add(pod.requests.memory),
        ),
    ];
    let fractions: Vec<f64> = pairs
        .iter()
        .filter(|(capacity, _)| *capacity != 0)
        .map(|(capacity, requested)| (*requested as f64 / *capacity as f64).min(1.0))
        .collect();
    let std = match fractions.len() {
        2 => ((fractions[0] - fractions[1]) / 2.0).abs(),
        _ => 0.0,
    };
    Some(((1.0 - std) * MAX_NODE_SCORE as f64) as i64)
}

/// `helper.DefaultNormalizeScore(MaxNodeScore, reverse, scores)`.
pub fn default_normalize(scores: &mut [i64], reverse: bool) {
    let max = scores.iter().copied().max().unwrap_or(0).max(0);
    if max == 0 {
        if reverse {
            scores.iter_mut().for_each(|s| *s = MAX_NODE_SCORE);
        }
        return;
    }
    for score in scores.iter_mut() {
        let scaled = MAX_NODE_SCORE * *score / max;
        *score = if reverse {
            MAX_NODE_SCORE - scaled
        } else {
            scaled
        };
    }
}

/// The weighted scores of one node, per plugin (after normalisation).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeScore {
    pub node: String,
    pub total: i64,
    pub taint_toleration: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_affinity: Option<i64>,
    pub node_resources_fit: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub balanced_allocation: Option<i64>,
    pub dynamic_resources: i64,
}

/// Raw (unnormalised) scores of one feasible node.
#[derive(Debug, Clone, Default)]
pub struct RawScore {
    pub node: String,
    pub taints: i64,
    pub affinity: Option<i64>,
    pub fit: i64,
    pub balanced: Option<i64>,
    pub dra: i64,
}

/// Normalises and weighs the raw scores of all feasible nodes, in the given order.
pub fn combine(raw: &[RawScore]) -> Vec<NodeScore> {
    let mut taints: Vec<i64> = raw.iter().map(|r| r.taints).collect();
    default_normalize(&mut taints, true);
    let affinity_scored = raw.iter().any(|r| r.affinity.is_some());
    let mut affinity: Vec<i64> = raw.iter().map(|r| r.affinity.unwrap_or(0)).collect();
    default_normalize(&mut affinity, false);
    let mut dra: Vec<i64> = raw.iter().map(|r| r.dra).collect();
    default_normalize(&mut dra, false);
    raw.iter()
        .enumerate()
        .map(|(i, r)| {
            let normalized = Normalized {
                taints: taints[i],
                affinity: affinity_scored.then_some(affinity[i]),
                dra: dra[i],
            };
            weigh(r.node.clone(), r, normalized)
        })
        .collect()
}

/// [`combine`] of a single feasible node (most pods' winner is scored alone), without lists.
pub fn combine_one(mut raw: RawScore) -> NodeScore {
    let mut taints = [raw.taints];
    default_normalize(&mut taints, true);
    let mut affinity = [raw.affinity.unwrap_or(0)];
    default_normalize(&mut affinity, false);
    let mut dra = [raw.dra];
    default_normalize(&mut dra, false);
    let normalized = Normalized {
        taints: taints[0],
        affinity: raw.affinity.is_some().then_some(affinity[0]),
        dra: dra[0],
    };
    weigh(std::mem::take(&mut raw.node), &raw, normalized)
}

/// A node's normalised scores (node affinity only where some node has one).
struct Normalized {
    taints: i64,
    affinity: Option<i64>,
    dra: i64,
}

fn weigh(node: String, raw: &RawScore, normalized: Normalized) -> NodeScore {
    let mut score = NodeScore {
        node,
        total: 0,
        taint_toleration: WEIGHT_TAINT_TOLERATION * normalized.taints,
        node_affinity: normalized.affinity.map(|a| WEIGHT_NODE_AFFINITY * a),
        node_resources_fit: WEIGHT_NODE_RESOURCES_FIT * raw.fit,
        balanced_allocation: raw.balanced.map(|b| WEIGHT_BALANCED_ALLOCATION * b),
        dynamic_resources: WEIGHT_DYNAMIC_RESOURCES * normalized.dra,
    };
    score.total = score.taint_toleration
        + score.node_affinity.unwrap_or(0)
        + score.node_resources_fit
        + score.balanced_allocation.unwrap_or(0)
        + score.dynamic_resources;
    score
}

/// Index of the winner: the highest total, ties broken by node name (kube-scheduler's
/// `selectHost` picks uniformly at random among the nodes with the highest score; a simulation
/// must be reproducible).
pub fn select_host(scores: &[NodeScore]) -> Option<usize> {
    (0..scores.len()).min_by(|&a, &b| {
        scores[b]
            .total
            .cmp(&scores[a].total)
            .then_with(|| scores[a].node.as_bytes().cmp(scores[b].node.as_bytes()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scaling_is_exact_on_both_sides_of_i64_overflow() {
        let limit = i64::MAX / 100;
        let edges = [0, 1, 99, 100, 101, limit, limit + 1, i64::MAX / 2, i64::MAX];
        for part in edges {
            for whole in [1, 3, 100, 1 << 40, i64::MAX / 100 + 7, i64::MAX] {
                let exact = (i128::from(part) * 100 / i128::from(whole)) as i64;
                assert_eq!(scaled(part, whole), exact, "{part} / {whole}");
            }
        }
    }

    /// A node scored alone gets what it gets in a list of one, whatever its raw scores.
    #[test]
    fn one_node_scores_as_a_list_of_one() {
        for taints in [0, 3] {
            for affinity in [None, Some(0), Some(4)] {
                for balanced in [None, Some(37)] {
                    for dra in [0, 9] {
                        let raw = RawScore {
                            node: "node-a".into(),
                            taints,
                            affinity,
                            fit: 61,
                            balanced,
                            dra,
                        };
                        let listed = combine(std::slice::from_ref(&raw)).remove(0);
                        assert_eq!(combine_one(raw.clone()), listed, "{raw:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn strategies() {
        assert_eq!(least_requested(25, 100), 75);
        assert_eq!(least_requested(125, 100), 0);
        assert_eq!(most_requested(25, 100), 25);
        assert_eq!(most_requested(125, 100), 100);
        assert_eq!(least_requested(1, i64::MAX), 99);
    }

    #[test]
    fn normalisation() {
        let mut scores = vec![0, 2, 4];
        default_normalize(&mut scores, true);
        assert_eq!(scores, vec![100, 50, 0]);
        let mut zeros = vec![0, 0];
        default_normalize(&mut zeros, true);
        assert_eq!(zeros, vec![100, 100]);
        let mut plain = vec![0, 0];
        default_normalize(&mut plain, false);
        assert_eq!(plain, vec![0, 0]);
        let mut dra = vec![7, 8];
        default_normalize(&mut dra, false);
        assert_eq!(dra, vec![87, 100]);
    }

    #[test]
    fn ties_go_to_the_smaller_name() {
        let raw = vec![
            RawScore {
                node: "b".into(),
                fit: 50,
                ..RawScore::default()
            },
            RawScore {
                node: "a".into(),
                fit: 50,
                ..RawScore::default()
            },
            RawScore {
                node: "c".into(),
                fit: 40,
                ..RawScore::default()
            },
        ];
        let scores = combine(&raw);
        assert_eq!(scores[0].total, 350);
        assert_eq!(select_host(&scores), Some(1));
    }
}
