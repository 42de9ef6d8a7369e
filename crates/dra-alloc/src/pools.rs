//! Pool gathering for one node (upstream `GatherPools` and `buildPool`, incubating variant).
//!
//! The result depends only on slices and the node, never on allocations, so it is computed once
//! per node and snapshot. Order is upstream's: pools by `(driver, pool)` byte-wise, pools with
//! binding conditions last; slices by name; devices in slice order.

use std::collections::BTreeMap;

use crate::hashing::{WordHashMap, WordHashSet};
use crate::index::{CounterSetEntry, DeviceIdx, Index, NodeId, SliceIdx, SliceNodeSelection};
use crate::node_selector::{NodeFacts, node_selector_matches};

/// One pool as seen from one node.
#[derive(Debug)]
pub struct PoolView {
    pub driver: String,
    pub pool: String,
    pub incomplete: bool,
    /// `Some(reason)` when upstream marks the pool invalid.
    pub invalid: Option<String>,
    /// Slices whose devices may be allocated on this node, sorted by name.
    pub targeting: Vec<SliceIdx>,
    /// Devices of `targeting` in search order (flattened for fast iteration).
    pub devices: Vec<DeviceIdx>,
    /// For each slice of `targeting`, the offset of its first device in `devices`.
    pub slice_offsets: Vec<u32>,
    /// Other slices of the pool (devices on other nodes), needed only for counters.
    pub not_targeting: Vec<SliceIdx>,
    pub counter_sets: BTreeMap<String, CounterSetEntry>,
    /// Dense form of the counters for the search (empty when the pool has none).
    pub counters: PoolCounters,
    /// Dense identity of `(driver, pool)`.
    pub pool_key: u32,
}

/// A pool's counters as slots: one per (counter set, counter), values in exact nano units.
#[derive(Debug, Default)]
pub struct PoolCounters {
    /// Names of the slots, in (set, counter) order.
    pub slots: Vec<(String, String)>,
    /// The counter sets' values per slot.
    pub totals: Vec<i128>,
    /// Every device of the pool view (on this node or not) that consumes counters, with its
    /// consumption per slot. Sorted by device.
    pub consumers: Vec<(DeviceIdx, Vec<(u32, i128)>)>,
}

impl PoolCounters {
    /// The consumption of one device, if it consumes counters.
    pub fn consumption(&self, device: DeviceIdx) -> Option<&[(u32, i128)]> {
        self.consumers
            .binary_search_by_key(&device, |(d, _)| *d)
            .ok()
            .map(|i| self.consumers[i].1.as_slice())
    }

    fn build(
        index: &Index,
        sets: &BTreeMap<String, CounterSetEntry>,
        devices: impl Iterator<Item = DeviceIdx>,
    ) -> PoolCounters {
        let mut out = PoolCounters::default();
        let mut slot_of = BTreeMap::new();
        for (set_name, set) in sets {
            for (counter, value) in &set.counters {
                slot_of.insert(
                    (set_name.as_str(), counter.as_str()),
                    out.slots.len() as u32,
                );
                out.slots.push((set_name.clone(), counter.clone()));
                out.totals.push(value.as_nanos());
            }
        }
        for device in devices {
            let entry = index.device(device);
            if entry.consumes_counters.is_empty() {
                continue;
            }
            let mut consumption = Vec::new();
            for c in &entry.consumes_counters {
                for (counter, value) in &c.counters {
                    // References were validated: every (set, counter) exists.
                    if let Some(&slot) = slot_of.get(&(c.counter_set.as_str(), counter.as_str())) {
                        consumption.push((slot, value.as_nanos()));
                    }
                }
            }
            out.consumers.push((device, consumption));
        }
        out.consumers.sort_by_key(|(d, _)| *d);
        out
    }
}

impl PoolView {
    pub fn usable(&self) -> bool {
        !self.incomplete && self.invalid.is_none()
    }
}

/// The pools of one node in search order.
#[derive(Debug, Default)]
pub struct NodePools {
    pub pools: Vec<PoolView>,
}

/// `NodeMatches(node, nodeName, allNodes, selector)`.
pub(crate) fn node_matches(
    node: &NodeFacts,
    node_name: &str,
    all_nodes: bool,
    selector: Option<&k8s_openapi::api::core::v1::NodeSelector>,
) -> Result<bool, String> {
    if !node_name.is_empty() {
        return Ok(node.name == node_name);
    }
    if all_nodes {
        return Ok(true);
    }
    match selector {
        Some(selector) => node_selector_matches(selector, node)
            .map_err(|e| format!("failed to parse node selector: {e}")),
        None => Ok(false),
    }
}

pub(crate) fn gather_pools(index: &Index, node: NodeId) -> Result<NodePools, String> {
    let facts = index.node_facts(node);
    let on_node = index
        .slices_on_node
        .get(&facts.name)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let features = index.features;

    // Relevant slices per pool, highest generation only, in input order.
    let mut pools: WordHashMap<(&str, &str), Vec<SliceIdx>> = WordHashMap::default();
    let mut pool_order: Vec<(&str, &str)> = Vec::new();
    for &idx in on_node.iter().chain(index.slices_shared.iter()) {
        let slice = index.slice(idx);
        if !features.partitionable_devices
            && (slice.per_device_node_selection_field || !slice.shared_counters.is_empty())
        {
            continue;
        }
        let relevant = match &slice.selection {
            SliceNodeSelection::NodeName(name) => node_matches(facts, name, false, None),
            SliceNodeSelection::AllNodes => Ok(true),
            SliceNodeSelection::Selector(selector) => {
                node_matches(facts, "", false, Some(selector)).map_err(|e| {
                    format!(
                        "failed to perform node selection for slice {}: {e}",
                        slice.name
                    )
                })
            }
            SliceNodeSelection::PerDevice => {
                let mut any = false;
                for d in slice.devices.clone() {
                    let device = index.device(DeviceIdx(d));
                    let matched = node_matches(
                        facts,
                        device.node_name.as_deref().unwrap_or_default(),
                        device.all_nodes,
                        device.node_selector.as_ref(),
                    )
                    .map_err(|e| {
                        format!(
                            "failed to perform node selection for device {} in slice {}: {e}",
                            device.name, slice.name
                        )
                    })?;
                    if matched {
                        any = true;
                        break;
                    }
                }
                Ok(any)
            }
            SliceNodeSelection::Unknown => continue,
        }?;
        if !relevant {
            continue;
        }
        let id = (slice.driver.as_str(), slice.pool.as_str());
        match pools.get_mut(&id) {
            None => {
                pools.insert(id, vec![idx]);
                pool_order.push(id);
            }
            Some(list) => {
                let current = index.slice(list[0]).generation;
                if slice.generation < current {
                    // Out-dated.
                } else if slice.generation > current {
                    *list = vec![idx];
                } else {
                    list.push(idx);
                }
            }
        }
    }

    let mut result = Vec::new();
    let mut with_binding_conditions = Vec::new();
    for id in pool_order {
        let slices = pools.remove(&id).unwrap_or_default();
        let first = index.slice(slices[0]);
        let wanted = first.resource_slice_count;
        let pool = if slices.len() as i64 == wanted {
            build_pool(index, id, slices, None)
        } else {
            // Look at every slice of the pool: a newer generation elsewhere makes this one
            // obsolete; otherwise the pool is complete only if all its slices exist.
            let generation = first.generation;
            let mut all = Vec::new();
            let mut obsolete = false;
            for &other in index
                .slices_by_pool
                .get(&(id.0.to_string(), id.1.to_string()))
                .map(Vec::as_slice)
                .unwrap_or_default()
            {
                let s = index.slice(other);
                if s.generation == generation {
                    all.push(other);
                } else if s.generation > generation {
                    obsolete = true;
                    break;
                }
            }
            if obsolete {
                continue;
            }
            if all.len() as i64 != wanted {
                PoolView {
                    driver: id.0.to_string(),
                    pool: id.1.to_string(),
                    incomplete: true,
                    invalid: None,
                    targeting: Vec::new(),
                    devices: Vec::new(),
                    slice_offsets: Vec::new(),
                    not_targeting: Vec::new(),
                    counter_sets: BTreeMap::new(),
                    counters: PoolCounters::default(),
                    pool_key: index.pool_key(id.0, id.1),
                }
            } else {
                build_pool(index, id, slices, Some(all))
            }
        };
        let has_binding_conditions = pool
            .devices
            .iter()
            .any(|&d| index.device(d).binding_conditions.is_some());
        if has_binding_conditions {
            with_binding_conditions.push(pool);
        } else {
            result.push(pool);
        }
    }
    let by_id = |a: &PoolView, b: &PoolView| {
        a.driver
            .as_bytes()
            .cmp(b.driver.as_bytes())
            .then_with(|| a.pool.as_bytes().cmp(b.pool.as_bytes()))
    };
    result.sort_by(by_id);
    with_binding_conditions.sort_by(by_id);
    result.extend(with_binding_conditions);
    Ok(NodePools { pools: result })
}

fn build_pool(
    index: &Index,
    id: (&str, &str),
    mut slices: Vec<SliceIdx>,
    all_slices_of_pool: Option<Vec<SliceIdx>>,
) -> PoolView {
    let partitionable = index.features.partitionable_devices;
    slices.sort_by(|a, b| {
        index
            .slice(*a)
            .name
            .as_bytes()
            .cmp(index.slice(*b).name.as_bytes())
    });
    let mut device_slices = Vec::new();
    let mut counter_slices = Vec::new();
    let mut not_targeting = Vec::new();
    for &s in &slices {
        if partitionable && !index.slice(s).shared_counters.is_empty() {
            counter_slices.push(s);
        } else {
            device_slices.push(s);
        }
    }
    if let Some(all) = &all_slices_of_pool
        && slices.len() < all.len()
    {
        let names: WordHashSet<&str> = slices
            .iter()
            .map(|s| index.slice(*s).name.as_str())
            .collect();
        for &s in all {
            let slice = index.slice(s);
            if names.contains(slice.name.as_str()) {
                continue;
            }
            if partitionable && !slice.shared_counters.is_empty() {
                counter_slices.push(s);
            } else {
                not_targeting.push(s);
            }
        }
    }
    let mut view = PoolView {
        driver: id.0.to_string(),
        pool: id.1.to_string(),
        incomplete: false,
        invalid: None,
        targeting: Vec::new(),
        devices: Vec::new(),
        slice_offsets: Vec::new(),
        not_targeting: Vec::new(),
        counter_sets: BTreeMap::new(),
        counters: PoolCounters::default(),
        pool_key: index.pool_key(id.0, id.1),
    };
    let invalid = |mut view: PoolView, reason: String| {
        view.invalid = Some(reason);
        view
    };
    // Duplicate device names among the node's device slices.
    let mut seen = WordHashSet::default();
    for &s in &device_slices {
        for d in index.slice(s).devices.clone() {
            let name = index.device(DeviceIdx(d)).name.as_ref();
            if !seen.insert(name) {
                return invalid(view, format!("duplicate device name {name}"));
            }
        }
    }
    if !partitionable {
        fill_devices(index, &mut view, device_slices);
        return view;
    }
    for &s in &counter_slices {
        for set in &index.slice(s).shared_counters {
            if view.counter_sets.contains_key(&set.name) {
                return invalid(view, format!("duplicate counter set name {}", set.name));
            }
            view.counter_sets.insert(set.name.clone(), set.clone());
        }
    }
    if let Some(reason) = dangling_counter(index, &view.counter_sets, &device_slices)
        .or_else(|| dangling_counter(index, &view.counter_sets, &not_targeting))
    {
        return invalid(view, reason);
    }
    fill_devices(index, &mut view, device_slices);
    view.not_targeting = not_targeting;
    let others = view
        .not_targeting
        .iter()
        .flat_map(|s| index.slice(*s).devices.clone().map(DeviceIdx));
    view.counters = PoolCounters::build(
        index,
        &view.counter_sets,
        view.devices.iter().copied().chain(others),
    );
    view
}

fn fill_devices(index: &Index, view: &mut PoolView, device_slices: Vec<SliceIdx>) {
    for &s in &device_slices {
        view.slice_offsets.push(view.devices.len() as u32);
        view.devices
            .extend(index.slice(s).devices.clone().map(DeviceIdx));
    }
    view.targeting = device_slices;
}

/// The first consumption of a counter set or counter the pool does not define.
fn dangling_counter(
    index: &Index,
    counter_sets: &BTreeMap<String, CounterSetEntry>,
    slices: &[SliceIdx],
) -> Option<String> {
    for &s in slices {
        for d in index.slice(s).devices.clone() {
            for consumption in &index.device(DeviceIdx(d)).consumes_counters {
                let Some(set) = counter_sets.get(&consumption.counter_set) else {
                    return Some(format!("counter set {} not found", consumption.counter_set));
                };
                for (counter, _) in &consumption.counters {
                    if !set.counters.contains_key(counter) {
                        return Some(format!(
                            "counter {counter} not found in counter set {}",
                            set.name
                        ));
                    }
                }
            }
        }
    }
    None
}
