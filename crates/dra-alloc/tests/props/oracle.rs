//! Independent views of the rules the allocator must obey, written from SPEC.md §3 on the raw
//! Kubernetes objects, without using the allocator's own index, pools or selector cache:
//! pool gathering (§3.3), selectors (evaluated with `dra_cel` directly), taints (§3.12), node
//! selectors, and the invariant checks of every successful allocation.

use std::collections::{BTreeMap, BTreeSet};

use dra_types::Quantity;
use k8s_openapi::api::core::v1::{Node, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm};
use k8s_openapi::api::resource::v1::{
    AllocationResult, Device, DeviceAllocationConfiguration, DeviceAttribute, DeviceRequest,
    DeviceTaint, DeviceToleration, ResourceClaim, ResourceSlice,
};

use super::generate::Scenario;

/// One device as seen from one node: where it is and what it is.
#[derive(Debug, Clone, Copy)]
pub struct ODevice<'a> {
    pub slice: &'a ResourceSlice,
    pub device: &'a Device,
    /// Index of the pool in the node's pool list.
    pub pool: usize,
    /// Position in the pool's device list (search order).
    pub position: usize,
}

impl ODevice<'_> {
    pub fn driver(&self) -> &str {
        &self.slice.spec.driver
    }
    pub fn pool_name(&self) -> &str {
        &self.slice.spec.pool.name
    }
    pub fn triple(&self) -> (String, String, String) {
        (
            self.driver().to_string(),
            self.pool_name().to_string(),
            self.device.name.clone(),
        )
    }
    pub fn shared(&self) -> bool {
        self.device.allow_multiple_allocations == Some(true)
    }
}

/// A pool as one node sees it.
#[derive(Debug)]
pub struct OPool<'a> {
    pub driver: String,
    pub name: String,
    pub incomplete: bool,
    pub invalid: bool,
    /// Devices of the node-relevant device slices, in search order.
    pub devices: Vec<ODevice<'a>>,
}

impl OPool<'_> {
    pub fn usable(&self) -> bool {
        !self.incomplete && !self.invalid
    }
}

fn requirement_matches(req: &NodeSelectorRequirement, value: Option<&str>) -> bool {
    let values = req.values.as_deref().unwrap_or_default();
    match req.operator.as_str() {
        "In" => value.is_some_and(|v| values.iter().any(|x| x == v)),
        "NotIn" => !value.is_some_and(|v| values.iter().any(|x| x == v)),
        "Exists" => value.is_some(),
        "DoesNotExist" => value.is_none(),
        "Gt" | "Lt" => {
            let (Some(v), Some(bound)) = (
                value.and_then(|v| v.parse::<i64>().ok()),
                values.first().and_then(|b| b.parse::<i64>().ok()),
            ) else {
                return false;
            };
            if req.operator == "Gt" {
                v > bound
            } else {
                v < bound
            }
        }
        _ => false,
    }
}

fn term_matches(term: &NodeSelectorTerm, node: &Node) -> bool {
    let expressions = term.match_expressions.as_deref().unwrap_or_default();
    let fields = term.match_fields.as_deref().unwrap_or_default();
    if expressions.is_empty() && fields.is_empty() {
        // An empty term matches nothing.
        return false;
    }
    let labels = node.metadata.labels.clone().unwrap_or_default();
    expressions
        .iter()
        .all(|r| requirement_matches(r, labels.get(&r.key).map(String::as_str)))
        && fields.iter().all(|r| {
            r.key == "metadata.name" && requirement_matches(r, node.metadata.name.as_deref())
        })
}

/// Node selector semantics: terms ORed, requirements ANDed.
pub fn selector_matches(selector: &NodeSelector, node: &Node) -> bool {
    selector
        .node_selector_terms
        .iter()
        .any(|t| term_matches(t, node))
}

fn node_matches(
    node: &Node,
    name: Option<&str>,
    all: Option<bool>,
    selector: Option<&NodeSelector>,
) -> bool {
    if let Some(name) = name.filter(|n| !n.is_empty()) {
        return node.metadata.name.as_deref() == Some(name);
    }
    if all == Some(true) {
        return true;
    }
    selector.is_some_and(|s| selector_matches(s, node))
}

fn has_counters(slice: &ResourceSlice) -> bool {
    slice
        .spec
        .shared_counters
        .as_ref()
        .is_some_and(|c| !c.is_empty())
}

fn devices(slice: &ResourceSlice) -> &[Device] {
    slice.spec.devices.as_deref().unwrap_or_default()
}

/// Upstream `GatherPools` for one node, from SPEC.md §3.3.
pub fn gather_pools<'a>(scenario: &'a Scenario, node: &Node) -> Vec<OPool<'a>> {
    let node_name = node.metadata.name.as_deref().unwrap_or_default();
    let on_node = scenario.slices.iter().filter(|s| {
        s.spec
            .node_name
            .as_deref()
            .is_some_and(|n| !n.is_empty() && n == node_name)
    });
    let shared = scenario
        .slices
        .iter()
        .filter(|s| s.spec.node_name.as_deref().is_none_or(str::is_empty));
    let mut grouped: BTreeMap<(String, String), Vec<&ResourceSlice>> = BTreeMap::new();
    for slice in on_node.chain(shared) {
        let spec = &slice.spec;
        let relevant = if spec.node_name.as_deref().is_some_and(|n| !n.is_empty())
            || spec.all_nodes == Some(true)
            || spec.node_selector.is_some()
        {
            node_matches(
                node,
                spec.node_name.as_deref(),
                spec.all_nodes,
                spec.node_selector.as_ref(),
            )
        } else if spec.per_device_node_selection == Some(true) {
            devices(slice).iter().any(|d| {
                node_matches(
                    node,
                    d.node_name.as_deref(),
                    d.all_nodes,
                    d.node_selector.as_ref(),
                )
            })
        } else {
            false
        };
        if !relevant {
            continue;
        }
        let list = grouped
            .entry((spec.driver.clone(), spec.pool.name.clone()))
            .or_default();
        match list.first().map(|s| s.spec.pool.generation) {
            None => list.push(slice),
            Some(g) if spec.pool.generation > g => *list = vec![slice],
            Some(g) if spec.pool.generation == g => list.push(slice),
            Some(_) => {}
        }
    }
    let mut normal = Vec::new();
    let mut with_binding = Vec::new();
    for ((driver, name), relevant) in grouped {
        let generation = relevant[0].spec.pool.generation;
        let wanted = relevant[0].spec.pool.resource_slice_count;
        let mut all_of_pool: Vec<&ResourceSlice> = Vec::new();
        if relevant.len() as i64 != wanted {
            let same_pool = scenario
                .slices
                .iter()
                .filter(|s| s.spec.driver == driver && s.spec.pool.name == name);
            if same_pool
                .clone()
                .any(|s| s.spec.pool.generation > generation)
            {
                continue; // obsolete
            }
            all_of_pool = same_pool
                .filter(|s| s.spec.pool.generation == generation)
                .collect();
            if all_of_pool.len() as i64 != wanted {
                normal.push(OPool {
                    driver,
                    name,
                    incomplete: true,
                    invalid: false,
                    devices: Vec::new(),
                });
                continue;
            }
        }
        let mut relevant = relevant;
        relevant.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        let relevant_names: BTreeSet<&str> = relevant
            .iter()
            .filter_map(|s| s.metadata.name.as_deref())
            .collect();
        let device_slices: Vec<&ResourceSlice> = relevant
            .iter()
            .copied()
            .filter(|s| !has_counters(s))
            .collect();
        let counter_slices: Vec<&ResourceSlice> = relevant
            .iter()
            .copied()
            .chain(all_of_pool.iter().copied().filter(|s| {
                !relevant_names.contains(s.metadata.name.as_deref().unwrap_or_default())
            }))
            .filter(|s| has_counters(s))
            .collect();
        let other_device_slices: Vec<&ResourceSlice> = all_of_pool
            .iter()
            .copied()
            .filter(|s| {
                !has_counters(s)
                    && !relevant_names.contains(s.metadata.name.as_deref().unwrap_or_default())
            })
            .collect();
        let mut invalid = false;
        let mut names = BTreeSet::new();
        for slice in &device_slices {
            for d in devices(slice) {
                invalid |= !names.insert(d.name.as_str());
            }
        }
        let mut sets: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
        for slice in &counter_slices {
            for set in slice.spec.shared_counters.iter().flatten() {
                invalid |= sets
                    .insert(&set.name, set.counters.keys().map(String::as_str).collect())
                    .is_some();
            }
        }
        for slice in device_slices.iter().chain(other_device_slices.iter()) {
            for d in devices(slice) {
                for consumption in d.consumes_counters.iter().flatten() {
                    match sets.get(consumption.counter_set.as_str()) {
                        None => invalid = true,
                        Some(counters) => {
                            invalid |= consumption
                                .counters
                                .keys()
                                .any(|c| !counters.contains(c.as_str()));
                        }
                    }
                }
            }
        }
        let binding = !invalid
            && device_slices
                .iter()
                .any(|s| devices(s).iter().any(|d| d.binding_conditions.is_some()));
        let mut pool = OPool {
            driver,
            name,
            incomplete: false,
            invalid,
            devices: Vec::new(),
        };
        if !invalid {
            for slice in &device_slices {
                for d in devices(slice) {
                    pool.devices.push(ODevice {
                        slice,
                        device: d,
                        pool: 0,
                        position: 0,
                    });
                }
            }
        }
        if binding {
            with_binding.push(pool);
        } else {
            normal.push(pool);
        }
    }
    // `grouped` is a BTreeMap over (driver, pool): both groups are already in ID order.
    normal.extend(with_binding);
    for (p, pool) in normal.iter_mut().enumerate() {
        for (i, d) in pool.devices.iter_mut().enumerate() {
            d.pool = p;
            d.position = i;
        }
    }
    normal
}

/// The `device` CEL input built straight from the API object.
pub fn cel_input(driver: &str, device: &Device) -> dra_cel::DeviceInput {
    let attributes: Vec<(&str, dra_cel::AttributeValue)> = device
        .attributes
        .iter()
        .flatten()
        .map(|(k, a)| (k.as_str(), attribute_value(a)))
        .collect();
    let capacity: Vec<(&str, Quantity)> = device
        .capacity
        .iter()
        .flatten()
        .map(|(k, c)| (k.as_str(), quantity(&c.value.0)))
        .collect();
    dra_cel::DeviceInput::new(
        driver,
        attributes,
        capacity,
        device.allow_multiple_allocations == Some(true),
    )
}

fn attribute_value(a: &DeviceAttribute) -> dra_cel::AttributeValue {
    if let Some(v) = &a.string {
        dra_cel::AttributeValue::String(v.clone())
    } else if let Some(v) = a.int {
        dra_cel::AttributeValue::Int(v)
    } else if let Some(v) = a.bool {
        dra_cel::AttributeValue::Bool(v)
    } else if let Some(v) = &a.version {
        dra_cel::AttributeValue::Version(v.clone())
    } else {
        dra_cel::AttributeValue::Unset
    }
}

pub fn quantity(text: &str) -> Quantity {
    Quantity::parse(text).unwrap_or_else(|e| panic!("bad quantity {text}: {e}"))
}

pub fn nanos(text: &str) -> i128 {
    quantity(text).as_nanos()
}

/// A request or subrequest, flattened.
#[derive(Debug, Clone)]
pub struct ReqView {
    /// The parent request's name.
    pub base: String,
    /// The subrequest's name, for `firstAvailable` entries.
    pub sub: Option<String>,
    pub class: String,
    pub selectors: Vec<String>,
    pub all: bool,
    pub count: i64,
    pub admin: bool,
    pub tolerations: Vec<DeviceToleration>,
    pub capacity: Option<BTreeMap<String, String>>,
}

impl ReqView {
    pub fn full_name(&self) -> String {
        match &self.sub {
            Some(s) => format!("{}/{s}", self.base),
            None => self.base.clone(),
        }
    }
}

/// The alternatives of one request: one entry, or one per subrequest.
pub fn request_views(request: &DeviceRequest) -> Vec<ReqView> {
    if let Some(subs) = request.first_available.as_ref().filter(|s| !s.is_empty()) {
        return subs
            .iter()
            .map(|s| ReqView {
                base: request.name.clone(),
                sub: Some(s.name.clone()),
                class: s.device_class_name.clone(),
                selectors: s
                    .selectors
                    .iter()
                    .flatten()
                    .filter_map(|x| x.cel.as_ref().map(|c| c.expression.clone()))
                    .collect(),
                all: s.allocation_mode.as_deref() == Some("All"),
                count: s.count.unwrap_or(1),
                admin: false,
                tolerations: s.tolerations.clone().unwrap_or_default(),
                capacity: s
                    .capacity
                    .as_ref()
                    .and_then(|c| c.requests.as_ref())
                    .map(|r| r.iter().map(|(k, q)| (k.clone(), q.0.clone())).collect()),
            })
            .collect();
    }
    let e = request
        .exactly
        .as_ref()
        .expect("generated requests have a body");
    vec![ReqView {
        base: request.name.clone(),
        sub: None,
        class: e.device_class_name.clone(),
        selectors: e
            .selectors
            .iter()
            .flatten()
            .filter_map(|x| x.cel.as_ref().map(|c| c.expression.clone()))
            .collect(),
        all: e.allocation_mode.as_deref() == Some("All"),
        count: e.count.unwrap_or(1),
        admin: e.admin_access == Some(true),
        tolerations: e.tolerations.clone().unwrap_or_default(),
        capacity: e
            .capacity
            .as_ref()
            .and_then(|c| c.requests.as_ref())
            .map(|r| r.iter().map(|(k, q)| (k.clone(), q.0.clone())).collect()),
    }]
}

pub fn claim_requests(claim: &ResourceClaim) -> &[DeviceRequest] {
    claim
        .spec
        .as_ref()
        .and_then(|s| s.devices.as_ref())
        .and_then(|d| d.requests.as_deref())
        .unwrap_or_default()
}

/// Evaluates selectors with `dra_cel` and remembers the results.
#[derive(Debug, Default)]
pub struct Selectors {
    compiler: dra_cel::Compiler,
    cache: BTreeMap<(String, String, String, String), bool>,
}

impl Selectors {
    fn eval(&mut self, expression: &str, driver: &str, device: &Device) -> bool {
        let compiled = self
            .compiler
            .compile(expression)
            .unwrap_or_else(|e| panic!("generated selector {expression:?} does not compile: {e}"));
        compiled
            .evaluate(&cel_input(driver, device))
            .unwrap_or_else(|e| panic!("selector {expression:?} failed on {}: {e}", device.name))
    }

    /// Class and request selectors, per-device node selection and binding conditions
    /// (`isSelectable`, SPEC.md §3.7, all features on).
    pub fn selectable(
        &mut self,
        scenario: &Scenario,
        req: &ReqView,
        d: &ODevice<'_>,
        node: &Node,
    ) -> bool {
        let class = scenario
            .classes
            .iter()
            .find(|c| c.metadata.name.as_deref() == Some(req.class.as_str()))
            .expect("generated classes exist");
        let class_selectors: Vec<String> = class
            .spec
            .as_ref()
            .and_then(|s| s.selectors.as_ref())
            .into_iter()
            .flatten()
            .filter_map(|s| s.cel.as_ref().map(|c| c.expression.clone()))
            .collect();
        for expression in class_selectors.iter().chain(req.selectors.iter()) {
            let key = (
                expression.clone(),
                d.driver().to_string(),
                d.slice.metadata.name.clone().unwrap_or_default(),
                d.device.name.clone(),
            );
            let result = match self.cache.get(&key) {
                Some(r) => *r,
                None => {
                    let r = self.eval(expression, d.driver(), d.device);
                    self.cache.insert(key, r);
                    r
                }
            };
            if !result {
                return false;
            }
        }
        if d.slice.spec.per_device_node_selection == Some(true) {
            return node_matches(
                node,
                d.device.node_name.as_deref(),
                d.device.all_nodes,
                d.device.node_selector.as_ref(),
            );
        }
        true
    }
}

/// `ToleratesTaint`.
pub fn tolerates(t: &DeviceToleration, taint: &DeviceTaint) -> bool {
    let effect = t.effect.as_deref().unwrap_or_default();
    if !effect.is_empty() && effect != taint.effect {
        return false;
    }
    let key = t.key.as_deref().unwrap_or_default();
    if !key.is_empty() && key != taint.key {
        return false;
    }
    match t.operator.as_deref().unwrap_or_default() {
        "" | "Equal" => {
            t.value.as_deref().unwrap_or_default() == taint.value.as_deref().unwrap_or_default()
        }
        "Exists" => true,
        _ => false,
    }
}

/// Whether an untolerated NoSchedule/NoExecute taint keeps the device from the request.
pub fn taint_blocks(device: &Device, tolerations: &[DeviceToleration]) -> bool {
    device.taints.iter().flatten().any(|taint| {
        (taint.effect == "NoSchedule" || taint.effect == "NoExecute")
            && !tolerations.iter().any(|t| tolerates(t, taint))
    })
}

/// `lookupAttribute`: the full name, else the bare id when the domain is the driver's.
pub fn lookup_attribute<'a>(
    device: &'a Device,
    driver: &str,
    name: &str,
) -> Option<&'a DeviceAttribute> {
    let attrs = device.attributes.as_ref()?;
    if let Some(a) = attrs.get(name) {
        return Some(a);
    }
    let (domain, id) = name.split_once('/')?;
    if domain != driver {
        return None;
    }
    attrs.get(id)
}

/// A comparable scalar attribute value (kind, text).
pub fn scalar(a: &DeviceAttribute) -> Option<(u8, String)> {
    if let Some(v) = &a.string {
        Some((0, v.clone()))
    } else if let Some(v) = a.int {
        Some((1, v.to_string()))
    } else if let Some(v) = a.bool {
        Some((2, v.to_string()))
    } else {
        a.version.as_ref().map(|v| (3, v.clone()))
    }
}

/// Whether a constraint listing `listed` applies to a device picked for `base`/`sub`.
pub fn constraint_applies(listed: &[String], base: &str, sub: Option<&str>) -> bool {
    listed.is_empty()
        || listed.iter().any(|l| l == base)
        || sub.is_some_and(|s| listed.iter().any(|l| *l == format!("{base}/{s}")))
}

/// One claim's allocation with the device objects its results refer to (in result order).
#[derive(Debug, Clone)]
pub struct LedgerEntry {
    pub claim: usize,
    pub allocation: AllocationResult,
    pub devices: Vec<Device>,
}

/// Everything allocated so far, in allocation order.
#[derive(Debug, Default, Clone)]
pub struct Ledger {
    pub entries: Vec<LedgerEntry>,
}

impl Ledger {
    pub fn allocations(&self) -> impl Iterator<Item = &AllocationResult> {
        self.entries.iter().map(|e| &e.allocation)
    }
}

fn results(
    a: &AllocationResult,
) -> &[k8s_openapi::api::resource::v1::DeviceRequestAllocationResult] {
    a.devices
        .as_ref()
        .and_then(|d| d.results.as_deref())
        .unwrap_or_default()
}

/// Checks cluster-wide invariants over everything allocated so far: exclusive devices are
/// allocated at most once (admin results aside), counters of every counter set and the
/// capacity of every shared device are not exceeded.
pub fn check_ledger(scenario: &Scenario, ledger: &Ledger) -> Result<(), String> {
    type Triple = (String, String, String);
    let mut exclusive: BTreeMap<Triple, usize> = BTreeMap::new();
    // The device object each allocated device was picked from.
    let mut allocated: BTreeMap<Triple, &Device> = BTreeMap::new();
    let mut capacity_used: BTreeMap<Triple, BTreeMap<String, i128>> = BTreeMap::new();
    for entry in &ledger.entries {
        let claim = entry.claim;
        for (r, device) in results(&entry.allocation).iter().zip(&entry.devices) {
            if r.admin_access == Some(true) {
                continue;
            }
            let triple = (r.driver.clone(), r.pool.clone(), r.device.clone());
            allocated.insert(triple.clone(), device);
            if r.share_id.is_none() {
                let n = exclusive.entry(triple.clone()).or_default();
                *n += 1;
                if *n > 1 {
                    return Err(format!(
                        "device {}/{}/{} allocated exclusively twice (second time for claim-{claim})",
                        r.driver, r.pool, r.device
                    ));
                }
            } else {
                let used = capacity_used.entry(triple).or_default();
                for (name, q) in r.consumed_capacity.iter().flatten() {
                    *used.entry(name.clone()).or_default() += nanos(&q.0);
                }
            }
        }
    }
    for (triple, shares) in &capacity_used {
        if exclusive.contains_key(triple) {
            return Err(format!(
                "device {triple:?} is both shared and allocated exclusively"
            ));
        }
        let device = allocated[triple];
        for (name, used) in shares {
            let cap = device
                .capacity
                .as_ref()
                .and_then(|c| c.get(name))
                .ok_or_else(|| {
                    format!(
                        "consumed capacity {name} of {triple:?} is not a capacity of the device"
                    )
                })?;
            if *used > nanos(&cap.value.0) {
                return Err(format!(
                    "capacity {name} of shared device {triple:?} over-consumed: {used} > {} (nanos)",
                    nanos(&cap.value.0)
                ));
            }
        }
    }
    // Counters: every allocated device consumes its counters once.
    let mut consumed: BTreeMap<(String, String, String, String), i128> = BTreeMap::new();
    for (triple, device) in &allocated {
        for c in device.consumes_counters.iter().flatten() {
            for (counter, value) in &c.counters {
                *consumed
                    .entry((
                        triple.0.clone(),
                        triple.1.clone(),
                        c.counter_set.clone(),
                        counter.clone(),
                    ))
                    .or_default() += nanos(&value.value.0);
            }
        }
    }
    for ((driver, pool, set, counter), used) in consumed {
        let available = scenario
            .slices
            .iter()
            .filter(|s| s.spec.driver == driver && s.spec.pool.name == pool)
            .flat_map(|s| s.spec.shared_counters.iter().flatten())
            .find(|cs| cs.name == set)
            .and_then(|cs| cs.counters.get(&counter))
            .map(|c| nanos(&c.value.0))
            .ok_or_else(|| format!("counter {set}/{counter} of pool {driver}/{pool} not found"))?;
        if used > available {
            return Err(format!(
                "counter {counter} of set {set} in pool {driver}/{pool} over-consumed: {used} > {available} (nanos)"
            ));
        }
    }
    Ok(())
}

/// Per-result facts gathered while checking one call.
struct Picked<'a> {
    claim: usize,
    view: ReqView,
    request_index: usize,
    device: ODevice<'a>,
    admin: bool,
}

/// Checks one successful `allocate` call: `results[i]` is the allocation of `claims[i]` on
/// `node`; `ledger` holds what was allocated before this call. Returns, per claim, the device
/// objects of its results.
pub fn check_success(
    scenario: &Scenario,
    selectors: &mut Selectors,
    node: &Node,
    claims: &[usize],
    allocations: &[AllocationResult],
    ledger: &Ledger,
) -> Result<Vec<Vec<Device>>, String> {
    if allocations.len() != claims.len() {
        return Err(format!(
            "{} results for {} claims",
            allocations.len(),
            claims.len()
        ));
    }
    let pools = gather_pools(scenario, node);
    let node_name = node.metadata.name.clone().unwrap_or_default();
    let mut picked: Vec<Picked<'_>> = Vec::new();
    for (c, (&claim_index, allocation)) in claims.iter().zip(allocations).enumerate() {
        let claim = &scenario.claims[claim_index];
        let requests = claim_requests(claim);
        let list = results(allocation);
        if list.len() > 32 {
            return Err(format!("claim-{claim_index}: {} results", list.len()));
        }
        let mut per_request: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
        let mut last_request = 0;
        for (i, r) in list.iter().enumerate() {
            let (base, sub) = match r.request.split_once('/') {
                Some((b, s)) => (b, Some(s)),
                None => (r.request.as_str(), None),
            };
            let request_index = requests
                .iter()
                .position(|q| q.name == base)
                .ok_or_else(|| {
                    format!(
                        "claim-{claim_index}: result for unknown request {}",
                        r.request
                    )
                })?;
            if request_index < last_request {
                return Err(format!("claim-{claim_index}: results not in request order"));
            }
            last_request = request_index;
            let view = request_views(&requests[request_index])
                .into_iter()
                .find(|v| v.sub.as_deref() == sub)
                .ok_or_else(|| {
                    format!(
                        "claim-{claim_index}: result names unknown (sub)request {}",
                        r.request
                    )
                })?;
            let device = pools
                .iter()
                .filter(|p| p.usable())
                .flat_map(|p| p.devices.iter())
                .find(|d| d.driver() == r.driver && d.pool_name() == r.pool && d.device.name == r.device)
                .copied()
                .ok_or_else(|| {
                    format!(
                        "claim-{claim_index}: device {}/{}/{} is not in a usable pool of {node_name}",
                        r.driver, r.pool, r.device
                    )
                })?;
            let what = format!(
                "claim-{claim_index} {} -> {}/{}/{}",
                r.request, r.driver, r.pool, r.device
            );
            if !selectors.selectable(scenario, &view, &device, node) {
                return Err(format!("{what}: device does not satisfy the selectors"));
            }
            if taint_blocks(device.device, &view.tolerations) {
                return Err(format!("{what}: device has an untolerated taint"));
            }
            let expected_tolerations =
                (!view.tolerations.is_empty()).then(|| view.tolerations.clone());
            if r.tolerations != expected_tolerations {
                return Err(format!(
                    "{what}: tolerations {:?} != request's {:?}",
                    r.tolerations, expected_tolerations
                ));
            }
            if r.admin_access != view.admin.then_some(true) {
                return Err(format!("{what}: adminAccess {:?}", r.admin_access));
            }
            if r.share_id.is_some() != device.shared() {
                return Err(format!(
                    "{what}: shareID {:?} but allowMultipleAllocations {}",
                    r.share_id,
                    device.shared()
                ));
            }
            if r.binding_conditions != device.device.binding_conditions
                || r.binding_failure_conditions != device.device.binding_failure_conditions
            {
                return Err(format!("{what}: binding conditions not copied"));
            }
            check_consumed_capacity(&what, r, &view, device.device)?;
            per_request.entry(request_index).or_default().push(i);
            picked.push(Picked {
                claim: c,
                view,
                request_index,
                device,
                admin: r.admin_access == Some(true),
            });
        }
        // Counts and order within each request.
        let claim_picks: Vec<&Picked<'_>> = picked.iter().filter(|p| p.claim == c).collect();
        for (r, request) in requests.iter().enumerate() {
            let picks: Vec<&&Picked<'_>> = claim_picks
                .iter()
                .filter(|p| p.request_index == r)
                .collect();
            let Some(first) = picks.first() else {
                return Err(format!(
                    "claim-{claim_index}: no device for request {}",
                    request.name
                ));
            };
            if picks.iter().any(|p| p.view.sub != first.view.sub) {
                return Err(format!(
                    "claim-{claim_index}: request {} mixes subrequests",
                    request.name
                ));
            }
            let positions: Vec<(usize, usize)> = picks
                .iter()
                .map(|p| (p.device.pool, p.device.position))
                .collect();
            if positions.windows(2).any(|w| w[0] >= w[1]) {
                return Err(format!(
                    "claim-{claim_index}: devices of request {} not in search order: {positions:?}",
                    request.name
                ));
            }
            if first.view.all {
                check_all_mode(scenario, selectors, node, &pools, &first.view, &positions)
                    .map_err(|e| format!("claim-{claim_index} request {}: {e}", request.name))?;
            } else if picks.len() as i64 != first.view.count {
                return Err(format!(
                    "claim-{claim_index}: request {} got {} devices, wants {}",
                    first.view.full_name(),
                    picks.len(),
                    first.view.count
                ));
            }
        }
        check_constraints(claim, claim_index, &claim_picks)?;
        check_config(scenario, claim, claim_index, &claim_picks, allocation)?;
        check_node_selector(&claim_picks, claim_index, node, allocation)?;
    }
    check_in_use(&picked, claims, ledger)?;
    let mut devices = vec![Vec::new(); claims.len()];
    for p in &picked {
        devices[p.claim].push(p.device.device.clone());
    }
    Ok(devices)
}

fn check_consumed_capacity(
    what: &str,
    r: &k8s_openapi::api::resource::v1::DeviceRequestAllocationResult,
    view: &ReqView,
    device: &Device,
) -> Result<(), String> {
    let capacity = device.capacity.clone().unwrap_or_default();
    if let Some(requests) = &view.capacity
        && let Some(missing) = requests.keys().find(|k| !capacity.contains_key(*k))
    {
        return Err(format!("{what}: device lacks requested capacity {missing}"));
    }
    for (name, requested) in view.capacity.iter().flatten() {
        if nanos(requested) > nanos(&capacity[name].value.0) {
            return Err(format!(
                "{what}: requests {requested} of {name}, more than the device has"
            ));
        }
    }
    let shared = device.allow_multiple_allocations == Some(true);
    match (&r.consumed_capacity, shared && !capacity.is_empty()) {
        (None, false) => return Ok(()),
        (Some(_), false) => {
            return Err(format!(
                "{what}: consumedCapacity on a device that is not shared"
            ));
        }
        (None, true) => {
            return Err(format!(
                "{what}: no consumedCapacity on a shared device with capacity"
            ));
        }
        (Some(_), true) => {}
    }
    let consumed = r
        .consumed_capacity
        .as_ref()
        .map(|c| c.keys().cloned().collect::<BTreeSet<_>>());
    if consumed != Some(capacity.keys().cloned().collect()) {
        return Err(format!(
            "{what}: consumedCapacity keys {consumed:?} != device capacities"
        ));
    }
    for (name, q) in r.consumed_capacity.iter().flatten() {
        let used = nanos(&q.0);
        let cap = &capacity[name];
        if used > nanos(&cap.value.0) {
            return Err(format!(
                "{what}: consumes {} of {name} > capacity {}",
                q.0, cap.value.0
            ));
        }
        match view.capacity.as_ref().and_then(|c| c.get(name)) {
            Some(requested) if used < nanos(requested) => {
                return Err(format!(
                    "{what}: consumes {} of {name}, less than requested {requested}",
                    q.0
                ));
            }
            Some(_) => {}
            None => {
                let default = cap.request_policy.as_ref().and_then(|p| p.default.as_ref());
                let expected = default.map_or_else(|| nanos(&cap.value.0), |d| nanos(&d.0));
                if used != expected {
                    return Err(format!(
                        "{what}: consumes {} of {name} without a request (expected default)",
                        q.0
                    ));
                }
            }
        }
    }
    Ok(())
}

/// `All`: the devices are exactly the selectable ones of the node's pools, when no capacity
/// pre-check can remove a device (otherwise only a subset check).
fn check_all_mode(
    scenario: &Scenario,
    selectors: &mut Selectors,
    node: &Node,
    pools: &[OPool<'_>],
    view: &ReqView,
    positions: &[(usize, usize)],
) -> Result<(), String> {
    if let Some(bad) = pools.iter().find(|p| !p.usable()) {
        return Err(format!(
            "All mode succeeded although pool {}/{} is incomplete or invalid",
            bad.driver, bad.name
        ));
    }
    let mut exact = view.capacity.is_none();
    let mut expected = Vec::new();
    for d in pools.iter().flat_map(|p| p.devices.iter()) {
        if !selectors.selectable(scenario, view, d, node) {
            continue;
        }
        if d.shared() && d.device.capacity.as_ref().is_some_and(|c| !c.is_empty()) {
            exact = false;
        }
        expected.push((d.pool, d.position));
    }
    if positions.is_empty() {
        return Err("All mode with no device".into());
    }
    if exact && positions != expected {
        return Err(format!(
            "All mode picked {positions:?}, selectable devices are {expected:?}"
        ));
    }
    if !positions.iter().all(|p| expected.contains(p)) {
        return Err(format!(
            "All mode picked {positions:?}, not all selectable ({expected:?})"
        ));
    }
    Ok(())
}

fn check_constraints(
    claim: &ResourceClaim,
    claim_index: usize,
    picks: &[&Picked<'_>],
) -> Result<(), String> {
    let constraints = claim
        .spec
        .as_ref()
        .and_then(|s| s.devices.as_ref())
        .and_then(|d| d.constraints.as_deref())
        .unwrap_or_default();
    for (i, constraint) in constraints.iter().enumerate() {
        let listed = constraint.requests.clone().unwrap_or_default();
        let (attribute, distinct) =
            match (&constraint.match_attribute, &constraint.distinct_attribute) {
                (Some(a), _) => (a.as_str(), false),
                (None, Some(a)) => (a.as_str(), true),
                (None, None) => continue,
            };
        let subject: Vec<(usize, (u8, String), String)> = picks
            .iter()
            .filter(|p| constraint_applies(&listed, &p.view.base, p.view.sub.as_deref()))
            .map(|p| {
                let value = lookup_attribute(p.device.device, p.device.driver(), attribute)
                    .and_then(scalar)
                    .ok_or_else(|| {
                        format!(
                            "claim-{claim_index} constraint #{i}: device {} lacks {attribute}",
                            p.device.device.name
                        )
                    })?;
                Ok((p.request_index, value, p.device.device.name.clone()))
            })
            .collect::<Result<_, String>>()?;
        if !distinct {
            if let Some(first) = subject.first()
                && let Some(other) = subject.iter().find(|s| s.1 != first.1)
            {
                return Err(format!(
                    "claim-{claim_index} constraint #{i} matchAttribute {attribute}: {} has {:?}, {} has {:?}",
                    first.2, first.1, other.2, other.1
                ));
            }
            continue;
        }
        // distinctAttribute keeps one value per request name (the latest device's), so what
        // upstream guarantees is: every device of a later request differs from the last device
        // of each earlier request.
        let requests: BTreeSet<usize> = subject.iter().map(|s| s.0).collect();
        for &earlier in &requests {
            let Some(last) = subject.iter().rfind(|s| s.0 == earlier) else {
                continue;
            };
            for later in subject.iter().filter(|s| s.0 > earlier) {
                if later.1 == last.1 {
                    return Err(format!(
                        "claim-{claim_index} constraint #{i} distinctAttribute {attribute}: {} and {} both {:?}",
                        last.2, later.2, later.1
                    ));
                }
            }
        }
    }
    Ok(())
}

/// The `devices.config` of a result, derived from SPEC.md §3.14.
fn check_config(
    scenario: &Scenario,
    claim: &ResourceClaim,
    claim_index: usize,
    picks: &[&Picked<'_>],
    allocation: &AllocationResult,
) -> Result<(), String> {
    let requests = claim_requests(claim);
    // The name each request is allocated under.
    let allocated_names: Vec<(String, Option<String>, String)> = requests
        .iter()
        .enumerate()
        .map(|(r, request)| {
            let view = &picks
                .iter()
                .find(|p| p.request_index == r)
                .expect("checked before")
                .view;
            (
                request.name.clone(),
                view.sub.as_ref().map(|_| view.full_name()),
                view.class.clone(),
            )
        })
        .collect();
    let mut expected: Vec<DeviceAllocationConfiguration> = Vec::new();
    let mut class_entries: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (plain, full, class) in &allocated_names {
        let name = full.clone().unwrap_or_else(|| plain.clone());
        if let Some(entries) = class_entries.get(class) {
            for &e in entries {
                expected[e]
                    .requests
                    .get_or_insert_with(Vec::new)
                    .push(name.clone());
            }
            continue;
        }
        let class_object = scenario
            .classes
            .iter()
            .find(|c| c.metadata.name.as_deref() == Some(class.as_str()))
            .expect("class exists");
        let mut entries = Vec::new();
        for config in class_object
            .spec
            .as_ref()
            .and_then(|s| s.config.as_ref())
            .into_iter()
            .flatten()
        {
            entries.push(expected.len());
            expected.push(DeviceAllocationConfiguration {
                source: "FromClass".into(),
                requests: Some(vec![name.clone()]),
                opaque: config.opaque.clone(),
            });
        }
        class_entries.insert(class.clone(), entries);
    }
    let listed_by = |listed: &[String], plain: &str, full: &Option<String>| {
        listed.iter().any(|l| l == plain) || full.as_ref().is_some_and(|f| listed.contains(f))
    };
    for config in claim
        .spec
        .as_ref()
        .and_then(|s| s.devices.as_ref())
        .and_then(|d| d.config.as_ref())
        .into_iter()
        .flatten()
    {
        let listed = config.requests.clone().unwrap_or_default();
        if listed.is_empty()
            || allocated_names
                .iter()
                .any(|(p, f, _)| listed_by(&listed, p, f))
        {
            expected.push(DeviceAllocationConfiguration {
                source: "FromClaim".into(),
                requests: config.requests.clone(),
                opaque: config.opaque.clone(),
            });
        }
    }
    for entry in &mut expected {
        let listed = entry.requests.clone().unwrap_or_default();
        if !listed.is_empty()
            && allocated_names
                .iter()
                .all(|(p, f, _)| listed_by(&listed, p, f))
        {
            entry.requests = None;
        }
    }
    let actual = allocation
        .devices
        .as_ref()
        .and_then(|d| d.config.clone())
        .unwrap_or_default();
    let normalize =
        |list: Vec<DeviceAllocationConfiguration>| -> Vec<DeviceAllocationConfiguration> {
            list.into_iter()
                .map(|mut c| {
                    if c.requests.as_ref().is_some_and(Vec::is_empty) {
                        c.requests = None;
                    }
                    c
                })
                .collect()
        };
    if normalize(actual.clone()) != normalize(expected.clone()) {
        return Err(format!(
            "claim-{claim_index}: config\n  got      {}\n  expected {}",
            serde_json::to_string(&actual).unwrap_or_default(),
            serde_json::to_string(&expected).unwrap_or_default()
        ));
    }
    Ok(())
}

/// The node selector (`createNodeSelector`, SPEC.md §3.14) and that it admits the node.
fn check_node_selector(
    picks: &[&Picked<'_>],
    claim_index: usize,
    node: &Node,
    allocation: &AllocationResult,
) -> Result<(), String> {
    let node_name = node.metadata.name.clone().unwrap_or_default();
    let mut expected: Option<NodeSelector> = None;
    let mut fields: Vec<NodeSelectorRequirement> = Vec::new();
    let mut expressions: Vec<NodeSelectorRequirement> = Vec::new();
    let same = |a: &NodeSelectorRequirement, b: &NodeSelectorRequirement| {
        a.key == b.key
            && a.operator == b.operator
            && a.values.iter().flatten().collect::<BTreeSet<_>>()
                == b.values.iter().flatten().collect::<BTreeSet<_>>()
    };
    for p in picks {
        let (name, selector) = if p.device.slice.spec.per_device_node_selection == Some(true) {
            (
                p.device.device.node_name.as_ref(),
                p.device.device.node_selector.as_ref(),
            )
        } else {
            (
                p.device.slice.spec.node_name.as_ref(),
                p.device.slice.spec.node_selector.as_ref(),
            )
        };
        if name.is_some() || p.device.device.binds_to_node == Some(true) {
            expected = Some(NodeSelector {
                node_selector_terms: vec![NodeSelectorTerm {
                    match_expressions: None,
                    match_fields: Some(vec![NodeSelectorRequirement {
                        key: "metadata.name".into(),
                        operator: "In".into(),
                        values: Some(vec![node_name.clone()]),
                    }]),
                }],
            });
            break;
        }
        if let Some(selector) = selector {
            if selector.node_selector_terms.len() > 1 {
                return Err(format!("claim-{claim_index}: multi-term selector accepted"));
            }
            if let Some(term) = selector.node_selector_terms.first() {
                for r in term.match_fields.iter().flatten() {
                    if !fields.iter().any(|f| same(f, r)) {
                        fields.push(r.clone());
                    }
                }
                for r in term.match_expressions.iter().flatten() {
                    if !expressions.iter().any(|f| same(f, r)) {
                        expressions.push(r.clone());
                    }
                }
            }
        }
    }
    if expected.is_none() && (!fields.is_empty() || !expressions.is_empty()) {
        expected = Some(NodeSelector {
            node_selector_terms: vec![NodeSelectorTerm {
                match_expressions: (!expressions.is_empty()).then_some(expressions),
                match_fields: (!fields.is_empty()).then_some(fields),
            }],
        });
    }
    if allocation.node_selector != expected {
        return Err(format!(
            "claim-{claim_index}: nodeSelector\n  got      {}\n  expected {}",
            serde_json::to_string(&allocation.node_selector).unwrap_or_default(),
            serde_json::to_string(&expected).unwrap_or_default()
        ));
    }
    if let Some(selector) = &allocation.node_selector
        && !selector_matches(selector, node)
    {
        return Err(format!(
            "claim-{claim_index}: nodeSelector does not admit {node_name}"
        ));
    }
    Ok(())
}

/// In-use rules (SPEC.md §3.6, §3.8) within one call and against earlier calls.
fn check_in_use(picked: &[Picked<'_>], claims: &[usize], ledger: &Ledger) -> Result<(), String> {
    let mut committed: BTreeSet<(String, String, String)> = BTreeSet::new();
    for allocation in ledger.allocations() {
        for r in results(allocation) {
            if r.admin_access != Some(true) && r.share_id.is_none() {
                committed.insert((r.driver.clone(), r.pool.clone(), r.device.clone()));
            }
        }
    }
    let mut seen: BTreeMap<(String, String, String), Vec<(usize, bool)>> = BTreeMap::new();
    for p in picked {
        if p.device.shared() {
            continue;
        }
        let triple = p.device.triple();
        let earlier = seen.entry(triple.clone()).or_default();
        let claim = claims[p.claim];
        if earlier.iter().any(|(c, _)| *c == p.claim) {
            return Err(format!(
                "claim-{claim}: device {triple:?} twice in one claim"
            ));
        }
        if !p.admin {
            if !earlier.is_empty() {
                return Err(format!(
                    "claim-{claim}: device {triple:?} already picked in this call"
                ));
            }
            if committed.contains(&triple) {
                return Err(format!(
                    "claim-{claim}: device {triple:?} is already allocated"
                ));
            }
        }
        earlier.push((p.claim, p.admin));
    }
    Ok(())
}
