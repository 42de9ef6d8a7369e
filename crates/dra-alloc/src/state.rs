//! The allocated state the allocator sees (upstream `AllocatedState`, SPEC.md §3.19), kept
//! incrementally: adding or removing one claim's allocation costs O(its results), instead of
//! upstream's rebuild from every claim in the cluster for every pod.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use k8s_openapi::api::resource::v1::{AllocationResult, DeviceRequestAllocationResult};

use crate::claims::PreparedClaim;
use crate::hashing::WordHashMap;
use crate::index::{DeviceKey, Index};
use crate::quantity::{CapacityAmounts, ParsedQuantities};
use crate::result::ClaimPicks;

/// Devices already allocated to claims, shares of shared devices and their consumed capacity.
///
/// Counts instead of sets: two claims in the input may (invalidly) name the same device, and
/// removing one of them must not free the device for the other.
#[derive(Debug, Default)]
pub struct AllocatedState {
    /// Exclusive allocations per device key.
    exclusive: Vec<u32>,
    /// Number of shared allocations (results with a `shareID`) per device: upstream's
    /// `AllocatedSharedDeviceIDs` is asked only whether it holds some share of a device
    /// (`IsDeviceAllocated`, the counters' gathering), never for a particular ID, so the IDs
    /// themselves are not kept (a share ID is a hash of its claim and device: deriving it
    /// for every shared pick was a tenth of a small run's reference loop).
    shares_per_device: Vec<u32>,
    /// Sum of `consumedCapacity` over the shares of a device that report one.
    aggregated_capacity: BTreeMap<DeviceKey, CapacityAmounts>,
    /// One bit per device key of the index: whether `aggregated_capacity` has the device.
    /// The search asks for every device it tries, nearly always of one that has none, and
    /// the bit answers that without a walk down the map.
    aggregated_keys: Vec<u64>,
    /// How many results contribute to `aggregated_capacity` per device: upstream's state has
    /// an entry only while some shared result carries `consumedCapacity`.
    capacity_contributors: Vec<u32>,
    /// Devices named by results but absent from every slice: they cannot influence allocation.
    unknown_devices: BTreeSet<(String, String, String)>,
    /// Bumped on every change; lets callers cache derived data.
    version: u64,
    /// Bumped when an allocation of a device of the pool (by pool key) changes.
    pool_versions: Vec<u64>,
    /// Counters available per (node, pool index of the node) given the allocations above,
    /// with the pool version they were computed for.
    counter_cache: Mutex<WordHashMap<(u32, u32), VersionedCounters>>,
    /// Plain claims (by the hash of their fit key) that a node rejected before the search,
    /// with the full key and the node's allocation version at the time: while the version is
    /// unchanged, so is the answer.
    rejections: Mutex<WordHashMap<(u64, u32), Rejection>>,
    /// `consumedCapacity` texts parsed before (results are wire objects with strings).
    parsed_quantities: ParsedQuantities,
}

/// A remembered rejection: the claims' full fit key and the node version it held for.
type Rejection = (Box<[u64]>, u64);

/// Available counters of a pool and the pool version they were computed for.
type VersionedCounters = (u64, Arc<[i128]>);

impl Clone for AllocatedState {
    fn clone(&self) -> AllocatedState {
        AllocatedState {
            exclusive: self.exclusive.clone(),
            shares_per_device: self.shares_per_device.clone(),
            aggregated_capacity: self.aggregated_capacity.clone(),
            aggregated_keys: self.aggregated_keys.clone(),
            capacity_contributors: self.capacity_contributors.clone(),
            unknown_devices: self.unknown_devices.clone(),
            version: self.version,
            pool_versions: self.pool_versions.clone(),
            // Caches, rebuilt on demand.
            counter_cache: Mutex::default(),
            rejections: Mutex::default(),
            parsed_quantities: ParsedQuantities::default(),
        }
    }
}

/// A problem with an allocation result that makes it unusable for the state.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("device {device}: consumedCapacity {name}: {message}")]
pub struct StateError {
    pub device: String,
    pub name: String,
    pub message: String,
}

impl AllocatedState {
    pub fn new(index: &Index) -> AllocatedState {
        AllocatedState {
            exclusive: vec![0; index.num_device_keys()],
            aggregated_keys: vec![0; index.num_device_keys().div_ceil(64)],
            pool_versions: vec![0; index.num_pool_keys()],
            ..AllocatedState::default()
        }
    }

    pub fn version(&self) -> u64 {
        self.version
    }

    /// Whether upstream's `AllocatedDevices` holds the device.
    pub fn is_exclusively_allocated(&self, key: DeviceKey) -> bool {
        self.exclusive.get(key.0 as usize).is_some_and(|c| *c > 0)
    }

    /// `IsDeviceAllocated`: exclusively allocated, or with at least one share.
    pub fn is_allocated(&self, key: DeviceKey) -> bool {
        self.is_exclusively_allocated(key) || self.shares(key) > 0
    }

    /// How many shared allocations (results with a `shareID`) of the device the state holds.
    pub fn shares(&self, key: DeviceKey) -> u32 {
        self.shares_per_device
            .get(key.0 as usize)
            .copied()
            .unwrap_or(0)
    }

    /// `AggregatedCapacity[key]`.
    pub fn aggregated_capacity(&self, key: DeviceKey) -> Option<&CapacityAmounts> {
        let (word, bit) = aggregated_bit(key);
        match self.aggregated_keys.get(word) {
            Some(bits) if bits & bit == 0 => None,
            // A key beyond the bits (a state made without an index) is looked up.
            _ => self.aggregated_capacity.get(&key),
        }
    }

    /// The version of a pool's allocations (changes whenever a device of it is allocated or
    /// freed).
    pub fn pool_version(&self, pool_key: u32) -> u64 {
        self.pool_versions
            .get(pool_key as usize)
            .copied()
            .unwrap_or(0)
    }

    /// Counters available in a pool of a node (the counter sets' values minus what allocated
    /// devices consume), computed once per pool version.
    pub(crate) fn available_counters(
        &self,
        node: u32,
        pool_index: u32,
        pool_key: u32,
        compute: impl FnOnce() -> Vec<i128>,
    ) -> Arc<[i128]> {
        let version = self.pool_version(pool_key);
        let mut cache = self.counter_cache.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((v, counters)) = cache.get(&(node, pool_index))
            && *v == version
        {
            return counters.clone();
        }
        let counters: Arc<[i128]> = compute().into();
        cache.insert((node, pool_index), (version, counters.clone()));
        counters
    }

    /// Whether the fit key `key` (with hash `hash`) was rejected on `node` when the node's
    /// version was `version`.
    pub(crate) fn was_rejected(
        &self,
        hash: u64,
        key: impl Iterator<Item = u64>,
        node: u32,
        version: u64,
    ) -> bool {
        let rejections = self.rejections.lock().unwrap_or_else(|e| e.into_inner());
        rejections
            .get(&(hash, node))
            .is_some_and(|(stored, v)| *v == version && stored.iter().copied().eq(key))
    }

    pub(crate) fn remember_rejection(&self, hash: u64, key: Box<[u64]>, node: u32, version: u64) {
        let mut rejections = self.rejections.lock().unwrap_or_else(|e| e.into_inner());
        rejections.insert((hash, node), (key, version));
    }

    /// Records one claim's allocation (results with `adminAccess: true` are ignored).
    pub fn add(&mut self, index: &Index, allocation: &AllocationResult) -> Result<(), StateError> {
        self.apply(index, &ResolvedAllocation::new(index, allocation), true)
    }

    /// Forgets one claim's allocation, as when the claim is deallocated.
    pub fn remove(
        &mut self,
        index: &Index,
        allocation: &AllocationResult,
    ) -> Result<(), StateError> {
        self.apply(index, &ResolvedAllocation::new(index, allocation), false)
    }

    /// [`AllocatedState::add`] with the devices' keys already resolved.
    pub fn add_resolved(
        &mut self,
        index: &Index,
        allocation: &ResolvedAllocation<'_>,
    ) -> Result<(), StateError> {
        self.apply(index, allocation, true)
    }

    /// [`AllocatedState::add_resolved`] for results that each allocate a whole device
    /// exclusively (no admin access, no share ID, no consumed capacity), by their keys.
    pub fn add_exclusive(&mut self, index: &Index, keys: &[DeviceKey]) {
        self.version += 1;
        for &key in keys {
            if let Some(v) = self.pool_versions.get_mut(index.pool_of_key(key) as usize) {
                *v += 1;
            }
            count_in(&mut self.exclusive, key, true);
        }
    }

    /// [`AllocatedState::remove`] with the devices' keys already resolved.
    pub fn remove_resolved(
        &mut self,
        index: &Index,
        allocation: &ResolvedAllocation<'_>,
    ) -> Result<(), StateError> {
        self.apply(index, allocation, false)
    }

    fn apply(
        &mut self,
        index: &Index,
        allocation: &ResolvedAllocation<'_>,
        add: bool,
    ) -> Result<(), StateError> {
        // Parse everything first so a bad quantity leaves the state untouched. Per result,
        // `None`: no consumedCapacity at all (not even an empty map). Most allocations
        // consume no capacity and need no list.
        let mut parsed: Vec<Option<CapacityAmounts>> = Vec::new();
        if allocation
            .results()
            .any(|(result, _)| result.consumed_capacity.is_some())
        {
            for (result, _) in allocation.results() {
                let mut consumed = result
                    .consumed_capacity
                    .as_ref()
                    .map(|_| CapacityAmounts::default());
                if result.admin_access != Some(true) {
                    for (name, q) in result.consumed_capacity.iter().flatten() {
                        let value = self.parsed_quantities.parse(&q.0).map_err(|e| StateError {
                            device: format!("{}/{}/{}", result.driver, result.pool, result.device),
                            name: name.clone(),
                            message: e.to_string(),
                        })?;
                        if let Some(consumed) = consumed.as_mut() {
                            consumed.insert(name.as_str().into(), value);
                        }
                    }
                }
                parsed.push(consumed);
            }
        }
        let mut parsed = parsed.into_iter();
        self.version += 1;
        for (result, key) in allocation.results() {
            let consumed = parsed.next().flatten();
            if result.admin_access == Some(true) {
                continue;
            }
            let Some(key) = key else {
                // Unknown devices belong to no pool of the snapshot.
                let id = (
                    result.driver.clone(),
                    result.pool.clone(),
                    result.device.clone(),
                );
                if add {
                    self.unknown_devices.insert(id);
                } else {
                    self.unknown_devices.remove(&id);
                }
                continue;
            };
            self.change_device(
                index,
                key,
                result.share_id.is_some(),
                consumed.as_ref(),
                add,
            );
        }
        Ok(())
    }

    /// [`AllocatedState::add`] of the object `picks` describe ([`ClaimPicks::build`] for
    /// `claim`), without writing it: each device by its key, each share of a device counted,
    /// consumed capacity as the search computed it. The state is the one adding the
    /// object makes, which a later [`AllocatedState::remove`] of the object undoes.
    pub fn add_picks(&mut self, index: &Index, claim: &PreparedClaim, picks: &ClaimPicks) {
        self.version += 1;
        for change in picks.state_changes(index, claim) {
            self.change_device(index, change.key, change.shared, change.consumed, true);
        }
    }

    /// Adds (or with `add` false, takes back) one device result without admin access:
    /// `shared`, whether it has a `shareID`; `consumed`, its `consumedCapacity` as values.
    fn change_device(
        &mut self,
        index: &Index,
        key: DeviceKey,
        shared: bool,
        consumed: Option<&CapacityAmounts>,
        add: bool,
    ) {
        if let Some(v) = self.pool_versions.get_mut(index.pool_of_key(key) as usize) {
            *v += 1;
        }
        if !shared {
            count_in(&mut self.exclusive, key, add);
            return;
        }
        count_in(&mut self.shares_per_device, key, add);
        // Upstream aggregates consumedCapacity only for results with a shareID and a
        // consumedCapacity (kube-scheduler's GatherAllocatedState).
        let Some(consumed) = consumed else {
            return;
        };
        let (word, bit) = aggregated_bit(key);
        if !count_in(&mut self.capacity_contributors, key, add) {
            self.aggregated_capacity.remove(&key);
            if let Some(bits) = self.aggregated_keys.get_mut(word) {
                *bits &= !bit;
            }
            return;
        }
        if let Some(bits) = self.aggregated_keys.get_mut(word) {
            *bits |= bit;
        }
        let totals = self.aggregated_capacity.entry(key).or_default();
        for (name, value) in consumed {
            let total = totals.get_mut_or_zero(name);
            *total = if add {
                crate::quantity::add(total, value)
            } else {
                crate::quantity::sub(total, value)
            };
        }
    }
}

/// Where `key` is in [`AllocatedState::aggregated_keys`]: the word and the bit in it.
fn aggregated_bit(key: DeviceKey) -> (usize, u64) {
    (key.0 as usize / 64, 1 << (key.0 % 64))
}

/// Counts one more (`add`) or one less for `key` in `counts` (indexed by key; the exclusive
/// counts come sized for the index's keys, the shared ones grow as a key needs); one less of
/// a count at zero changes nothing. Whether the count is above zero afterwards.
fn count_in(counts: &mut Vec<u32>, key: DeviceKey, add: bool) -> bool {
    let at = key.0 as usize;
    if at >= counts.len() {
        if !add {
            return false;
        }
        counts.resize(at + 1, 0);
    }
    let count = &mut counts[at];
    *count = if add {
        *count + 1
    } else {
        count.saturating_sub(1)
    };
    *count > 0
}

/// An allocation with the device key of each of its results resolved once (`None`: a device
/// that no pool of the snapshot has): the simulation tracks an allocation in more than one
/// place, and each used to look every device up by its three names again.
#[derive(Debug)]
pub struct ResolvedAllocation<'a> {
    results: &'a [DeviceRequestAllocationResult],
    keys: Vec<Option<DeviceKey>>,
}

impl<'a> ResolvedAllocation<'a> {
    pub fn new(index: &Index, allocation: &'a AllocationResult) -> ResolvedAllocation<'a> {
        let results = allocation
            .devices
            .as_ref()
            .and_then(|d| d.results.as_deref())
            .unwrap_or_default();
        let keys = results
            .iter()
            .map(|r| index.device_key(&r.driver, &r.pool, &r.device))
            .collect();
        ResolvedAllocation { results, keys }
    }

    /// Every result with its device's key, in the allocation's order.
    pub fn results(
        &self,
    ) -> impl Iterator<Item = (&'a DeviceRequestAllocationResult, Option<DeviceKey>)> + '_ {
        self.results.iter().zip(self.keys.iter().copied())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{IndexInput, IndexOptions, SliceInput};

    /// A shared result consuming `amount` of the NIC's bandwidth.
    fn consuming(amount: &str, share: &str) -> AllocationResult {
        serde_json::from_value(serde_json::json!({"devices": {"results": [{
            "request": "nic", "driver": "nic.example.com", "pool": "node-1", "device": "nic-0",
            "shareID": share, "consumedCapacity": {"bandwidth": amount}
        }]}}))
        .expect("an allocation result")
    }

    /// Amounts, repeated and not, add up the same whether parsed or remembered, each share
    /// counted; a text that does not parse leaves the state as it was.
    #[test]
    fn consumed_capacity_adds_up_with_remembered_parses() {
        let slice = r#"{"metadata":{"name":"s"},"spec":{"driver":"nic.example.com",
            "nodeName":"node-1","pool":{"name":"node-1","resourceSliceCount":1},
            "devices":[{"name":"nic-0","allowMultipleAllocations":true,
              "capacity":{"bandwidth":{"value":"100Gi"}}}]}}"#;
        let input = IndexInput {
            nodes: Vec::new(),
            slices: vec![SliceInput::Json(slice)],
            classes: Vec::new(),
            taint_rules: Vec::new(),
        };
        let index = Index::build(&input, &IndexOptions::default()).expect("an index");
        let key = index
            .device_key("nic.example.com", "node-1", "nic-0")
            .expect("the NIC");
        let mut state = AllocatedState::new(&index);
        for (amount, share) in [("1Gi", "a"), ("1Gi", "b"), ("2048Mi", "c")] {
            state.add(&index, &consuming(amount, share)).expect("added");
        }
        let total = |state: &AllocatedState| {
            state.aggregated_capacity(key).expect("aggregated")["bandwidth"].to_canonical_string()
        };
        assert_eq!(total(&state), "4Gi");
        assert_eq!(state.shares(key), 3);
        assert!(state.add(&index, &consuming("1Gx", "d")).is_err());
        assert_eq!(total(&state), "4Gi");
        assert_eq!(state.shares(key), 3, "a failed add counts no share");
        state
            .remove(&index, &consuming("1Gi", "a"))
            .expect("removed");
        assert_eq!(total(&state), "3Gi");
        assert_eq!(state.shares(key), 2);
        // The last contribution taken back leaves no entry; a new one makes it again, and a
        // clone answers alike.
        for (amount, share) in [("1Gi", "b"), ("2048Mi", "c")] {
            state
                .remove(&index, &consuming(amount, share))
                .expect("removed");
        }
        assert!(state.aggregated_capacity(key).is_none());
        assert!(state.clone().aggregated_capacity(key).is_none());
        assert_eq!(state.shares(key), 0);
        assert!(!state.is_allocated(key));
        state.add(&index, &consuming("5Gi", "e")).expect("added");
        assert_eq!(total(&state), "5Gi");
        assert_eq!(total(&state.clone()), "5Gi");
        assert_eq!(state.shares(key), 1);
        assert!(state.is_allocated(key) && !state.is_exclusively_allocated(key));
    }
}
