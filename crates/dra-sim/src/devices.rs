//! The devices side of the simulation: the allocator's [`AllocatedState`], which claims hold
//! which device (for explanations), and a cheap per-node pre-check that proves a node cannot
//! satisfy a pod's claims without running the allocator.
//!
//! The pre-check keeps, per (selector set, tolerations) and node, the devices of the node's
//! usable pools that match the selectors and are not tainted against the tolerations, and how
//! many of them are free. A request for `n` devices cannot be satisfied on a node with fewer
//! than `n` free candidates, so the allocator need not run there: it would return "cannot
//! allocate all claims" after examining the same devices. The check never hides an allocator
//! error: a node where a selector fails on some device, or whose pools cannot be gathered, is
//! never pruned; shared (consumable-capacity) devices count as unlimited. Free counts are kept
//! up to date as claims are allocated and released, so a check costs a few lookups.

use std::sync::Arc;

use dra_alloc::hashing::WordHashMap;
use dra_alloc::{
    AllocatedState, AllocationMode, DeviceKey, Index, Match, NodeId, PreparedClaim, RequestBody,
    RequestSpec, ResolvedAllocation, SelSetId, StateError, tolerates_taint,
};
use k8s_openapi::api::resource::v1::{AllocationResult, DeviceTaint, DeviceToleration};

/// `(namespace, name)` of a claim.
pub type ClaimKey = (String, String);

/// Whether a NoSchedule or NoExecute taint of the device is not tolerated (the allocator's
/// `taintPreventsAllocation`).
pub fn untolerated_taint<'t>(
    taints: &'t [DeviceTaint],
    tolerations: &[DeviceToleration],
) -> Option<&'t DeviceTaint> {
    taints.iter().find(|taint| {
        matches!(taint.effect.as_str(), "NoSchedule" | "NoExecute")
            && !tolerations.iter().any(|t| tolerates_taint(t, taint))
    })
}

/// The free candidates of one (selector set, tolerations) on one node.
#[derive(Debug, Clone)]
struct Table {
    family: FamilyId,
    node: NodeId,
    keys: Vec<DeviceKey>,
    free: u32,
    /// A device may be shared (consumable capacity): the count is no bound.
    shared: bool,
    /// A selector fails on some device: the allocator may report that error here.
    failing: bool,
}

/// Identity of a family of candidate tables: the selector set's content id and the tolerations
/// (serialised).
type TableKey = (u32, String);

/// Index of a registered table family.
type FamilyId = usize;

#[derive(Debug)]
struct TableFamily {
    set: SelSetId,
    tolerations: Vec<DeviceToleration>,
    /// Per node: `None` = not built yet, `Some(None)` = pools failed, `Some(Some(t))`.
    per_node: Vec<Option<Option<u32>>>,
    /// Nodes where the allocator could meet a selector or pool error, once computed.
    risky: Option<Vec<NodeId>>,
    /// The free counts of all nodes by name rank, once asked for ([`DeviceState::next_possible`]).
    bounds: Option<Bounds>,
}

impl Table {
    /// What the pre-check allows on the node: the free count, unbounded where the count does
    /// not decide.
    fn bound(&self) -> u32 {
        if self.shared || self.failing {
            u32::MAX
        } else {
            self.free
        }
    }
}

/// What [`DeviceState::next_possible`] keeps per family.
#[derive(Debug)]
struct Bounds {
    /// [`Table::bound`] of every node, by rank.
    tree: MaxTree,
    /// Nodes whose bound may have changed since the tree was last brought up to date.
    stale: Vec<NodeId>,
}

/// A maximum segment tree over node ranks: the first rank from a position whose value reaches
/// a bound, in logarithmic time.
#[derive(Debug)]
struct MaxTree {
    leaves: usize,
    values: Vec<u32>,
}

impl MaxTree {
    fn new(values: &[u32]) -> MaxTree {
        let leaves = values.len().next_power_of_two().max(1);
        let mut tree = vec![0; 2 * leaves];
        tree[leaves..leaves + values.len()].copy_from_slice(values);
        for i in (1..leaves).rev() {
            tree[i] = tree[2 * i].max(tree[2 * i + 1]);
        }
        MaxTree {
            leaves,
            values: tree,
        }
    }

    fn set(&mut self, position: usize, value: u32) {
        let mut i = position + self.leaves;
        self.values[i] = value;
        while i > 1 {
            i /= 2;
            self.values[i] = self.values[2 * i].max(self.values[2 * i + 1]);
        }
    }

    /// The first position at or after `from` whose value is at least `bound`: up from the
    /// leaf at `from` to the first subtree to its right whose maximum reaches the bound, then
    /// down to that subtree's leftmost such leaf. Iterative: the simulation asks this for
    /// every pod, and a recursive search that tried each left subtree first cost a tenth of a
    /// scored simulation's instructions.
    fn first_at_least(&self, from: usize, bound: u32) -> Option<usize> {
        if from >= self.leaves {
            return None;
        }
        let mut i = from + self.leaves;
        while self.values[i] < bound {
            // The next subtree to the right: climb while `i` is a right child (the root's
            // right edge has none), then step to the sibling.
            while i % 2 == 1 {
                if i == 1 {
                    return None;
                }
                i /= 2;
            }
            i += 1;
        }
        while i < self.leaves {
            i *= 2;
            if self.values[i] < bound {
                i += 1;
            }
        }
        Some(i - self.leaves)
    }
}

/// One request's need on the pre-check: any alternative suffices (several for
/// `firstAvailable`).
#[derive(Debug, Clone)]
struct Need {
    alternatives: Vec<(FamilyId, u32)>,
}

/// A need of a requirement with a single alternative: nodes with fewer free candidates of the
/// family than `count` fail the pre-check (unless the allocator could meet an error there).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Anchor {
    family: FamilyId,
    count: u32,
}

/// What the pre-check knows about a set of claims allocated together.
#[derive(Debug, Clone, Default)]
pub struct Requirement {
    needs: Vec<Need>,
    /// Every (selector set, tolerations) of every request and subrequest, including those the
    /// counts cannot judge (admin access, All mode): a selector error on any of them forbids
    /// skipping the node.
    watched: Vec<FamilyId>,
}

impl Requirement {
    /// The first need with a single alternative, if any.
    pub fn anchor(&self) -> Option<Anchor> {
        self.needs
            .iter()
            .find_map(|need| match need.alternatives.as_slice() {
                [(family, count)] => Some(Anchor {
                    family: *family,
                    count: *count,
                }),
                _ => None,
            })
    }
}

/// The claims whose allocation names one device. Almost every device has none or one, so one
/// holder needs no allocation of its own, and the claim's key is shared by all its devices.
#[derive(Debug, Clone, Default)]
enum Holders {
    #[default]
    None,
    One(Arc<ClaimKey>),
    Many(Vec<Arc<ClaimKey>>),
}

impl Holders {
    fn as_slice(&self) -> &[Arc<ClaimKey>] {
        match self {
            Holders::None => &[],
            Holders::One(claim) => std::slice::from_ref(claim),
            Holders::Many(claims) => claims,
        }
    }

    fn add(&mut self, claim: &Arc<ClaimKey>) {
        *self = match std::mem::take(self) {
            Holders::None => Holders::One(Arc::clone(claim)),
            Holders::One(first) => Holders::Many(vec![first, Arc::clone(claim)]),
            Holders::Many(mut claims) => {
                claims.push(Arc::clone(claim));
                Holders::Many(claims)
            }
        };
    }

    /// Removes the first entry for `claim`, as a list would.
    fn remove(&mut self, claim: &ClaimKey) {
        *self = match std::mem::take(self) {
            Holders::One(first) if *first == *claim => Holders::None,
            Holders::Many(mut claims) => {
                if let Some(pos) = claims.iter().position(|c| **c == *claim) {
                    claims.remove(pos);
                }
                match claims.len() {
                    0 => Holders::None,
                    1 => Holders::One(claims.pop().expect("one holder")),
                    _ => Holders::Many(claims),
                }
            }
            unchanged => unchanged,
        };
    }
}

/// Allocated devices, their holders and the pre-check tables.
#[derive(Debug)]
pub struct DeviceState {
    pub state: AllocatedState,
    /// Per device key (dense, by `DeviceKey.0`): the claims that hold the device.
    holders: Vec<Holders>,
    families: Vec<TableFamily>,
    family_ids: WordHashMap<TableKey, FamilyId>,
    tables: Vec<Table>,
    /// Per device key (dense, by `DeviceKey.0`): the tables that count the device.
    tables_of_key: Vec<Vec<u32>>,
    num_nodes: usize,
    /// Each node's position in name order ([`DeviceState::set_ranks`]).
    rank: Vec<u32>,
    /// Threads that may build a family's tables for every node at once, and whether they
    /// start at once ([`DeviceState::set_threads`]).
    threads: (usize, bool),
}

impl DeviceState {
    pub fn new(index: &Index) -> DeviceState {
        DeviceState {
            state: AllocatedState::new(index),
            holders: vec![Holders::None; index.num_device_keys()],
            families: Vec::new(),
            family_ids: WordHashMap::default(),
            tables: Vec::new(),
            tables_of_key: vec![Vec::new(); index.num_device_keys()],
            num_nodes: index.node_ids().count(),
            rank: Vec::new(),
            threads: (1, false),
        }
    }

    /// Lets a family's tables for every node ([`DeviceState::risky_nodes`],
    /// [`DeviceState::next_possible`]) be built on up to `threads` threads, where that pays
    /// (`crate::parallel::map_in_order`; `at_once` as [`crate::SimOptions::threads_at_once`]).
    /// The tables are the same.
    pub fn set_threads(&mut self, threads: usize, at_once: bool) {
        self.threads = (threads.max(1), at_once);
    }

    /// Adds the allocation of `claim` (`holder`: the key the device holders share) or, without
    /// a holder, removes it.
    fn apply(
        &mut self,
        index: &Index,
        claim: &ClaimKey,
        holder: Option<&Arc<ClaimKey>>,
        allocation: &AllocationResult,
    ) -> Result<(), StateError> {
        let add = holder.is_some();
        // Each device is looked up by its names once, for the state and the tables alike.
        let resolved = ResolvedAllocation::new(index, allocation);
        // The exclusively allocated devices and whether each was taken before.
        let before: Vec<(DeviceKey, bool)> = resolved
            .results()
            .filter(|(r, _)| r.admin_access != Some(true) && r.share_id.is_none())
            .filter_map(|(_, key)| key)
            .map(|key| (key, self.state.is_exclusively_allocated(key)))
            .collect();
        if add {
            self.state.add_resolved(index, &resolved)?;
        } else {
            self.state.remove_resolved(index, &resolved)?;
        }
        self.note_exclusive_changes(before);
        let held = resolved
            .results()
            .filter(|(r, _)| r.admin_access != Some(true))
            .filter_map(|(_, key)| key);
        for key in held {
            if let Some(holders) = self.holders.get_mut(key.0 as usize) {
                match holder {
                    Some(holder) => holders.add(holder),
                    None => holders.remove(claim),
                }
            }
        }
        Ok(())
    }

    /// Brings the pre-check tables up to date for the devices whose exclusive allocation may
    /// have changed (`before`: each with whether it was allocated before the change).
    fn note_exclusive_changes(&mut self, before: Vec<(DeviceKey, bool)>) {
        for (key, was) in before {
            let now = self.state.is_exclusively_allocated(key);
            if was == now {
                continue;
            }
            for &table in self
                .tables_of_key
                .get(key.0 as usize)
                .map(Vec::as_slice)
                .unwrap_or_default()
            {
                let t = &mut self.tables[table as usize];
                if now {
                    t.free = t.free.saturating_sub(1);
                } else {
                    t.free += 1;
                }
                // Bounds are brought up to date when next asked for; a family nobody asks
                // about any more stops costing anything.
                let (family, node) = (t.family, t.node);
                let f = &mut self.families[family];
                if let Some(bounds) = &mut f.bounds {
                    if bounds.stale.len() > self.num_nodes / 8 + 16 {
                        f.bounds = None;
                    } else {
                        bounds.stale.push(node);
                    }
                }
            }
        }
    }

    /// [`DeviceState::add_claim`] for an allocation of whole devices, each allocated exclusively
    /// (no admin access, no shares, no consumed capacity: [`dra_alloc::ClaimPicks::is_exclusive`]),
    /// by their keys: the same changes without the allocation's object.
    pub fn add_exclusive_claim(
        &mut self,
        index: &Index,
        claim: &Arc<ClaimKey>,
        keys: &[DeviceKey],
    ) {
        let before: Vec<(DeviceKey, bool)> = keys
            .iter()
            .map(|&key| (key, self.state.is_exclusively_allocated(key)))
            .collect();
        self.state.add_exclusive(index, keys);
        self.note_exclusive_changes(before);
        for key in keys {
            if let Some(holders) = self.holders.get_mut(key.0 as usize) {
                holders.add(claim);
            }
        }
    }

    /// Records a claim's allocation; the claim's devices share its key.
    pub fn add_claim(
        &mut self,
        index: &Index,
        claim: &Arc<ClaimKey>,
        allocation: &AllocationResult,
    ) -> Result<(), StateError> {
        self.apply(index, claim, Some(claim), allocation)
    }

    /// Forgets a claim's allocation.
    pub fn remove_claim(
        &mut self,
        index: &Index,
        claim: &ClaimKey,
        allocation: &AllocationResult,
    ) -> Result<(), StateError> {
        self.apply(index, claim, None, allocation)
    }

    /// The claims whose allocation names the device (admin-access results excluded).
    pub fn holders(&self, key: DeviceKey) -> impl Iterator<Item = &ClaimKey> + '_ {
        self.holders
            .get(key.0 as usize)
            .map(Holders::as_slice)
            .unwrap_or_default()
            .iter()
            .map(|claim| &**claim)
    }

    /// Devices named by more than one exclusive allocation (conflicting claims in the input).
    pub fn conflicts(&self, index: &Index) -> Vec<(String, Vec<ClaimKey>)> {
        let mut out: Vec<(String, Vec<ClaimKey>)> = self
            .holders
            .iter()
            .enumerate()
            .filter(|(_, claims)| claims.as_slice().len() > 1)
            .map(|(key, claims)| (DeviceKey(key as u32), claims))
            .filter(|(key, _)| self.state.is_exclusively_allocated(*key))
            .map(|(key, claims)| {
                let (d, p, n) = index.key_names(key);
                let mut claims: Vec<ClaimKey> =
                    claims.as_slice().iter().map(|c| (**c).clone()).collect();
                claims.sort();
                (format!("{d}/{p}/{n}"), claims)
            })
            .collect();
        out.sort();
        out
    }

    /// The family of a request spec, registered on first use.
    fn family(&mut self, spec: &RequestSpec) -> Option<FamilyId> {
        let set = spec.selector_set.as_ref()?;
        // By content: sets that differ only in their class's name select alike.
        // Most requests tolerate nothing; their key needs no text (a list's text is never
        // empty).
        let tolerations = if spec.tolerations.is_empty() {
            String::new()
        } else {
            serde_json::to_string(&spec.tolerations).unwrap_or_default()
        };
        let key = (set.set.content_id, tolerations);
        if let Some(id) = self.family_ids.get(&key) {
            return Some(*id);
        }
        let id = self.families.len();
        self.families.push(TableFamily {
            set: set.clone(),
            tolerations: spec.tolerations.clone(),
            per_node: vec![None; self.num_nodes],
            risky: None,
            bounds: None,
        });
        self.family_ids.insert(key, id);
        Some(id)
    }

    /// The pre-check requirements of a set of prepared claims (allocated together).
    pub fn requirements(&mut self, claims: &[&PreparedClaim]) -> Requirement {
        // Counts of exact requests per family; a claim has few families, so a list.
        let mut exact: Vec<(FamilyId, u32)> = Vec::new();
        let mut out = Requirement::default();
        let judged = |spec: &RequestSpec| {
            !spec.admin() && spec.mode == AllocationMode::ExactCount && spec.count > 0
        };
        let count = |spec: &RequestSpec| u32::try_from(spec.count).unwrap_or(u32::MAX);
        for claim in claims {
            for request in &claim.requests {
                match &request.body {
                    RequestBody::Exact(spec) => {
                        let family = self.family(spec);
                        out.watched.extend(family);
                        if let Some(family) = family.filter(|_| judged(spec)) {
                            match exact.iter_mut().find(|(f, _)| *f == family) {
                                Some((_, total)) => *total = total.saturating_add(count(spec)),
                                None => exact.push((family, count(spec))),
                            }
                        }
                    }
                    RequestBody::FirstAvailable(subs) => {
                        let mut alternatives = Some(Vec::new());
                        for sub in subs {
                            let family = self.family(sub);
                            out.watched.extend(family);
                            match (family, alternatives.as_mut()) {
                                (Some(family), Some(list)) if judged(sub) => {
                                    list.push((family, count(sub)))
                                }
                                // A subrequest the check cannot judge makes the request pass.
                                _ => alternatives = None,
                            }
                        }
                        if let Some(alternatives) = alternatives.filter(|a| !a.is_empty()) {
                            out.needs.push(Need { alternatives });
                        }
                    }
                    RequestBody::Unknown => {}
                }
            }
        }
        exact.sort_unstable();
        out.needs
            .extend(exact.into_iter().map(|(family, count)| Need {
                alternatives: vec![(family, count)],
            }));
        out.watched.sort_unstable();
        out.watched.dedup();
        out
    }

    fn table(&mut self, index: &Index, family: FamilyId, node: NodeId) -> Option<&Table> {
        let slot = *self.families.get(family)?.per_node.get(node.0 as usize)?;
        let id = match slot {
            Some(id) => id,
            None => {
                let f = &self.families[family];
                let table = build_table(index, family, &f.set, &f.tolerations, node, &self.state);
                self.add_table(family, node, table)
            }
        };
        id.map(|id| &self.tables[id as usize])
    }

    /// Records a node's table of a family (`None`: the node's pools failed).
    fn add_table(&mut self, family: FamilyId, node: NodeId, table: Option<Table>) -> Option<u32> {
        let id = table.map(|table| {
            let id = self.tables.len() as u32;
            for key in &table.keys {
                if let Some(tables) = self.tables_of_key.get_mut(key.0 as usize) {
                    tables.push(id);
                }
            }
            self.tables.push(table);
            id
        });
        self.families[family].per_node[node.0 as usize] = Some(id);
        id
    }

    /// Builds the family's tables of every node that has none yet, on several threads where
    /// that pays: a node's first table gathers its pools (`Index::node_pools`) and matches its
    /// devices, most of a large simulation's first pod. Building reads the index and the
    /// allocated state only; the tables are recorded in node order, as one by one.
    fn build_all_tables(&mut self, index: &Index, family: FamilyId) {
        let f = &self.families[family];
        let missing: Vec<NodeId> = (0..self.num_nodes as u32)
            .map(NodeId)
            .filter(|node| f.per_node[node.0 as usize].is_none())
            .collect();
        let (threads, at_once) = self.threads;
        let (built, _) = crate::parallel::map_in_order(&missing, threads, at_once, |node| {
            build_table(index, family, &f.set, &f.tolerations, *node, &self.state)
        });
        for (node, table) in missing.into_iter().zip(built) {
            self.add_table(family, node, table);
        }
    }

    /// `false` only when the node provably cannot satisfy the requirements and the allocator
    /// could not meet an error there.
    pub fn check(&mut self, index: &Index, requirement: &Requirement, node: NodeId) -> bool {
        if self.may_fail(index, requirement, node) {
            return true;
        }
        requirement.needs.iter().all(|need| {
            need.alternatives
                .iter()
                .any(|(family, count)| match self.table(index, *family, node) {
                    None => true,
                    Some(table) => table.shared || table.free >= *count,
                })
        })
    }

    /// Whether the allocator could meet a selector error or a pool error on this node for
    /// these requirements (then no node may be skipped on a guess).
    pub fn may_fail(&mut self, index: &Index, requirement: &Requirement, node: NodeId) -> bool {
        requirement
            .watched
            .iter()
            .any(|family| self.table(index, *family, node).is_none_or(|t| t.failing))
    }
}

impl DeviceState {
    /// Tells the pre-check each node's position in name order (before the queue runs).
    pub fn set_ranks(&mut self, rank: &[usize]) {
        self.rank = rank.iter().map(|r| *r as u32).collect();
    }

    /// The first rank at or after `from` of a node where the anchor need of a requirement
    /// ([`Requirement::anchor`]) may pass the pre-check: every node skipped fails it. Needs
    /// [`DeviceState::set_ranks`].
    pub fn next_possible(&mut self, index: &Index, anchor: Anchor, from: u32) -> Option<u32> {
        let Anchor { family, count } = anchor;
        let bound_of = |state: &mut DeviceState, node: NodeId| {
            state
                .table(index, family, node)
                .map_or(u32::MAX, Table::bound)
        };
        match self.families[family].bounds.take() {
            None => {
                self.build_all_tables(index, family);
                let mut values = vec![u32::MAX; self.num_nodes];
                for node in 0..self.num_nodes {
                    values[self.rank[node] as usize] = bound_of(self, NodeId(node as u32));
                }
                self.families[family].bounds = Some(Bounds {
                    tree: MaxTree::new(&values),
                    stale: Vec::new(),
                });
            }
            Some(mut bounds) => {
                for node in std::mem::take(&mut bounds.stale) {
                    let bound = bound_of(self, node);
                    bounds.tree.set(self.rank[node.0 as usize] as usize, bound);
                }
                self.families[family].bounds = Some(bounds);
            }
        }
        let bounds = self.families[family].bounds.as_ref()?;
        bounds
            .tree
            .first_at_least(from as usize, count)
            .map(|rank| rank as u32)
    }

    /// The nodes where [`DeviceState::may_fail`] holds for the requirements, in id order.
    /// Whether a selector fails on a device or a node's pools cannot be gathered never changes,
    /// so each family looks at every node once per simulation.
    pub fn risky_nodes(&mut self, index: &Index, requirement: &Requirement) -> Vec<NodeId> {
        let mut out = Vec::new();
        for &family in &requirement.watched {
            if self.families[family].risky.is_none() {
                self.build_all_tables(index, family);
                let risky: Vec<NodeId> = (0..self.num_nodes as u32)
                    .map(NodeId)
                    .filter(|node| {
                        self.table(index, family, *node)
                            .is_none_or(|table| table.failing)
                    })
                    .collect();
                self.families[family].risky = Some(risky);
            }
            out.extend(self.families[family].risky.iter().flatten().copied());
        }
        out.sort_unstable();
        out.dedup();
        out
    }
}

fn build_table(
    index: &Index,
    family: FamilyId,
    set: &SelSetId,
    tolerations: &[DeviceToleration],
    node: NodeId,
    state: &AllocatedState,
) -> Option<Table> {
    let pools = index.node_pools(node).ok()?;
    let mut table = Table {
        family,
        node,
        keys: Vec::new(),
        free: 0,
        shared: false,
        failing: false,
    };
    for pool in pools.pools.iter().filter(|p| p.usable()) {
        for &device in &pool.devices {
            match set.set.matches(index, device) {
                Match::No => continue,
                Match::Failed(_) => {
                    table.failing = true;
                    continue;
                }
                Match::Yes => {}
            }
            let entry = index.device(device);
            if untolerated_taint(&entry.taints, tolerations).is_some() {
                continue;
            }
            if entry.allow_multiple_allocations {
                table.shared = true;
                continue;
            }
            table.keys.push(entry.key);
        }
    }
    table.keys.sort();
    table.keys.dedup();
    table.free = table
        .keys
        .iter()
        .filter(|k| !state.is_exclusively_allocated(**k))
        .count() as u32;
    Some(table)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first position at or after `from` whose value reaches `bound`, padding (zeros up
    /// to a power of two) included, by looking at each.
    fn scan(values: &[u32], from: usize, bound: u32) -> Option<usize> {
        let leaves = values.len().next_power_of_two().max(1);
        (from..leaves).find(|&p| values.get(p).copied().unwrap_or(0) >= bound)
    }

    #[test]
    fn first_at_least_finds_what_a_scan_finds() {
        // A small deterministic generator: sizes 1 to 40, values 0 to 9, every start and bound.
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = |modulus: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % modulus
        };
        for _ in 0..200 {
            let len = next(40) as usize + 1;
            let mut values: Vec<u32> = (0..len).map(|_| next(10) as u32).collect();
            let mut tree = MaxTree::new(&values);
            // and after updates
            for _ in 0..3 {
                for from in 0..len + 3 {
                    for bound in 0..12 {
                        assert_eq!(
                            tree.first_at_least(from, bound),
                            scan(&values, from, bound),
                            "{values:?} from {from} bound {bound}"
                        );
                    }
                }
                let at = next(len as u64) as usize;
                values[at] = next(12) as u32;
                tree.set(at, values[at]);
            }
        }
    }

    /// A family's tables for every node are the same built on several threads as one by one,
    /// and so are the free counts, the risky nodes and the bounds they give.
    /// Holders follow claims as they are added and removed, one or several per device, and a
    /// device named by two exclusive allocations is a conflict listing both, sorted.
    #[test]
    fn holders_follow_the_claims_that_name_a_device() {
        let slice = r#"{"metadata":{"name":"s"},"spec":{"driver":"gpu.example.com",
            "nodeName":"node-1","pool":{"name":"node-1","resourceSliceCount":1},
            "devices":[{"name":"gpu-0"},{"name":"gpu-1"}]}}"#;
        let input = dra_alloc::IndexInput {
            nodes: Vec::new(),
            slices: vec![dra_alloc::SliceInput::Json(slice)],
            classes: Vec::new(),
            taint_rules: Vec::new(),
        };
        let index = Index::build(&input, &dra_alloc::IndexOptions::default()).expect("an index");
        let key = |device: &str| {
            index
                .device_key("gpu.example.com", "node-1", device)
                .expect("a device")
        };
        let allocation = |devices: &[&str]| {
            crate::test_support::allocation("gpu", "gpu.example.com", "node-1", devices)
        };
        let claim = |name: &str| ("default".to_string(), name.to_string());
        let holder = |name: &str| Arc::new(claim(name));
        let held = |state: &DeviceState, device: &str| -> Vec<String> {
            state.holders(key(device)).map(|(_, n)| n.clone()).collect()
        };
        let mut state = DeviceState::new(&index);
        state
            .add_claim(&index, &holder("b"), &allocation(&["gpu-0", "gpu-1"]))
            .expect("added");
        state
            .add_claim(&index, &holder("a"), &allocation(&["gpu-0"]))
            .expect("added");
        assert_eq!(held(&state, "gpu-0"), ["b", "a"]);
        assert_eq!(held(&state, "gpu-1"), ["b"]);
        assert_eq!(
            state.conflicts(&index),
            [(
                "gpu.example.com/node-1/gpu-0".to_string(),
                vec![claim("a"), claim("b")]
            )]
        );
        state
            .remove_claim(&index, &claim("b"), &allocation(&["gpu-0", "gpu-1"]))
            .expect("removed");
        assert_eq!(held(&state, "gpu-0"), ["a"]);
        assert!(held(&state, "gpu-1").is_empty());
        assert!(state.conflicts(&index).is_empty());
        state
            .remove_claim(&index, &claim("a"), &allocation(&["gpu-0"]))
            .expect("removed");
        assert!(held(&state, "gpu-0").is_empty());
    }

    /// A cluster of `dra gen`'s `preset` at `nodes` nodes, loaded.
    fn generated(preset: &str, nodes: u32, seed: u64) -> dra_api::Loaded {
        let mut spec = dra_gen::preset(preset, nodes).expect("known preset");
        spec.seed = seed;
        let mut text = Vec::new();
        dra_gen::generate_json_lines(&spec, &mut text).expect("generates");
        let text = String::from_utf8(text).expect("utf-8");
        let loaded = dra_api::load_str(&format!("{preset}.json"), &text);
        assert!(!loaded.has_errors(), "{:?}", loaded.diagnostics);
        loaded
    }

    /// A claim made from each of the input's templates, prepared.
    fn template_claims(input: &crate::SimInput<'_>, index: &Index) -> Vec<PreparedClaim> {
        input
            .templates
            .iter()
            .map(|template| {
                let claim = k8s_openapi::api::resource::v1::ResourceClaim {
                    metadata: template.metadata.clone(),
                    spec: template.spec.as_ref().and_then(|s| s.spec.clone()),
                    status: None,
                };
                PreparedClaim::new(index, &claim)
            })
            .collect()
    }

    #[test]
    fn tables_built_on_threads_are_the_tables_built_one_by_one() {
        let loaded = generated("hgx-half", 80, 3);
        let input = crate::SimInput::from_cluster(&loaded.cluster);
        let snapshot = crate::Snapshot::new(&input).expect("indexes");
        let index = &snapshot.index;
        let claims = template_claims(&input, index);
        assert!(claims.len() > 1, "templates: {}", claims.len());
        let run = |threads: usize, at_once: bool| {
            let mut state = DeviceState::new(index);
            let ranks: Vec<usize> = (0..state.num_nodes).collect();
            state.set_ranks(&ranks);
            state.set_threads(threads, at_once);
            let mut seen = Vec::new();
            for claim in &claims {
                let requirement = state.requirements(&[claim]);
                let risky = state.risky_nodes(index, &requirement);
                let next = requirement
                    .anchor()
                    .map(|anchor| state.next_possible(index, anchor, 0));
                seen.push(format!("{risky:?} {next:?}"));
            }
            let per_node: Vec<_> = state.families.iter().map(|f| &f.per_node).collect();
            format!("{seen:?}\n{:?}\n{per_node:?}", state.tables)
        };
        let one = run(1, false);
        assert!(one.contains("keys"), "no table built");
        assert_eq!(run(3, true), one);
        assert_eq!(run(2, false), one);
    }

    /// Adding a claim of whole, exclusively allocated devices by their keys changes the
    /// allocated state, the pre-check tables, their bounds and the device holders as adding
    /// its object does.
    #[test]
    fn exclusive_claims_by_keys_change_what_their_objects_change() {
        let loaded = generated("hgx-mixed", 12, 5);
        let input = crate::SimInput::from_cluster(&loaded.cluster);
        let snapshot = crate::Snapshot::new(&input).expect("indexes");
        let index = &snapshot.index;
        let claims = template_claims(&input, index);
        let new_state = || {
            let mut state = DeviceState::new(index);
            let ranks: Vec<usize> = (0..state.num_nodes).collect();
            state.set_ranks(&ranks);
            state
        };
        let (mut by_object, mut by_keys) = (new_state(), new_state());
        let nodes: Vec<NodeId> = index.node_ids().collect();
        let mut exclusive = 0;
        for (round, claim) in claims.iter().cycle().take(3 * claims.len()).enumerate() {
            let node = nodes[round % nodes.len()];
            // Each state numbers the families it is asked about, in the same order.
            let seen = |state: &mut DeviceState| {
                let requirement = state.requirements(&[claim]);
                let risky = state.risky_nodes(index, &requirement);
                let next = requirement
                    .anchor()
                    .map(|anchor| state.next_possible(index, anchor, 0));
                format!(
                    "{risky:?} {next:?} {}",
                    state.check(index, &requirement, node)
                )
            };
            assert_eq!(seen(&mut by_object), seen(&mut by_keys), "round {round}");
            let dra_alloc::Picked::Allocated(picks) =
                dra_alloc::allocate_picks(index, &by_object.state, node, &[claim]).0
            else {
                continue;
            };
            if !picks[0].is_exclusive(index, claim) {
                continue;
            }
            exclusive += 1;
            let holder = Arc::new(("default".to_string(), format!("claim-{round}")));
            let object = picks[0].build(index, node, claim);
            by_object.add_claim(index, &holder, &object).expect("added");
            let keys: Vec<DeviceKey> = picks[0]
                .devices()
                .map(|device| index.device(device).key)
                .collect();
            by_keys.add_exclusive_claim(index, &holder, &keys);
            assert_eq!(by_object.state.version(), by_keys.state.version());
            for key in (0..index.num_device_keys() as u32).map(DeviceKey) {
                assert_eq!(
                    by_object.state.is_exclusively_allocated(key),
                    by_keys.state.is_exclusively_allocated(key)
                );
                assert!(by_object.holders(key).eq(by_keys.holders(key)));
            }
            assert_eq!(
                format!("{:?}", by_object.tables),
                format!("{:?}", by_keys.tables)
            );
        }
        assert!(
            exclusive > claims.len(),
            "exclusive claims added: {exclusive}"
        );
    }
}
