//! The depth-first search of upstream's incubating allocator (`allocateOne`, `allocateDevice`,
//! SPEC.md §3.4–§3.13), reproduced step for step so that the first solution found is the same.
//!
//! What differs is only how cheaply each step is answered: selector results come from the
//! snapshot-wide cache, "in use" from counters indexed by [`DeviceKey`], and per-call state
//! lives in small vectors that are undone explicitly instead of through closures.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::sync::Arc;

use dra_types::Quantity;
use k8s_openapi::api::resource::v1::DeviceToleration;

use crate::claims::{AllocationMode, ConstraintPlan, PreparedClaim, RequestBody, RequestSpec};
use crate::index::{
    AttrValue, Capacity, ClassId, DeviceIdx, DeviceKey, Index, NodeId, RequestPolicy,
};
use crate::node_selector::NodeFacts;
use crate::pools::{NodePools, node_matches};
use crate::quantity::{self, CapacityAmounts};
use crate::selectors::{Candidates, Match, SelectorOrigin};
use crate::state::AllocatedState;

/// `AllocationResultsMaxSize`.
pub(crate) const MAX_RESULTS: i64 = 32;

/// Why the search stopped early.
#[derive(Debug)]
pub(crate) enum Stop {
    /// `errAllocationResultMaxSizeExceeded`: handled inside the search.
    MaxSizeExceeded,
    /// A fatal error with upstream's message.
    Fatal(String),
}

/// One request or subrequest as the search sees it (upstream `requestData`).
#[derive(Debug)]
pub(crate) struct RequestData<'a> {
    pub spec: &'a RequestSpec,
    /// Name of the parent request for subrequests.
    pub parent: Option<&'a str>,
    pub class: ClassId,
    pub num_devices: i64,
    /// The devices of an `All` request, in pool order: (pool index, device).
    pub all_devices: Vec<(usize, DeviceIdx)>,
    /// The devices the request's selectors pick on this node (the selector set's, computed
    /// once per node and kept for the snapshot's life).
    pub candidates: &'a Candidates,
}

/// The candidates of a request without a selector set (its class is unknown or a selector
/// empty: [`Search::validate_request`] reports that before anything looks at them).
static NO_CANDIDATES: Candidates = Candidates {
    entries: Vec::new(),
    has_error: false,
};

/// Where a device is in the node's search order.
#[derive(Debug, Clone, Copy)]
struct Position {
    pool: usize,
    position: usize,
    device: DeviceIdx,
}

/// A picked device (upstream `internalDeviceResult`).
#[derive(Debug, Clone)]
pub(crate) struct Pick {
    pub claim: usize,
    pub request: usize,
    pub sub: usize,
    pub device: DeviceIdx,
    pub pool: usize,
    pub consumed_capacity: Option<CapacityAmounts>,
    /// Whether the pick recorded the device in `allocating` (non-shared devices).
    exclusive: bool,
    /// Whether the pick added to `consumed_counters`.
    counted: bool,
    /// Whether the pick added to `allocating_capacity`.
    capacity_added: bool,
}

/// A claim constraint during one call: what preparation worked out for it (its attribute's
/// column, where it applies), and what the picks so far hold it to.
#[derive(Debug)]
struct ConstraintState<'a> {
    plan: &'a ConstraintPlan,
    /// How many picks the constraint holds.
    count: usize,
    kind: ConstraintKind,
}

#[derive(Debug)]
enum ConstraintKind {
    /// The value every pick must have (that of the first).
    Match { value: Option<AttrValue> },
    /// Upstream keys the values seen by *base request name* (SPEC.md §3.11 quirk).
    Distinct { values: BTreeMap<String, AttrValue> },
}

/// Upstream's comparison in constraints: `None` when the first value's kind is not one the
/// incubating allocator compares (lists, no value), otherwise equality of same-kind values.
fn same_kind_equal(a: &AttrValue, b: &AttrValue) -> Option<bool> {
    match (a, b) {
        (AttrValue::String(x), AttrValue::String(y)) => Some(x == y),
        (AttrValue::Int(x), AttrValue::Int(y)) => Some(x == y),
        (AttrValue::Bool(x), AttrValue::Bool(y)) => Some(x == y),
        (AttrValue::Version(x), AttrValue::Version(y)) => Some(x == y),
        (a, _) if !a.is_scalar() => None,
        _ => Some(false),
    }
}

impl<'a> ConstraintState<'a> {
    fn new(plan: &'a ConstraintPlan) -> ConstraintState<'a> {
        let kind = if plan.distinct {
            ConstraintKind::Distinct {
                values: BTreeMap::new(),
            }
        } else {
            ConstraintKind::Match { value: None }
        };
        ConstraintState {
            plan,
            count: 0,
            kind,
        }
    }

    /// Adds `device`, picked for (sub)request `sub` of request `request` (named `base`); its
    /// value is copied only where the constraint keeps it (a copy of a string shares it: an
    /// atomic count, twice).
    fn add(
        &mut self,
        (request, sub, base): (usize, usize, &str),
        index: &Index,
        device: DeviceIdx,
    ) -> bool {
        if !self.plan.applies(request, sub) {
            return true;
        }
        let Some(v) = self.plan.column.value(index, device) else {
            return false;
        };
        match &mut self.kind {
            ConstraintKind::Match { value: stored } => {
                if self.count == 0 {
                    *stored = Some(v.clone());
                } else if stored
                    .as_ref()
                    .is_none_or(|s| same_kind_equal(v, s) != Some(true))
                {
                    return false;
                }
            }
            ConstraintKind::Distinct { values } => {
                if self.count > 0 {
                    for stored in values.values() {
                        match same_kind_equal(v, stored) {
                            // Unknown value type of the new device: no match.
                            None => return false,
                            Some(true) => return false,
                            Some(false) => {}
                        }
                    }
                }
                values.insert(base.to_string(), v.clone());
            }
        }
        self.count += 1;
        true
    }

    /// Whether `add` could succeed for `device` now: the attribute exists and, for a
    /// matchAttribute that already has devices, equals the stored value. Never changes state.
    fn could_accept(
        &self,
        (request, sub): (usize, usize),
        index: &Index,
        device: DeviceIdx,
    ) -> bool {
        if !self.plan.applies(request, sub) {
            return true;
        }
        let Some(v) = self.plan.column.value(index, device) else {
            return false;
        };
        match &self.kind {
            ConstraintKind::Match { value: stored } => {
                self.count == 0
                    || stored
                        .as_ref()
                        .is_some_and(|s| same_kind_equal(v, s) == Some(true))
            }
            ConstraintKind::Distinct { .. } => true,
        }
    }

    /// Takes back the last [`ConstraintState::add`] for (sub)request `sub` of request
    /// `request` (named `base`).
    fn remove(&mut self, (request, sub, base): (usize, usize, &str)) {
        if !self.plan.applies(request, sub) {
            return;
        }
        if let ConstraintKind::Distinct { values } = &mut self.kind {
            values.remove(base);
        }
        self.count = self.count.saturating_sub(1);
    }
}

/// Formats a claim as `namespace/name` only when an error message needs it.
struct ClaimName<'a>(&'a PreparedClaim);

impl std::fmt::Display for ClaimName<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.0.namespace, self.0.name)
    }
}

/// The state of one `Allocate` call.
pub(crate) struct Search<'a> {
    pub index: &'a Index,
    pub state: &'a AllocatedState,
    pub node: &'a NodeFacts,
    pub node_id: NodeId,
    pub pools: &'a NodePools,
    pub claims: &'a [&'a PreparedClaim],
    /// `[claim][request][subrequest]`; exact requests have one entry.
    pub requests: Vec<Vec<Vec<RequestData<'a>>>>,
    /// The chosen subrequest per `[claim][request]`.
    pub selected_sub: Vec<Vec<usize>>,
    constraints: Vec<Vec<ConstraintState<'a>>>,
    /// Devices picked exclusively in this call, with the claim they were picked for.
    allocating: Vec<(DeviceKey, usize)>,
    /// Capacity consumed by shared picks in this call.
    allocating_capacity: BTreeMap<DeviceKey, CapacityAmounts>,
    /// Counters consumed by picks in this call, per pool index (slots of `PoolCounters`).
    consumed_counters: BTreeMap<usize, Vec<i128>>,
    pub picks: Vec<Vec<Pick>>,
    pub steps: u64,
}

impl<'a> Search<'a> {
    /// Per-claim preprocessing (SPEC.md §3.4), in upstream's order, so the first error is the
    /// same one upstream reports.
    pub fn new(
        index: &'a Index,
        state: &'a AllocatedState,
        node_id: NodeId,
        pools: &'a NodePools,
        claims: &'a [&'a PreparedClaim],
    ) -> Result<Search<'a>, String> {
        let mut search = Search {
            index,
            state,
            node: index.node_facts(node_id),
            node_id,
            pools,
            claims,
            requests: Vec::with_capacity(claims.len()),
            selected_sub: Vec::with_capacity(claims.len()),
            constraints: Vec::with_capacity(claims.len()),
            allocating: Vec::new(),
            allocating_capacity: BTreeMap::new(),
            consumed_counters: BTreeMap::new(),
            picks: Vec::with_capacity(claims.len()),
            steps: 0,
        };
        for claim in claims {
            let mut min_devices: i64 = 0;
            let mut per_request = Vec::with_capacity(claim.requests.len());
            for request in &claim.requests {
                match &request.body {
                    RequestBody::FirstAvailable(subs) => {
                        let mut min_per_request = i64::MAX;
                        let mut entries = Vec::with_capacity(subs.len());
                        for sub in subs {
                            let data = search.validate_request(claim, sub, Some(&request.name))?;
                            min_per_request = min_per_request.min(data.num_devices);
                            entries.push(data);
                        }
                        min_devices = min_devices.saturating_add(min_per_request);
                        per_request.push(entries);
                    }
                    RequestBody::Exact(spec) => {
                        let data = search.validate_request(claim, spec, None)?;
                        min_devices = min_devices.saturating_add(data.num_devices);
                        per_request.push(vec![data]);
                    }
                    RequestBody::Unknown => {
                        return Err(format!(
                            "claim {}, request {}: unknown request type",
                            claim.display_name(),
                            request.name
                        ));
                    }
                }
            }
            if min_devices > MAX_RESULTS {
                return Err(format!(
                    "claim {}: number of requested devices {min_devices} exceeds the claim limit of {MAX_RESULTS}",
                    claim.display_name()
                ));
            }
            let mut constraints = Vec::with_capacity(claim.constraints.len());
            for (i, plan) in claim.constraint_plans.iter().enumerate() {
                match plan {
                    Some(plan) => constraints.push(ConstraintState::new(plan)),
                    None => {
                        return Err(format!(
                            "claim {}, constraint #{i}: empty constraint (unsupported constraint type?)",
                            claim.display_name()
                        ));
                    }
                }
            }
            // Room for the devices a solution of this claim needs at least.
            search.picks.push(Vec::with_capacity(
                min_devices.clamp(0, MAX_RESULTS) as usize
            ));
            search.selected_sub.push(vec![0; per_request.len()]);
            search.requests.push(per_request);
            search.constraints.push(constraints);
            // Room for the devices a solution needs at least (at most the limit, checked
            // above), so that picking them does not grow the list one push at a time.
            search.allocating.reserve(min_devices as usize);
        }
        Ok(search)
    }

    fn validate_request(
        &mut self,
        claim: &PreparedClaim,
        spec: &'a RequestSpec,
        parent: Option<&'a str>,
    ) -> Result<RequestData<'a>, String> {
        let claim_name = ClaimName(claim);
        if let Some(i) = spec.empty_selector {
            return Err(format!(
                "claim {claim_name}, request {}, selector #{i}: CEL expression empty (unsupported selector type?)",
                spec.name
            ));
        }
        if !self.index.features.admin_access && spec.admin_access.is_some() {
            return Err(format!(
                "claim {claim_name}, request {}: admin access is requested, but the feature is disabled",
                spec.name
            ));
        }
        if spec.class_name.is_empty() {
            return Err(format!(
                "claim {claim_name}, request {}: missing device class name (unsupported request type?)",
                spec.name
            ));
        }
        let Some(class) = spec.class else {
            return Err(format!(
                "claim {claim_name}, request {}: could not retrieve device class {}: deviceclass.resource.k8s.io \"{}\" not found",
                spec.name, spec.class_name, spec.class_name
            ));
        };
        if let Err(e) = &spec.capacity {
            return Err(format!("claim {claim_name}, request {}: {e}", spec.name));
        }
        let candidates = match &spec.selector_set {
            Some(set) => set.set.candidates(self.index, self.node_id, self.pools),
            None => &NO_CANDIDATES,
        };
        let mut data = RequestData {
            spec,
            parent,
            class,
            num_devices: 0,
            all_devices: Vec::new(),
            candidates,
        };
        match &spec.mode {
            AllocationMode::ExactCount => data.num_devices = spec.count,
            AllocationMode::All => {
                for (p, pool) in self.pools.pools.iter().enumerate() {
                    let pool_id = format!("{}/{}", pool.driver, pool.pool);
                    if pool.incomplete {
                        return Err(format!(
                            "claim {claim_name}, request {}: asks for all devices, but resource pool {pool_id} is currently being updated",
                            spec.name
                        ));
                    }
                    if pool.invalid.is_some() {
                        return Err(format!(
                            "claim {claim_name}, request {}: asks for all devices, but resource pool {pool_id} is currently invalid",
                            spec.name
                        ));
                    }
                    for &device in &pool.devices {
                        if !self.is_selectable(claim, &data, device)? {
                            continue;
                        }
                        if self.index.features.consumable_capacity
                            && self.request_fits_capacity(&data, device) != Some(true)
                        {
                            continue;
                        }
                        data.all_devices.push((p, device));
                    }
                }
                data.num_devices = data.all_devices.len() as i64;
            }
            AllocationMode::Unsupported(mode) => {
                return Err(format!(
                    "claim {claim_name}, request {}: unsupported count mode {mode}",
                    spec.name
                ));
            }
        }
        Ok(data)
    }

    /// `isSelectable`: class and request selectors (cached per snapshot), then per-device node
    /// selection. Devices with binding conditions need the binding-conditions feature.
    fn is_selectable(
        &self,
        claim: &PreparedClaim,
        data: &RequestData<'_>,
        device: DeviceIdx,
    ) -> Result<bool, String> {
        let entry = self.index.device(device);
        if !self.index.features.device_binding_and_status
            && entry
                .binding_conditions
                .as_ref()
                .is_some_and(|c| !c.is_empty())
        {
            return Ok(false);
        }
        let Some(set) = &data.spec.selector_set else {
            return Ok(false);
        };
        match set.set.matches(self.index, device) {
            Match::Yes => {}
            Match::No => return Ok(false),
            Match::Failed(failure) => {
                let (driver, pool, name) = self.index.key_names(entry.key);
                let owner = match failure.origin {
                    SelectorOrigin::Class => {
                        format!("class {}", self.index.class_entry(data.class).name)
                    }
                    SelectorOrigin::Request => format!("claim {}", claim.display_name()),
                };
                return Err(if failure.compile {
                    format!(
                        "{owner}: selector #{}: CEL compile error: {}",
                        failure.index, failure.message
                    )
                } else {
                    format!(
                        "{owner}: selector #{} on device {driver}/{pool}/{name}: CEL runtime error: {}",
                        failure.index, failure.message
                    )
                });
            }
        }
        let slice = self.index.slice(entry.slice);
        if slice.per_device_node_selection_field {
            return node_matches(
                self.node,
                entry.node_name.as_deref().unwrap_or_default(),
                entry.all_nodes,
                entry.node_selector.as_ref(),
            );
        }
        Ok(true)
    }

    fn device_in_use(&self, key: DeviceKey) -> bool {
        self.state.is_exclusively_allocated(key) || self.allocating.iter().any(|(k, _)| *k == key)
    }

    fn allocating_for_claim(&self, key: DeviceKey, claim: usize) -> bool {
        self.allocating
            .iter()
            .any(|(k, c)| *k == key && *c == claim)
    }

    /// `CmpRequestOverCapacity`: `None` is upstream's error (the request names a capacity the
    /// device lacks), which callers treat as "skip this device".
    fn request_fits_capacity(&self, data: &RequestData<'_>, device: DeviceIdx) -> Option<bool> {
        let entry = self.index.device(device);
        let requests = data.spec.capacity.as_ref().ok().and_then(|c| c.as_ref());
        if let Some(requests) = requests
            && requests.keys().any(|name| entry.capacity(name).is_none())
        {
            return None;
        }
        if entry.capacity.is_empty() {
            return Some(true);
        }
        let committed = self.state.aggregated_capacity(entry.key);
        let allocating = self.allocating_capacity.get(&entry.key);
        for (name, capacity) in entry.capacity.iter() {
            let requested = requests.and_then(|r| r.get(&**name));
            let consumed = consumed_capacity(requested, capacity);
            if violates_policy(&consumed, capacity.policy.as_ref()) {
                return Some(false);
            }
            let mut total = match committed.and_then(|c| c.get(name)) {
                Some(already) => quantity::add(already, &consumed),
                None => consumed,
            };
            if let Some(more) = allocating.and_then(|a| a.get(name)) {
                total = quantity::add(&total, more);
            }
            if total.cmp_value(&capacity.value) == Ordering::Greater {
                return Some(false);
            }
        }
        Some(true)
    }

    /// Counters available in a pool of this node.
    fn available_counters(&self, pool: usize) -> Arc<[i128]> {
        pool_available_counters(self.index, self.state, self.node_id, self.pools, pool)
    }

    /// Whether counters alone rule the device out for the rest of this call.
    fn counters_block(&self, pool: usize, device: DeviceIdx) -> bool {
        let key = self.index.device(device).key;
        let shared_in_use = self.allocating_capacity.contains_key(&key);
        counters_block(
            self.index,
            self.state,
            self.node_id,
            self.pools,
            pool,
            device,
            shared_in_use,
        )
    }

    /// `checkAvailableCounters`: adds the device's consumption and checks every counter of the
    /// pool; on failure the consumption is taken back.
    fn take_counters(&mut self, pool: usize, device: DeviceIdx) -> bool {
        let available = self.available_counters(pool);
        let pools = self.pools;
        let Some(consumption) = pools.pools[pool].counters.consumption(device) else {
            return true;
        };
        let consumed = self
            .consumed_counters
            .entry(pool)
            .or_insert_with(|| vec![0; available.len()]);
        for &(slot, value) in consumption {
            consumed[slot as usize] += value;
        }
        let enough = available.iter().zip(consumed.iter()).all(|(a, c)| a >= c);
        if !enough {
            for &(slot, value) in consumption {
                consumed[slot as usize] -= value;
            }
        }
        enough
    }

    fn release_counters(&mut self, pool: usize, device: DeviceIdx) {
        let pools = self.pools;
        let (Some(consumption), Some(consumed)) = (
            pools.pools[pool].counters.consumption(device),
            self.consumed_counters.get_mut(&pool),
        ) else {
            return;
        };
        for &(slot, value) in consumption {
            consumed[slot as usize] -= value;
        }
    }

    /// `allocateOne`.
    pub fn allocate_one(
        &mut self,
        claim: usize,
        request: usize,
        sub: usize,
        device_index: i64,
        allocate_sub_request: bool,
        start: (usize, usize),
    ) -> Result<bool, Stop> {
        self.steps += 1;
        if claim >= self.claims.len() {
            return Ok(true);
        }
        if request >= self.requests[claim].len() {
            return match self.allocate_one(claim + 1, 0, 0, 0, false, (0, 0)) {
                Err(Stop::MaxSizeExceeded) => Ok(false),
                other => other,
            };
        }
        let is_sub_request = self.requests[claim][request][sub].parent.is_some();
        if !allocate_sub_request && is_sub_request {
            let mut all_exceeded = true;
            for s in 0..self.requests[claim][request].len() {
                match self.allocate_one(claim, request, s, device_index, true, (0, 0)) {
                    Err(Stop::MaxSizeExceeded) => continue,
                    Err(fatal) => return Err(fatal),
                    Ok(true) => {
                        self.selected_sub[claim][request] = s;
                        return Ok(true);
                    }
                    Ok(false) => all_exceeded = false,
                }
            }
            return if all_exceeded {
                Err(Stop::MaxSizeExceeded)
            } else {
                Ok(false)
            };
        }

        let data = &self.requests[claim][request][sub];
        let all = data.spec.mode == AllocationMode::All;
        if all && data.all_devices.is_empty() {
            return Ok(false);
        }
        if device_index >= data.num_devices {
            return self.allocate_one(claim, request + 1, 0, 0, false, (0, 0));
        }
        let after = self.picks[claim].len() as i64 + data.num_devices - device_index;
        if after > MAX_RESULTS {
            return Err(Stop::MaxSizeExceeded);
        }

        if all {
            let (pool, device) = data.all_devices[device_index as usize];
            if !self.allocate_device(claim, request, sub, pool, device, true)? {
                return Ok(false);
            }
            let done = self.allocate_one(
                claim,
                request,
                sub,
                device_index + 1,
                allocate_sub_request,
                (0, 0),
            );
            return match done {
                Ok(true) => Ok(true),
                other => {
                    self.undo_last_pick(claim);
                    other
                }
            };
        }

        let admin = data.spec.admin();
        let (start_pool, start_device) = start;
        if !data.candidates.has_error {
            return self.search_candidates(
                claim,
                request,
                sub,
                device_index,
                allocate_sub_request,
                start,
            );
        }
        for p in start_pool..self.pools.pools.len() {
            let pool = &self.pools.pools[p];
            if !pool.usable() {
                continue;
            }
            let first = if p == start_pool { start_device } else { 0 };
            for position in first..pool.devices.len() {
                let device = pool.devices[position];
                let key = self.index.device(device).key;
                if admin && self.allocating_for_claim(key, claim) {
                    continue;
                }
                if !admin && self.device_in_use(key) {
                    continue;
                }
                let data = &self.requests[claim][request][sub];
                if !self
                    .is_selectable(self.claims[claim], data, device)
                    .map_err(Stop::Fatal)?
                {
                    continue;
                }
                let at = Position {
                    pool: p,
                    position,
                    device,
                };
                if self.try_device(claim, request, sub, device_index, allocate_sub_request, at)? {
                    return Ok(true);
                }
            }
        }
        Ok(false)
    }

    /// The end of upstream's device loop for one selectable, unused device: the capacity
    /// check, `allocateDevice`, then the rest of the search from the next position; the pick
    /// is undone unless the search succeeded.
    fn try_device(
        &mut self,
        claim: usize,
        request: usize,
        sub: usize,
        device_index: i64,
        allocate_sub_request: bool,
        at: Position,
    ) -> Result<bool, Stop> {
        let data = &self.requests[claim][request][sub];
        if self.index.features.consumable_capacity
            && self.request_fits_capacity(data, at.device) != Some(true)
        {
            return Ok(false);
        }
        if !self.allocate_device(claim, request, sub, at.pool, at.device, false)? {
            return Ok(false);
        }
        let next = (at.pool, at.position + 1);
        match self.allocate_one(
            claim,
            request,
            sub,
            device_index + 1,
            allocate_sub_request,
            next,
        ) {
            Ok(true) => Ok(true),
            Ok(false) => {
                self.undo_last_pick(claim);
                Ok(false)
            }
            Err(stop) => {
                self.undo_last_pick(claim);
                Err(stop)
            }
        }
    }

    /// The device loop of `allocateOne` over the precomputed selectable devices (no device of
    /// the node makes the selectors fail). Equivalent to upstream's scan: the devices it skips
    /// here are exactly those upstream finds not selectable. Subtrees that cannot hold a
    /// solution because fewer free devices remain than the request still needs are cut.
    fn search_candidates(
        &mut self,
        claim: usize,
        request: usize,
        sub: usize,
        device_index: i64,
        allocate_sub_request: bool,
        start: (usize, usize),
    ) -> Result<bool, Stop> {
        let data = &self.requests[claim][request][sub];
        let candidates = data.candidates;
        let admin = data.spec.admin();
        let needed = data.num_devices - device_index;
        let entries = &candidates.entries;
        let first = entries.partition_point(|e| (e.pool as usize, e.position as usize) < start);
        let usable = |search: &Search<'_>, key: DeviceKey| {
            if admin {
                !search.allocating_for_claim(key, claim)
            } else {
                !search.device_in_use(key)
            }
        };
        if self.feasible(claim, request, sub, first, needed) < needed {
            return Ok(false);
        }
        // Entering a request: look ahead at every request still to come. Picks only ever
        // shrink what they can get, so one that cannot be satisfied now never will be in
        // this subtree (this is what turns upstream's exponential search for an impossible
        // matchAttribute into a handful of steps).
        if device_index == 0 && !self.later_requests_feasible(claim, request) {
            return Ok(false);
        }
        for e in &entries[first..] {
            if !usable(self, e.key) {
                continue;
            }
            let at = Position {
                pool: e.pool as usize,
                position: e.position as usize,
                device: e.device,
            };
            if self.try_device(claim, request, sub, device_index, allocate_sub_request, at)? {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// How many devices (at most `needed`) from position `first` of the candidate list the
    /// (sub)request could still take: free, and acceptable to the claim's constraints as they
    /// stand (a matchAttribute with devices must see the same value; every applicable
    /// constraint needs the attribute). An upper bound on what the search can pick.
    fn feasible(&self, claim: usize, request: usize, sub: usize, first: usize, needed: i64) -> i64 {
        let data = &self.requests[claim][request][sub];
        let admin = data.spec.admin();
        let constraints = &self.constraints[claim];
        let mut count = 0i64;
        for e in &data.candidates.entries[first..] {
            if count >= needed {
                break;
            }
            let free = if admin {
                !self.allocating_for_claim(e.key, claim)
            } else {
                !self.device_in_use(e.key)
            };
            if !free || self.counters_block(e.pool as usize, e.device) {
                continue;
            }
            if !constraints
                .iter()
                .all(|c| c.could_accept((request, sub), self.index, e.device))
            {
                continue;
            }
            count += 1;
        }
        count
    }

    /// Whether every request after (claim, request) still has enough feasible devices (for
    /// `firstAvailable`, some subrequest). Only meaningful when none of them can fail with an
    /// error (selector errors, `All` mode); then `false` proves there is no solution.
    fn later_requests_feasible(&self, claim: usize, request: usize) -> bool {
        let mut any_infeasible = false;
        for c in claim..self.requests.len() {
            let from = if c == claim { request + 1 } else { 0 };
            for r in from..self.requests[c].len() {
                let subs = &self.requests[c][r];
                if subs
                    .iter()
                    .any(|d| d.candidates.has_error || d.spec.mode == AllocationMode::All)
                {
                    return true;
                }
                if !any_infeasible
                    && !(0..subs.len()).any(|s| {
                        self.feasible(c, r, s, 0, subs[s].num_devices) >= subs[s].num_devices
                    })
                {
                    any_infeasible = true;
                }
            }
        }
        !any_infeasible
    }

    /// A cheap necessary condition checked before the search: every request finds at least
    /// as many free selectable devices on the node as it needs (for `firstAvailable`, some
    /// subrequest does). `false` proves there is no solution. Only used when no error can
    /// occur in the search (no selector errors on the node, no `All` requests), so that
    /// returning "no solution" early never hides an error upstream would report.
    pub fn might_fit(&self) -> bool {
        for claim in &self.requests {
            for request in claim {
                let mut any_sub_fits = false;
                for data in request {
                    if data.candidates.has_error || data.spec.mode == AllocationMode::All {
                        return true;
                    }
                    let admin = data.spec.admin();
                    let mut free = 0i64;
                    for e in &data.candidates.entries {
                        if admin || !self.state.is_exclusively_allocated(e.key) {
                            free += 1;
                            if free >= data.num_devices {
                                break;
                            }
                        }
                    }
                    if free >= data.num_devices {
                        any_sub_fits = true;
                    }
                }
                if !any_sub_fits {
                    return self.any_error_possible();
                }
            }
        }
        true
    }

    /// Whether some request of the call could meet an error during the search.
    fn any_error_possible(&self) -> bool {
        self.requests
            .iter()
            .flatten()
            .flatten()
            .any(|d| d.candidates.has_error || d.spec.mode == AllocationMode::All)
    }

    /// `allocateDevice`: checks in upstream's order; on success records the pick.
    fn allocate_device(
        &mut self,
        claim: usize,
        request: usize,
        sub: usize,
        pool: usize,
        device: DeviceIdx,
        must: bool,
    ) -> Result<bool, Stop> {
        let index = self.index;
        let features = index.features;
        let entry = index.device(device);
        let key = entry.key;
        let (spec, parent) = {
            let data = &self.requests[claim][request][sub];
            (data.spec, data.parent)
        };
        let admin = spec.admin();
        let allow_multiple = features.consumable_capacity && entry.allow_multiple_allocations;
        if !allow_multiple && admin && self.allocating_for_claim(key, claim) {
            return Ok(false);
        }
        if !admin && self.device_in_use(key) {
            return Ok(false);
        }
        if !features.partitionable_devices && !entry.consumes_counters.is_empty() {
            return Ok(false);
        }
        let capacity_in_use = self.state.aggregated_capacity(key).is_some()
            || self.allocating_capacity.contains_key(&key);
        let skip_counter_check = allow_multiple && capacity_in_use;
        let mut counted = false;
        if !skip_counter_check && !entry.consumes_counters.is_empty() {
            if !self.take_counters(pool, device) {
                return Ok(false);
            }
            counted = true;
        }
        let picked_for = (request, sub, parent.unwrap_or(spec.name.as_str()));
        // Every rejection after the counters were taken gives them back (upstream fixed the
        // missing rollback in kubernetes/kubernetes#140431).
        if features.device_taints && taint_prevents_allocation(&entry.taints, &spec.tolerations) {
            if counted {
                self.release_counters(pool, device);
            }
            return Ok(false);
        }
        let num_constraints = self.constraints[claim].len();
        for i in 0..num_constraints {
            if self.constraints[claim][i].add(picked_for, index, device) {
                continue;
            }
            if must {
                let (d, p, n) = index.key_names(key);
                return Err(Stop::Fatal(format!(
                    "claim {}, request {}: cannot add device {d}/{p}/{n} because a claim constraint would not be satisfied",
                    self.claims[claim].display_name(),
                    spec.name
                )));
            }
            for e in 0..i {
                self.constraints[claim][e].remove(picked_for);
            }
            if counted {
                self.release_counters(pool, device);
            }
            return Ok(false);
        }
        if !allow_multiple {
            self.allocating.push((key, claim));
        }
        let mut consumed_result = None;
        let mut capacity_added = false;
        if features.consumable_capacity {
            // The device loop ([`Search::try_device`]) checked the capacity just before, on
            // the same state, so only `All` mode (`must`) checks it here.
            if must
                && self.request_fits_capacity(&self.requests[claim][request][sub], device)
                    != Some(true)
            {
                // Upstream returns here without undoing constraints, the in-use mark and
                // counters; this path is reachable only in All mode. Undo all of it, like the
                // fixed upstream code does for the other rejection paths.
                for c in 0..num_constraints {
                    self.constraints[claim][c].remove(picked_for);
                }
                if !allow_multiple {
                    self.allocating.pop();
                }
                if counted {
                    self.release_counters(pool, device);
                }
                return Ok(false);
            }
            if allow_multiple {
                let requests = spec.capacity.as_ref().ok().and_then(|c| c.as_ref());
                let consumed: CapacityAmounts = entry
                    .capacity
                    .iter()
                    .map(|(name, cap)| {
                        (
                            Arc::clone(name),
                            consumed_capacity(requests.and_then(|r| r.get(&**name)), cap),
                        )
                    })
                    .collect();
                let totals = self.allocating_capacity.entry(key).or_default();
                for (name, value) in &consumed {
                    match totals.get_mut(name) {
                        Some(total) => *total = quantity::add(total, value),
                        None => {
                            totals.insert(name.clone(), value.clone());
                        }
                    }
                }
                capacity_added = true;
                if !consumed.is_empty() {
                    consumed_result = Some(consumed);
                }
            }
        }
        self.picks[claim].push(Pick {
            claim,
            request,
            sub,
            device,
            pool,
            consumed_capacity: consumed_result,
            exclusive: !allow_multiple,
            counted,
            capacity_added,
        });
        Ok(true)
    }

    fn undo_last_pick(&mut self, claim: usize) {
        let Some(pick) = self.picks[claim].pop() else {
            return;
        };
        let data = &self.requests[pick.claim][pick.request][pick.sub];
        let base = data.parent.unwrap_or(data.spec.name.as_str());
        for c in &mut self.constraints[claim] {
            c.remove((pick.request, pick.sub, base));
        }
        let key = self.index.device(pick.device).key;
        if pick.exclusive
            && let Some(pos) = self
                .allocating
                .iter()
                .rposition(|(k, c)| *k == key && *c == claim)
        {
            self.allocating.remove(pos);
        }
        if pick.capacity_added
            && let Some(totals) = self.allocating_capacity.get_mut(&key)
        {
            let device = self.index.device(pick.device);
            let requests = data.spec.capacity.as_ref().ok().and_then(|c| c.as_ref());
            for (name, cap) in device.capacity.iter() {
                let consumed = consumed_capacity(requests.and_then(|r| r.get(&**name)), cap);
                if let Some(total) = totals.get_mut(name) {
                    *total = quantity::sub(total, &consumed);
                }
            }
            if totals.values().all(Quantity::is_zero) {
                self.allocating_capacity.remove(&key);
            }
        }
        if pick.counted {
            self.release_counters(pick.pool, pick.device);
        }
    }
}

/// Counters available in pool `pool` of the node: the sets' values minus what allocated
/// devices of the pool consume (on this node or others). Upstream lets this go negative.
fn pool_available_counters(
    index: &Index,
    state: &AllocatedState,
    node: NodeId,
    pools: &NodePools,
    pool: usize,
) -> Arc<[i128]> {
    let view = &pools.pools[pool];
    state.available_counters(node.0, pool as u32, view.pool_key, || {
        let mut available = view.counters.totals.clone();
        for (device, consumption) in &view.counters.consumers {
            if state.is_allocated(index.device(*device).key) {
                for &(slot, value) in consumption {
                    available[slot as usize] -= value;
                }
            }
        }
        available
    })
}

/// Whether counters alone rule a device out for the rest of an Allocate call: upstream's
/// check would fail even if the device were the only one picked. Picks only add consumption,
/// so a blocked device stays blocked. `shared_in_use`: the call already picked a share of the
/// device (later shares of a shared device do not consume counters again).
fn counters_block(
    index: &Index,
    state: &AllocatedState,
    node: NodeId,
    pools: &NodePools,
    pool: usize,
    device: DeviceIdx,
    shared_in_use: bool,
) -> bool {
    let entry = index.device(device);
    if entry.consumes_counters.is_empty() || !index.features.partitionable_devices {
        return false;
    }
    if shared_in_use && index.features.consumable_capacity && entry.allow_multiple_allocations {
        return false;
    }
    if shared_skips_counters(index, state, device) {
        return false;
    }
    let Some(consumption) = pools.pools[pool].counters.consumption(device) else {
        return false;
    };
    let available = pool_available_counters(index, state, node, pools, pool);
    blocked_by(&available, consumption)
}

/// A shared device whose capacity is already in use does not consume counters again.
fn shared_skips_counters(index: &Index, state: &AllocatedState, device: DeviceIdx) -> bool {
    let entry = index.device(device);
    index.features.consumable_capacity
        && entry.allow_multiple_allocations
        && state.aggregated_capacity(entry.key).is_some()
}

/// Upstream's counter check for a device picked alone: every counter of the pool must stay
/// non-negative. A counter already overdrawn by allocated devices blocks every consumer.
fn blocked_by(available: &[i128], consumption: &[(u32, i128)]) -> bool {
    available.iter().any(|a| *a < 0)
        || consumption
            .iter()
            .any(|&(slot, value)| available[slot as usize] < value)
}

/// A cheap proof that plain claims (see [`PreparedClaim`]) have no solution on the node:
/// some request, for each of its subrequests, finds fewer free selectable devices than it
/// needs. Upstream's preprocessing cannot fail for plain claims, and with no selector error
/// among the node's devices the search could not fail either, so "no solution" is exactly
/// what upstream returns.
pub(crate) fn cannot_fit(
    index: &Index,
    state: &AllocatedState,
    node: NodeId,
    pools: &NodePools,
    claims: &[&PreparedClaim],
) -> bool {
    let mut lists = Vec::new();
    let mut rejected = false;
    let mut available: BTreeMap<usize, Arc<[i128]>> = BTreeMap::new();
    for claim in claims {
        for request in &claim.requests {
            let specs: &[RequestSpec] = match &request.body {
                RequestBody::Exact(spec) => std::slice::from_ref(spec),
                RequestBody::FirstAvailable(subs) => subs,
                RequestBody::Unknown => return false,
            };
            let mut any_fits = false;
            for spec in specs {
                let Some(set) = &spec.selector_set else {
                    return false;
                };
                let candidates = set.set.candidates(index, node, pools);
                let mut free = 0i64;
                for e in &candidates.entries {
                    if free >= spec.count {
                        break;
                    }
                    if state.is_exclusively_allocated(e.key) {
                        continue;
                    }
                    let p = e.pool as usize;
                    if let Some(consumption) = pools.pools[p].counters.consumption(e.device)
                        && !shared_skips_counters(index, state, e.device)
                    {
                        let available = available.entry(p).or_insert_with(|| {
                            pool_available_counters(index, state, node, pools, p)
                        });
                        if blocked_by(available, consumption) {
                            continue;
                        }
                    }
                    free += 1;
                }
                any_fits |= free >= spec.count;
                lists.push(candidates);
            }
            rejected |= !any_fits;
        }
    }
    rejected && lists.iter().all(|c| !c.has_error)
}

/// `taintPreventsAllocation`: a NoSchedule or NoExecute taint that no toleration tolerates.
pub(crate) fn taint_prevents_allocation(
    taints: &[k8s_openapi::api::resource::v1::DeviceTaint],
    tolerations: &[DeviceToleration],
) -> bool {
    taints.iter().any(|taint| {
        matches!(taint.effect.as_str(), "NoSchedule" | "NoExecute")
            && !tolerations.iter().any(|t| tolerates_taint(t, taint))
    })
}

/// `resourceclaim.ToleratesTaint`.
pub fn tolerates_taint(
    toleration: &DeviceToleration,
    taint: &k8s_openapi::api::resource::v1::DeviceTaint,
) -> bool {
    if let Some(effect) = toleration.effect.as_deref()
        && !effect.is_empty()
        && effect != taint.effect
    {
        return false;
    }
    if let Some(key) = toleration.key.as_deref()
        && !key.is_empty()
        && key != taint.key
    {
        return false;
    }
    match toleration.operator.as_deref().unwrap_or("") {
        "" | "Equal" => {
            toleration.value.as_deref().unwrap_or("") == taint.value.as_deref().unwrap_or("")
        }
        "Exists" => true,
        _ => false,
    }
}

/// `calculateConsumedCapacity`.
pub(crate) fn consumed_capacity(requested: Option<&Quantity>, capacity: &Capacity) -> Quantity {
    let Some(requested) = requested else {
        return capacity
            .policy
            .as_ref()
            .and_then(|p| p.default.clone())
            .unwrap_or_else(|| capacity.value.clone());
    };
    let Some(policy) = &capacity.policy else {
        return requested.clone();
    };
    if let Some(range) = &policy.valid_range {
        if requested.cmp_value(&range.min) == Ordering::Less {
            return range.min.clone();
        }
        let Some(step) = &range.step else {
            return requested.clone();
        };
        // Upstream works in whole units (`Quantity.Value()` rounds up) and builds a BinarySI
        // quantity from the result.
        let (requested, step, min) = (requested.value(), step.value(), range.min.value());
        if step == 0 {
            return Quantity::from_i64(min, dra_types::Format::BinarySI);
        }
        let added = requested.saturating_sub(min);
        let mut n = added / step;
        if added % step != 0 {
            n += 1;
        }
        return Quantity::from_i64(
            min.saturating_add(step.saturating_mul(n)),
            dra_types::Format::BinarySI,
        );
    }
    if let Some(values) = &policy.valid_values {
        return values
            .iter()
            .find(|v| requested.cmp_value(v) != Ordering::Greater)
            .cloned()
            .unwrap_or_else(|| requested.clone());
    }
    requested.clone()
}

/// `violatesPolicy`.
pub(crate) fn violates_policy(value: &Quantity, policy: Option<&RequestPolicy>) -> bool {
    let Some(policy) = policy else {
        return false;
    };
    if policy.default.as_ref().is_some_and(|d| d == value) {
        return false;
    }
    if let Some(range) = &policy.valid_range {
        if range
            .max
            .as_ref()
            .is_some_and(|max| value.cmp_value(max) == Ordering::Greater)
        {
            return true;
        }
        if let Some(step) = &range.step {
            let step = step.value();
            if step != 0 && (value.value().saturating_sub(range.min.value())) % step != 0 {
                return true;
            }
        }
        return false;
    }
    if let Some(values) = &policy.valid_values
        && !values.is_empty()
    {
        return !values.iter().any(|v| value.cmp_value(v) == Ordering::Equal);
    }
    false
}
