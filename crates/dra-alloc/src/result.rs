//! Turning the picks of a successful search into `AllocationResult`s (SPEC.md §3.14):
//! device results in pick order, class and claim configuration, and the node selector.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{NodeSelector, NodeSelectorRequirement, NodeSelectorTerm};
use k8s_openapi::api::resource::v1::{
    AllocationResult, DeviceAllocationConfiguration, DeviceAllocationResult,
    DeviceRequestAllocationResult, DeviceToleration,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as WireQuantity;

use serde::ser::{Serialize, SerializeMap, SerializeSeq, SerializeStruct, Serializer};

use crate::claims::{PreparedClaim, RequestBody, RequestSpec};
use crate::index::{DeviceIdx, DeviceKey, Index, NodeId};
use crate::quantity::CapacityAmounts;
use crate::search::{Pick, Search};

/// One claim's allocation as the search found it, before it is written as a Kubernetes
/// `AllocationResult` ([`ClaimPicks::build`]): the picked devices in pick order, the chosen
/// subrequests and the node selector's shape. Building the object costs a dozen allocations
/// and most of a pod's memory in a large simulation, and its names add nothing the picks
/// do not say; a simulation keeps the picks and writes the object when it is read
/// ([`crate::Allocation`]).
#[derive(Debug, Clone)]
pub struct ClaimPicks {
    /// The search's own picks, taken over as they are.
    devices: Vec<Pick>,
    /// The chosen subrequest per request; empty when the claim has no `firstAvailable`
    /// request (every request's only choice is 0).
    selected_sub: Vec<usize>,
    selector: SelectorPlan,
}

/// The node selector of an allocation ([`create_node_selector`]'s answer), decided with the
/// picks so that building the object cannot fail.
#[derive(Debug, Clone)]
enum SelectorPlan {
    /// `metadata.name In [<the node>]`: a device of the node itself (nearly every one).
    ThisNode,
    Written(Option<NodeSelector>),
}

/// The picks of every claim of a successful search, in claim order; an error is upstream's
/// fatal node-selector error.
pub(crate) fn claim_picks(search: &mut Search<'_>) -> Result<Vec<ClaimPicks>, String> {
    let mut all = Vec::with_capacity(search.claims.len());
    for (c, claim) in search.claims.iter().enumerate() {
        let picks = std::mem::take(&mut search.picks[c]);
        let selector = create_node_selector(search.index, &picks)
            .map_err(|e| format!("create NodeSelector for claim {}: {e}", claim.name))?;
        all.push(ClaimPicks {
            devices: picks,
            selected_sub: if claim.has_first_available() {
                std::mem::take(&mut search.selected_sub[c])
            } else {
                Vec::new()
            },
            selector,
        });
    }
    Ok(all)
}

/// What one device result of an allocation changes in the allocated state: the fields
/// [`crate::AllocatedState`] reads of a `DeviceRequestAllocationResult` without admin access,
/// as [`ClaimPicks::build`] writes them.
#[derive(Debug)]
pub(crate) struct StateChange<'p> {
    pub key: DeviceKey,
    /// Whether the result has a `shareID` (a device that allows several allocations).
    pub shared: bool,
    /// `consumedCapacity`, as the search computed it (the object carries each quantity's
    /// canonical text, which parses back to the same value).
    pub consumed: Option<&'p CapacityAmounts>,
}

/// A request (or the chosen subrequest) of a claim, as the search saw it.
struct RequestView<'c> {
    spec: &'c RequestSpec,
    /// Name of the parent request for subrequests.
    parent: Option<&'c str>,
}

impl RequestView<'_> {
    fn request_name(&self) -> String {
        match self.parent {
            Some(parent) => format!("{parent}/{}", self.spec.name),
            None => self.spec.name.clone(),
        }
    }
}

fn request_view(claim: &PreparedClaim, request: usize, sub: usize) -> Option<RequestView<'_>> {
    let entry = claim.requests.get(request)?;
    match &entry.body {
        RequestBody::Exact(spec) => Some(RequestView { spec, parent: None }),
        RequestBody::FirstAvailable(subs) => Some(RequestView {
            spec: subs.get(sub)?,
            parent: Some(&entry.name),
        }),
        RequestBody::Unknown => None,
    }
}

impl ClaimPicks {
    /// The subrequest chosen for `request` (0 for requests without alternatives).
    fn selected(&self, request: usize) -> usize {
        self.selected_sub.get(request).copied().unwrap_or(0)
    }

    /// The picked devices, in pick order.
    pub fn devices(&self) -> impl Iterator<Item = DeviceIdx> + '_ {
        self.devices.iter().map(|d| d.device)
    }

    /// Whether every pick is an exclusive allocation of a whole device: no admin access, no
    /// share of a device that allows several allocations, no consumed capacity. Such an
    /// allocation changes the allocated state by its device keys alone.
    pub fn is_exclusive(&self, index: &Index, claim: &PreparedClaim) -> bool {
        self.devices.iter().all(|d| {
            d.consumed_capacity.is_none()
                && !index.device(d.device).allow_multiple_allocations
                && request_view(claim, d.request, d.sub).is_some_and(|v| !v.spec.admin())
        })
    }

    /// The names the allocated requests are known by (`request` or `request/subrequest`),
    /// one per picked device, as the object's device results have them.
    pub fn request_names<'c>(
        &'c self,
        claim: &'c PreparedClaim,
    ) -> impl Iterator<Item = String> + 'c {
        self.devices.iter().filter_map(move |d| {
            request_view(claim, d.request, d.sub).map(|view| view.request_name())
        })
    }

    /// Whether the object's node selector is `metadata.name In [<the node>]` (every device
    /// is the node's own): the same for every claim allocated on the node.
    pub fn selects_this_node(&self) -> bool {
        matches!(self.selector, SelectorPlan::ThisNode)
    }

    /// The object's node selector ([`ClaimPicks::build`]'s `nodeSelector`) on `node`.
    pub fn node_selector(&self, index: &Index, node: NodeId) -> Option<NodeSelector> {
        match &self.selector {
            SelectorPlan::ThisNode => Some(this_node(&index.node_facts(node).name)),
            SelectorPlan::Written(selector) => selector.clone(),
        }
    }

    /// What the object's device results change in the allocated state, in result order,
    /// without writing the object: the results with admin access change nothing and are
    /// left out, as the state leaves them out.
    pub(crate) fn state_changes<'p>(
        &'p self,
        index: &'p Index,
        claim: &'p PreparedClaim,
    ) -> impl Iterator<Item = StateChange<'p>> + 'p {
        self.devices.iter().filter_map(move |pick| {
            let data = request_view(claim, pick.request, pick.sub)?;
            if data.spec.admin() {
                return None;
            }
            let entry = index.device(pick.device);
            Some(StateChange {
                key: entry.key,
                shared: shares_device(index, pick.device),
                consumed: pick.consumed_capacity.as_ref(),
            })
        })
    }

    /// The claim's `AllocationResult` on `node` (`claim` is the claim the picks were made
    /// for).
    pub fn build(&self, index: &Index, node: NodeId, claim: &PreparedClaim) -> AllocationResult {
        let devices: Vec<DeviceRequestAllocationResult> = self
            .devices
            .iter()
            .enumerate()
            .filter_map(|(i, pick)| device_result(index, claim, i, pick))
            .collect();
        let config = build_config(index, self, claim);
        let node_selector = self.node_selector(index, node);
        AllocationResult {
            allocation_timestamp: None,
            devices: Some(DeviceAllocationResult {
                results: Some(devices),
                config: if config.is_empty() {
                    None
                } else {
                    Some(config)
                },
            }),
            node_selector,
        }
    }
}

/// [`ClaimPicks::build`]'s object as it serialises, written from the picks without making
/// it ([`ClaimPicks::serialize_result`]): the same calls of the serializer with the same
/// values, field for field, as `k8s-openapi`'s `Serialize` of each type makes them.
struct ResultOfPicks<'p> {
    picks: &'p ClaimPicks,
    index: &'p Index,
    node: NodeId,
    claim: &'p PreparedClaim,
}

impl ClaimPicks {
    /// Serialises [`ClaimPicks::build`]'s object without making it: its strings, lists and
    /// maps (a dozen allocations a claim), freed right after, were most of what writing a
    /// simulation's answer cost. Allocations with configuration are rare and built first.
    pub fn serialize_result<S: Serializer>(
        &self,
        index: &Index,
        node: NodeId,
        claim: &PreparedClaim,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        if !build_config(index, self, claim).is_empty() {
            return self.build(index, node, claim).serialize(serializer);
        }
        ResultOfPicks {
            picks: self,
            index,
            node,
            claim,
        }
        .serialize(serializer)
    }
}

/// `AllocationResult`, without `allocationTimestamp` and with `devices` always set.
impl Serialize for ResultOfPicks<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let this_node = matches!(self.picks.selector, SelectorPlan::ThisNode);
        let written = match &self.picks.selector {
            SelectorPlan::ThisNode => None,
            SelectorPlan::Written(selector) => selector.as_ref(),
        };
        let has_selector = this_node || written.is_some();
        let mut state =
            serializer.serialize_struct("AllocationResult", 1 + usize::from(has_selector))?;
        state.serialize_field("devices", &DevicesOfPicks(self))?;
        if this_node {
            let name = &self.index.node_facts(self.node).name;
            state.serialize_field("nodeSelector", &ThisNodeSelector(name))?;
        } else if let Some(selector) = written {
            state.serialize_field("nodeSelector", selector)?;
        }
        state.end()
    }
}

/// `DeviceAllocationResult` without `config` (the caller checked there is none).
struct DevicesOfPicks<'r, 'p>(&'r ResultOfPicks<'p>);

impl Serialize for DevicesOfPicks<'_, '_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut state = serializer.serialize_struct("DeviceAllocationResult", 1)?;
        state.serialize_field("results", &DeviceResultsOfPicks(self.0))?;
        state.end()
    }
}

/// The `results` list: one entry per pick with a request, in pick order.
struct DeviceResultsOfPicks<'r, 'p>(&'r ResultOfPicks<'p>);

impl Serialize for DeviceResultsOfPicks<'_, '_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let ResultOfPicks {
            picks,
            index,
            claim,
            ..
        } = *self.0;
        let results = picks
            .devices
            .iter()
            .filter(|pick| request_view(claim, pick.request, pick.sub).is_some())
            .count();
        let mut list = serializer.serialize_seq(Some(results))?;
        for (position, pick) in picks.devices.iter().enumerate() {
            if let Some(fields) = device_fields(index, claim, position, pick) {
                list.serialize_element(&fields)?;
            }
        }
        list.end()
    }
}

/// What one pick's `DeviceRequestAllocationResult` holds, borrowed where it can be: built into
/// the object ([`device_result`]) or serialised as it ([`ClaimPicks::serialize_result`]), the
/// one place that decides each field.
struct DeviceResultFields<'p> {
    request: RequestView<'p>,
    driver: &'p str,
    pool: &'p str,
    device: &'p str,
    admin: bool,
    binding_conditions: Option<&'p Vec<String>>,
    binding_failure_conditions: Option<&'p Vec<String>>,
    consumed: Option<&'p CapacityAmounts>,
    share_id: Option<String>,
    tolerations: &'p [DeviceToleration],
}

/// The fields of the pick at `position`; `None` for a pick without a request.
fn device_fields<'p>(
    index: &'p Index,
    claim: &'p PreparedClaim,
    position: usize,
    pick: &'p Pick,
) -> Option<DeviceResultFields<'p>> {
    let request = request_view(claim, pick.request, pick.sub)?;
    let entry = index.device(pick.device);
    let (driver, pool, device) = index.key_names(entry.key);
    let binding = index.features.device_binding_and_status;
    Some(DeviceResultFields {
        admin: request.spec.admin(),
        tolerations: &request.spec.tolerations,
        request,
        driver,
        pool,
        device,
        binding_conditions: entry.binding_conditions.as_ref().filter(|_| binding),
        binding_failure_conditions: entry
            .binding_failure_conditions
            .as_ref()
            .filter(|_| binding),
        consumed: pick.consumed_capacity.as_ref(),
        share_id: shares_device(index, pick.device)
            .then(|| share_id(claim, position, driver, pool, device)),
    })
}

impl DeviceResultFields<'_> {
    fn into_object(self) -> DeviceRequestAllocationResult {
        DeviceRequestAllocationResult {
            request: self.request.request_name(),
            driver: self.driver.to_string(),
            pool: self.pool.to_string(),
            device: self.device.to_string(),
            admin_access: self.admin.then_some(true),
            tolerations: (!self.tolerations.is_empty()).then(|| self.tolerations.to_vec()),
            share_id: self.share_id,
            consumed_capacity: self.consumed.map(|consumed| {
                consumed
                    .iter()
                    .map(|(name, q)| (name.to_string(), WireQuantity(q.to_canonical_string())))
                    .collect::<BTreeMap<_, _>>()
            }),
            binding_conditions: self.binding_conditions.cloned(),
            binding_failure_conditions: self.binding_failure_conditions.cloned(),
            skip_node_operations: None,
        }
    }
}

/// `DeviceRequestAllocationResult`, field for field as `k8s-openapi` serialises the object.
impl Serialize for DeviceResultFields<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let fields = 4
            + usize::from(self.admin)
            + usize::from(self.binding_conditions.is_some())
            + usize::from(self.binding_failure_conditions.is_some())
            + usize::from(self.consumed.is_some())
            + usize::from(self.share_id.is_some())
            + usize::from(!self.tolerations.is_empty());
        let mut state = serializer.serialize_struct("DeviceRequestAllocationResult", fields)?;
        if self.admin {
            state.serialize_field("adminAccess", &true)?;
        }
        if let Some(conditions) = self.binding_conditions {
            state.serialize_field("bindingConditions", conditions)?;
        }
        if let Some(conditions) = self.binding_failure_conditions {
            state.serialize_field("bindingFailureConditions", conditions)?;
        }
        if let Some(consumed) = self.consumed {
            state.serialize_field("consumedCapacity", &ConsumedOfPick(consumed))?;
        }
        state.serialize_field("device", self.device)?;
        state.serialize_field("driver", self.driver)?;
        state.serialize_field("pool", self.pool)?;
        match self.request.parent {
            Some(_) => state.serialize_field("request", &self.request.request_name())?,
            None => state.serialize_field("request", &self.request.spec.name)?,
        }
        if let Some(share_id) = &self.share_id {
            state.serialize_field("shareID", share_id)?;
        }
        if !self.tolerations.is_empty() {
            state.serialize_field("tolerations", self.tolerations)?;
        }
        state.end()
    }
}

/// `consumedCapacity`: each amount's canonical text, by name (the amounts are sorted by name
/// and distinct, as the object's map is).
struct ConsumedOfPick<'p>(&'p CapacityAmounts);

impl Serialize for ConsumedOfPick<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (name, amount) in self.0 {
            map.serialize_entry(name, &WireQuantity(amount.to_canonical_string()))?;
        }
        map.end()
    }
}

/// [`this_node`]'s selector.
struct ThisNodeSelector<'n>(&'n str);

impl Serialize for ThisNodeSelector<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        struct Terms<'n>(&'n str);
        impl Serialize for Terms<'_> {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                let mut list = serializer.serialize_seq(Some(1))?;
                list.serialize_element(&Term(self.0))?;
                list.end()
            }
        }
        struct Term<'n>(&'n str);
        impl Serialize for Term<'_> {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                let mut state = serializer.serialize_struct("NodeSelectorTerm", 1)?;
                state.serialize_field("matchFields", &[Requirement(self.0)][..])?;
                state.end()
            }
        }
        struct Requirement<'n>(&'n str);
        impl Serialize for Requirement<'_> {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                let mut state = serializer.serialize_struct("NodeSelectorRequirement", 3)?;
                state.serialize_field("key", "metadata.name")?;
                state.serialize_field("operator", "In")?;
                state.serialize_field("values", &[self.0][..])?;
                state.end()
            }
        }
        let mut state = serializer.serialize_struct("NodeSelector", 1)?;
        state.serialize_field("nodeSelectorTerms", &Terms(self.0))?;
        state.end()
    }
}

fn device_result(
    index: &Index,
    claim: &PreparedClaim,
    position: usize,
    pick: &Pick,
) -> Option<DeviceRequestAllocationResult> {
    device_fields(index, claim, position, pick).map(DeviceResultFields::into_object)
}

/// Whether the allocation of `device` is one share of it (its result carries a share ID).
fn shares_device(index: &Index, device: DeviceIdx) -> bool {
    index.features.consumable_capacity && index.device(device).allow_multiple_allocations
}

/// A share ID for a shared device. Upstream draws a random UUID; a simulation must be
/// reproducible, so ours is derived from the claim, the result position and the device, and
/// formatted like a version-4 UUID.
fn share_id(
    claim: &PreparedClaim,
    position: usize,
    driver: &str,
    pool: &str,
    device: &str,
) -> String {
    let mut digits = [0; 20];
    stable_uuid_of_parts(&[
        claim.namespace.as_bytes(),
        claim.name.as_bytes(),
        decimal(position, &mut digits),
        driver.as_bytes(),
        pool.as_bytes(),
        device.as_bytes(),
    ])
}

/// `number`'s decimal digits, written into the end of `digits` (what `to_string` writes,
/// without a String for it).
fn decimal(mut number: usize, digits: &mut [u8; 20]) -> &[u8] {
    let mut start = digits.len();
    loop {
        start -= 1;
        digits[start] = b'0' + (number % 10) as u8;
        number /= 10;
        if number == 0 {
            return &digits[start..];
        }
    }
}

/// A version-4-shaped UUID derived from `bytes` (two FNV-1a hashes), for identifiers that
/// Kubernetes draws at random and a reproducible simulation must not.
pub fn stable_uuid(bytes: &[u8]) -> String {
    stable_uuid_of_parts(&[bytes])
}

/// [`stable_uuid`] of `parts` joined by NUL bytes, without joining them.
pub fn stable_uuid_of_parts(parts: &[&[u8]]) -> String {
    // Both hashes in one pass: their multiplications are independent, so they overlap
    // (every generated claim's UID and every shared device's ID goes through here).
    let (mut hi, mut lo) = (0xcbf2_9ce4_8422_2325_u64, 0x8422_2325_cbf2_9ce4_u64);
    let mut add = |byte: u8| {
        hi = (hi ^ u64::from(byte)).wrapping_mul(FNV_PRIME);
        lo = (lo ^ u64::from(byte)).wrapping_mul(FNV_PRIME);
    };
    for (i, part) in parts.iter().enumerate() {
        if i > 0 {
            add(0);
        }
        part.iter().for_each(|&byte| add(byte));
    }
    let hi = (hi & 0xffff_ffff_ffff_0fff) | 0x0000_0000_0000_4000;
    let lo = (lo & 0x3fff_ffff_ffff_ffff) | 0x8000_0000_0000_0000;
    // 8-4-4-4-12 hexadecimal digits: the high word's 16, then the low word's 16, each word's
    // from its most significant nibble.
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    const HI_AT: [usize; 16] = [0, 1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 12, 14, 15, 16, 17];
    const LO_AT: [usize; 16] = [
        19, 20, 21, 22, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35,
    ];
    let mut text = [b'-'; 36];
    for k in 0..16 {
        let shift = 60 - 4 * k;
        text[HI_AT[k]] = DIGITS[((hi >> shift) & 0xf) as usize];
        text[LO_AT[k]] = DIGITS[((lo >> shift) & 0xf) as usize];
    }
    // Checked as UTF-8 a word at a time (ASCII), where collecting the bytes as characters
    // encoded each one on its own (as much as the hashing, for every share ID).
    std::str::from_utf8(&text)
        .expect("hexadecimal digits and dashes are ASCII")
        .to_owned()
}

const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// The name a request is known by in this allocation: its own name, or `req/sub` for the
/// selected subrequest.
fn allocated_request_names(
    picks: &ClaimPicks,
    claim: &PreparedClaim,
) -> Vec<(String, Option<String>)> {
    claim
        .requests
        .iter()
        .enumerate()
        .map(|(r, request)| match &request.body {
            RequestBody::FirstAvailable(subs) => (
                request.name.clone(),
                subs.get(picks.selected(r))
                    .map(|s| format!("{}/{}", request.name, s.name)),
            ),
            _ => (request.name.clone(), None),
        })
        .collect()
}

fn build_config(
    index: &Index,
    picks: &ClaimPicks,
    claim: &PreparedClaim,
) -> Vec<DeviceAllocationConfiguration> {
    let mut config: Vec<DeviceAllocationConfiguration> = Vec::new();
    // Class configuration: once per class, with the names of all requests that used it. Only
    // classes with configuration are tracked (most have none, and then nothing is named).
    let mut class_ranges: BTreeMap<u32, (usize, usize)> = BTreeMap::new();
    for r in 0..claim.requests.len() {
        // The search checked that every request's class exists.
        let Some(data) = request_view(claim, r, picks.selected(r)) else {
            continue;
        };
        let Some(class) = data.spec.class else {
            continue;
        };
        if let Some((start, end)) = class_ranges.get(&class.0) {
            let name = data.request_name();
            for entry in &mut config[*start..*end] {
                entry
                    .requests
                    .get_or_insert_with(Vec::new)
                    .push(name.clone());
            }
            continue;
        }
        let class_config = &index.class_entry(class).config;
        if class_config.is_empty() {
            continue;
        }
        let name = data.request_name();
        let start = config.len();
        for class_config in class_config {
            config.push(DeviceAllocationConfiguration {
                source: "FromClass".to_string(),
                requests: Some(vec![name.clone()]),
                opaque: class_config.opaque.clone(),
            });
        }
        class_ranges.insert(class.0, (start, config.len()));
    }
    if config.is_empty() && claim.config.is_empty() {
        return config;
    }
    let names = allocated_request_names(picks, claim);
    // Claim configuration, when it names an allocated request (or none).
    for claim_config in &claim.config {
        let requests = claim_config.requests.as_deref().unwrap_or_default();
        let include = requests.is_empty()
            || names.iter().any(|(plain, sub)| {
                requests.contains(plain) || sub.as_ref().is_some_and(|s| requests.contains(s))
            });
        if include {
            config.push(DeviceAllocationConfiguration {
                source: "FromClaim".to_string(),
                requests: claim_config.requests.clone(),
                opaque: claim_config.opaque.clone(),
            });
        }
    }
    // An entry that covers every request of the claim applies to all: `requests` empty.
    for entry in &mut config {
        let Some(requests) = &entry.requests else {
            continue;
        };
        if requests.is_empty() {
            continue;
        }
        let covers_all = names.iter().all(|(plain, sub)| {
            requests.contains(plain) || sub.as_ref().is_some_and(|s| requests.contains(s))
        });
        if covers_all {
            entry.requests = None;
        }
    }
    config
}

/// `metadata.name In [<node>]`.
fn this_node(node: &str) -> NodeSelector {
    NodeSelector {
        node_selector_terms: vec![NodeSelectorTerm {
            match_expressions: None,
            match_fields: Some(vec![NodeSelectorRequirement {
                key: "metadata.name".to_string(),
                operator: "In".to_string(),
                values: Some(vec![node.to_string()]),
            }]),
        }],
    }
}

/// `createNodeSelector`, with the selector of the node itself left to be written.
fn create_node_selector(index: &Index, picks: &[Pick]) -> Result<SelectorPlan, String> {
    let mut fields: Vec<NodeSelectorRequirement> = Vec::new();
    let mut expressions: Vec<NodeSelectorRequirement> = Vec::new();
    for pick in picks {
        let entry = index.device(pick.device);
        let slice = index.slice(entry.slice);
        let (node_name, selector) = if slice.per_device_node_selection_field {
            (entry.node_name.as_ref(), entry.node_selector.as_ref())
        } else {
            (
                slice.node_name_field.as_ref(),
                slice.node_selector_field.as_ref(),
            )
        };
        if node_name.is_some() || entry.binds_to_node {
            return Ok(SelectorPlan::ThisNode);
        }
        if let Some(selector) = selector {
            match selector.node_selector_terms.len() {
                0 => {}
                1 => {
                    let term = &selector.node_selector_terms[0];
                    add_new_requirements(
                        term.match_fields.as_deref().unwrap_or_default(),
                        &mut fields,
                    );
                    add_new_requirements(
                        term.match_expressions.as_deref().unwrap_or_default(),
                        &mut expressions,
                    );
                }
                n => {
                    return Err(format!(
                        "unsupported ResourceSlice.NodeSelector with {n} terms"
                    ));
                }
            }
        }
    }
    if fields.is_empty() && expressions.is_empty() {
        return Ok(SelectorPlan::Written(None));
    }
    Ok(SelectorPlan::Written(Some(NodeSelector {
        node_selector_terms: vec![NodeSelectorTerm {
            match_expressions: (!expressions.is_empty()).then_some(expressions),
            match_fields: (!fields.is_empty()).then_some(fields),
        }],
    })))
}

fn add_new_requirements(from: &[NodeSelectorRequirement], to: &mut Vec<NodeSelectorRequirement>) {
    for requirement in from {
        let values: std::collections::BTreeSet<&String> =
            requirement.values.iter().flatten().collect();
        let present = to.iter().any(|existing| {
            existing.key == requirement.key
                && existing.operator == requirement.operator
                && existing
                    .values
                    .iter()
                    .flatten()
                    .collect::<std::collections::BTreeSet<_>>()
                    == values
        });
        if !present {
            to.push(requirement.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimal_digits_are_to_strings() {
        for number in [0, 1, 9, 10, 31, 99, 100, 12345, usize::MAX] {
            let mut digits = [0; 20];
            assert_eq!(decimal(number, &mut digits), number.to_string().as_bytes());
        }
    }

    /// The values of the joined text's FNV-1a hashes, computed independently.
    #[test]
    fn stable_uuids_are_version_4_shaped_hashes_of_the_joined_parts() {
        assert_eq!(stable_uuid(b""), "cbf29ce4-8422-4325-8422-2325cbf29ce4");
        assert_eq!(
            stable_uuid(b"Pod\0default\0web-0"),
            "757c43be-0b88-410e-be4a-62d4dcf4ba79"
        );
        assert_eq!(
            stable_uuid_of_parts(&[b"Pod", b"default", b"web-0"]),
            "757c43be-0b88-410e-be4a-62d4dcf4ba79"
        );
        assert_eq!(
            stable_uuid_of_parts(&[
                b"ns",
                b"claim",
                b"0",
                b"nic.example.com",
                b"node-1",
                b"nic-0"
            ]),
            "8063ce0c-27e8-4714-8dcb-ef8d2100a89b"
        );
    }
}
