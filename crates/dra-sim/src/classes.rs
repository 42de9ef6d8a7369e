//! Node classes: nodes that every filter and score besides DRA and node affinity sees alike.
//!
//! Two nodes share a class when everything `NodeUnschedulable`, `TaintToleration`,
//! `NodeResourcesFit` and `NodeResourcesBalancedAllocation` read of them is equal: taints,
//! `spec.unschedulable`, allocatable, the requests of the pods on them (as the filter counts
//! them and with the scoring defaults) and their pod count. Those plugins then give every member
//! of a class the same verdict and the same score for any pod, so the scheduler model filters
//! and ranks classes, and looks at single nodes only where node affinity or DRA can tell them
//! apart ([`crate::scheduler`]). Names and labels are deliberately not part of a class: they
//! differ on every node.
//!
//! Classes follow the nodes: placing a pod changes one node's requests, and that node moves to
//! the class of its new state (created on demand; classes that become empty are recycled).
//! Members are kept by rank (position in node-name order), so the smallest name of a class,
//! and the members of several classes in name order (skipping ahead as the device pre-check
//! allows), come without sorting.

use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap};

use dra_alloc::hashing::WordHashMap;

use dra_alloc::NodeId;

use crate::fit::SimNode;
use crate::resources::{NodeAllocatable, Resources};

/// What the filters and scores read of a node and the simulation never changes.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Shape {
    /// `spec.taints`, serialised: k8s-openapi's `Taint` has no `Hash`.
    taints: String,
    unschedulable: bool,
    allocatable: NodeAllocatable,
}

/// Everything the filters and scores besides node affinity read of a node.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct ClassKey {
    shape: u32,
    requested: Resources,
    non_zero_milli_cpu: i64,
    non_zero_memory: i64,
    pods: i64,
}

#[derive(Debug, Default)]
struct NodeClass {
    /// Ranks of the member nodes.
    members: BTreeSet<u32>,
}

/// The partition of the nodes into classes, kept up to date with [`NodeClasses::update`].
#[derive(Debug)]
pub struct NodeClasses {
    shape_of: Vec<u32>,
    class_of: Vec<u32>,
    classes: Vec<NodeClass>,
    /// Key of each class in use (`None`: recycled).
    keys: Vec<Option<ClassKey>>,
    by_key: WordHashMap<ClassKey, u32>,
    recycled: Vec<u32>,
    /// Classes with members.
    live: BTreeSet<u32>,
}

impl NodeClasses {
    /// Classes of `nodes` (indexed by node id); `rank` is each node's position in name order.
    pub fn new(nodes: &[SimNode], rank: &[usize]) -> NodeClasses {
        let mut shapes: WordHashMap<Shape, u32> = WordHashMap::default();
        let shape_of = nodes
            .iter()
            .map(|node| {
                let shape = Shape {
                    taints: serde_json::to_string(&node.taints).unwrap_or_default(),
                    unschedulable: node.unschedulable,
                    allocatable: node.allocatable.clone(),
                };
                let next = shapes.len() as u32;
                *shapes.entry(shape).or_insert(next)
            })
            .collect();
        let mut classes = NodeClasses {
            shape_of,
            class_of: vec![u32::MAX; nodes.len()],
            classes: Vec::new(),
            keys: Vec::new(),
            by_key: WordHashMap::default(),
            recycled: Vec::new(),
            live: BTreeSet::new(),
        };
        for (id, node) in nodes.iter().enumerate() {
            classes.place(id, node, rank[id] as u32);
        }
        classes
    }

    fn key(&self, id: usize, node: &SimNode) -> ClassKey {
        ClassKey {
            shape: self.shape_of[id],
            requested: node.requested.clone(),
            non_zero_milli_cpu: node.non_zero_milli_cpu,
            non_zero_memory: node.non_zero_memory,
            pods: node.pods,
        }
    }

    /// Puts a node without a class into the class of its state.
    fn place(&mut self, id: usize, node: &SimNode, rank: u32) {
        let key = self.key(id, node);
        let class = match self.by_key.get(&key) {
            Some(class) => *class,
            None => {
                let class = match self.recycled.pop() {
                    Some(class) => class,
                    None => {
                        self.classes.push(NodeClass::default());
                        self.keys.push(None);
                        (self.classes.len() - 1) as u32
                    }
                };
                self.keys[class as usize] = Some(key.clone());
                self.by_key.insert(key, class);
                class
            }
        };
        self.classes[class as usize].members.insert(rank);
        self.live.insert(class);
        self.class_of[id] = class;
    }

    /// Moves a node whose requests or pod count changed to the class of its new state.
    pub fn update(&mut self, node: NodeId, state: &SimNode, rank: usize) {
        let id = node.0 as usize;
        let old = self.class_of[id];
        if self.keys[old as usize].as_ref() == Some(&self.key(id, state)) {
            return;
        }
        let members = &mut self.classes[old as usize].members;
        members.remove(&(rank as u32));
        if members.is_empty() {
            self.live.remove(&old);
            if let Some(key) = self.keys[old as usize].take() {
                self.by_key.remove(&key);
            }
            self.recycled.push(old);
        }
        self.place(id, state, rank as u32);
    }

    /// Classes with members, by id.
    pub fn live(&self) -> impl Iterator<Item = u32> + '_ {
        self.live.iter().copied()
    }

    pub fn class_of(&self, node: NodeId) -> u32 {
        self.class_of[node.0 as usize]
    }

    /// Ranks of a class's members, ascending.
    pub fn members(&self, class: u32) -> &BTreeSet<u32> {
        &self.classes[class as usize].members
    }

    /// The rank of the member with the smallest name.
    pub fn first(&self, class: u32) -> Option<u32> {
        self.members(class).first().copied()
    }

    /// The members of `classes` in name order, each with its position in `classes`.
    pub fn stream(&self, classes: &[u32]) -> Members<'_> {
        let sets: Vec<&BTreeSet<u32>> = classes.iter().map(|c| self.members(*c)).collect();
        let heads = sets
            .iter()
            .enumerate()
            .filter_map(|(i, set)| set.first().map(|rank| Reverse((*rank, i))))
            .collect();
        Members { sets, heads }
    }
}

/// The members of several classes in name order ([`NodeClasses::stream`]).
#[derive(Debug)]
pub struct Members<'c> {
    sets: Vec<&'c BTreeSet<u32>>,
    /// The next member of each class not yet passed, smallest first.
    heads: BinaryHeap<Reverse<(u32, usize)>>,
}

impl Members<'_> {
    /// The first member whose rank is at least `from`, with the position of its class; the
    /// stream then continues from there.
    pub fn seek(&mut self, from: u32) -> Option<(u32, usize)> {
        while let Some(&Reverse((rank, i))) = self.heads.peek() {
            if rank >= from {
                return Some((rank, i));
            }
            self.heads.pop();
            if let Some(next) = self.sets[i].range(from..).next() {
                self.heads.push(Reverse((*next, i)));
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fit::PodFacts;
    use dra_alloc::node_selector::NodeFacts;

    fn node(name: &str, cpu: &str) -> SimNode<'static> {
        let loaded = dra_api::load_str(
            "n.yaml",
            &format!(
                "apiVersion: v1\nkind: Node\nmetadata: {{name: {name}}}\nstatus: {{allocatable: {{cpu: '{cpu}', memory: 8Gi, pods: '10'}}}}\n"
            ),
        );
        let object = &loaded.cluster.nodes[0].object;
        SimNode::new(
            std::borrow::Cow::Owned(NodeFacts {
                name: name.to_string(),
                labels: Default::default(),
            }),
            Some(object),
        )
    }

    #[test]
    fn nodes_move_between_classes_as_pods_land() {
        // Ids 0..3; names in rank order c, a, b, d -> ranks 2, 0, 1, 3.
        let mut nodes = vec![
            node("c", "4"),
            node("a", "4"),
            node("b", "4"),
            node("d", "8"),
        ];
        let rank = [2, 0, 1, 3];
        let mut classes = NodeClasses::new(&nodes, &rank);
        let live: Vec<u32> = classes.live().collect();
        assert_eq!(live.len(), 2);
        let small = classes.class_of(NodeId(0));
        assert_eq!(classes.class_of(NodeId(1)), small);
        assert_ne!(classes.class_of(NodeId(3)), small);
        assert_eq!(classes.first(small), Some(0));

        let pod = PodFacts::default();
        nodes[1].add_pod(&pod);
        classes.update(NodeId(1), &nodes[1], rank[1]);
        let busy = classes.class_of(NodeId(1));
        assert_ne!(busy, small);
        assert_eq!(classes.first(small), Some(1));
        assert_eq!(classes.live().count(), 3);

        // The same change on another node joins the existing class.
        nodes[0].add_pod(&pod);
        classes.update(NodeId(0), &nodes[0], rank[0]);
        assert_eq!(classes.class_of(NodeId(0)), busy);
        let mut stream = classes.stream(&[busy, small]);
        assert_eq!(stream.seek(0), Some((0, 0)));
        assert_eq!(stream.seek(1), Some((1, 1)));
        assert_eq!(stream.seek(2), Some((2, 0)));
        assert_eq!(stream.seek(3), None);
        let mut stream = classes.stream(&[busy, small]);
        assert_eq!(stream.seek(2), Some((2, 0)));

        // A class that empties is recycled.
        nodes[3].add_pod(&pod);
        classes.update(NodeId(3), &nodes[3], rank[3]);
        assert_eq!(classes.live().count(), 3);
        assert_eq!(classes.classes.len(), 3);
    }
}
