//! Why a pod does not fit: per node, claim and request, and what would change it.
//!
//! The analysis is read-only and uses the allocator's public index: for each request on a node
//! it counts the devices of the node's usable pools, those the class selectors match, those the
//! request selectors also match, and sorts the rest of them into "in use" (with the claims and
//! pods that hold them), "tainted" (with the taint), "not available on this node" (per-device
//! node selection), "capacity used up" (shared devices) and "counters used up" (partitions).
//! Constraints are shown with the attribute values seen among the free candidates. The
//! allocator itself answers the question "would it fit if these claims released their
//! devices?" on a copy of the allocated state; no pod is ever preempted for DRA devices
//! (SPEC.md §4.10), so that is a statement about what an administrator could do.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use dra_alloc::{
    AllocatedState, AllocationMode, AttrValue, ConstraintSpec, DeviceIdx, Index, Match, NodeId,
    Outcome, PreparedClaim, RequestBody, RequestSpec, SelectorFailure, SelectorOrigin, allocate,
    node_selector::node_selector_matches,
};
use dra_types::Quantity;
use k8s_openapi::api::resource::v1::{
    DeviceRequest, ExactDeviceRequest, ResourceClaim, ResourceClaimSpec,
};
use serde::Serialize;

use crate::claims::ClaimStore;
use crate::devices::{ClaimKey, DeviceState, untolerated_taint};
use crate::fit::FitFailure;

/// A pod that holds a device, with its priority.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PodRef {
    pub pod: String,
    pub priority: i32,
}

/// A device in use and who holds it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HeldDevice {
    /// `driver/pool/device`.
    pub device: String,
    /// `namespace/name` of the claims whose allocation has the device.
    pub claims: Vec<String>,
    /// The pods those claims are reserved for.
    pub pods: Vec<PodRef>,
}

/// A device a taint keeps from this request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TaintedDevice {
    pub device: String,
    /// `key=value:Effect`.
    pub taint: String,
}

/// One request (or `firstAvailable` subrequest) on one node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RequestDiagnosis {
    /// `request` or `request/subrequest`.
    pub request: String,
    pub device_class: String,
    /// `ExactCount` count, or `All`.
    pub wants: String,
    /// The class does not exist.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub class_missing: bool,
    /// Devices in the node's usable pools.
    pub devices: usize,
    /// Devices the class selectors match.
    pub class_matched: usize,
    /// Of those, devices the request's selectors also match.
    pub request_matched: usize,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub in_use: Vec<HeldDevice>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tainted: Vec<TaintedDevice>,
    /// Devices whose per-device node selection excludes this node.
    #[serde(skip_serializing_if = "is_zero")]
    pub not_on_this_node: usize,
    /// Shared devices whose capacity is used up.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub capacity_used_up: Vec<String>,
    /// Partitions whose shared counters are used up.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub counters_used_up: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub selector_errors: Vec<String>,
    /// Free candidates left.
    pub available: usize,
}

fn is_zero(v: &usize) -> bool {
    *v == 0
}

/// A claim constraint and the values seen among the free candidates.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ConstraintDiagnosis {
    /// `matchAttribute` or `distinctAttribute`.
    pub kind: String,
    pub attribute: String,
    /// The requests it applies to (all when empty in the claim).
    pub requests: Vec<String>,
    /// Attribute value -> free candidates with that value (devices without the attribute are
    /// listed under `<none>`).
    pub values: BTreeMap<String, usize>,
    /// Whether the free candidates could satisfy it at all (a necessary condition).
    pub satisfiable: bool,
}

/// One claim on one node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ClaimDiagnosis {
    pub claim: String,
    pub requests: Vec<RequestDiagnosis>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub constraints: Vec<ConstraintDiagnosis>,
}

/// A pool of the node the allocator does not use.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PoolProblem {
    /// `driver/pool`.
    pub pool: String,
    pub problem: String,
}

/// Claims whose release would let the pod fit on a node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReleaseHint {
    pub node: String,
    pub claims: Vec<ReleasedClaim>,
    /// The claims' pods all have a lower priority than this pod.
    pub lower_priority_only: bool,
}

/// One claim of a [`ReleaseHint`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReleasedClaim {
    pub claim: String,
    /// Its devices on the node.
    pub devices: Vec<String>,
    pub pods: Vec<PodRef>,
}

/// One node of a diagnosis.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeDiagnosis {
    pub node: String,
    /// Every filter that rejects the node (kube-scheduler reports the first).
    pub failures: Vec<FitFailure>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub pools: Vec<PoolProblem>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub claims: Vec<ClaimDiagnosis>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub would_fit_if_released: Option<ReleaseHint>,
}

/// Why a pod is pending.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Diagnosis {
    /// kube-scheduler's message (`0/N nodes are available: ...`).
    pub message: String,
    /// Nodes in detail: those DRA rejected first, then the others, by name, at most
    /// [`crate::ExplainOptions::max_nodes`].
    pub nodes: Vec<NodeDiagnosis>,
    #[serde(skip_serializing_if = "is_zero")]
    pub nodes_not_shown: usize,
    /// What would change it, one sentence each.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hints: Vec<String>,
}

/// A node's filter result for the diagnosis.
#[derive(Debug, Clone)]
pub(crate) struct NodeVerdict {
    pub node: NodeId,
    pub failures: Vec<FitFailure>,
    /// Index into [`ExplainContext::claim_sets`]: the claims the allocator was (or would
    /// have been) asked to allocate there.
    pub claim_set: usize,
}

/// Everything the analysis reads.
pub(crate) struct ExplainContext<'e> {
    pub index: &'e Index,
    pub devices: &'e DeviceState,
    pub claims: &'e ClaimStore,
    /// Pod UID -> (pod, priority), and (namespace, name) -> the same.
    pub pods_by_uid: &'e HashMap<String, PodRef>,
    pub pods_by_name: &'e HashMap<(String, String), PodRef>,
    pub node_names: &'e [String],
    pub pod: PodRef,
    pub pod_claims: &'e [ClaimKey],
    /// The named claim sets the verdicts refer to.
    pub claim_sets: &'e [Vec<(String, PreparedClaim)>],
    pub max_nodes: usize,
    pub release_hints: bool,
}

/// kube-scheduler's `FitError` message from each node's first failing plugin.
pub fn fit_error_message(total_nodes: usize, verdicts: &[Vec<FitFailure>]) -> String {
    let mut histogram: BTreeMap<&str, usize> = BTreeMap::new();
    for failures in verdicts {
        let Some(first) = failures.first() else {
            continue;
        };
        for f in failures.iter().filter(|f| f.plugin == first.plugin) {
            *histogram.entry(f.reason.as_str()).or_default() += 1;
        }
    }
    let mut reasons: Vec<String> = histogram.iter().map(|(r, n)| format!("{n} {r}")).collect();
    reasons.sort();
    if reasons.is_empty() {
        format!("0/{total_nodes} nodes are available.")
    } else {
        format!(
            "0/{total_nodes} nodes are available: {}.",
            reasons.join(", ")
        )
    }
}

impl ExplainContext<'_> {
    fn pods_of(&self, claim: &ClaimKey) -> Vec<PodRef> {
        let mut pods: Vec<PodRef> = self
            .claims
            .reserved_for(&claim.0, &claim.1)
            .iter()
            .filter(|r| r.resource == "pods")
            .filter_map(|r| {
                self.pods_by_uid
                    .get(&r.uid)
                    .or_else(|| self.pods_by_name.get(&(claim.0.clone(), r.name.clone())))
                    .cloned()
            })
            .collect();
        pods.sort();
        pods.dedup();
        pods
    }

    fn device_name(&self, idx: DeviceIdx) -> String {
        let (d, p, n) = self.index.key_names(self.index.device(idx).key);
        format!("{d}/{p}/{n}")
    }

    /// A selector set with the class's selectors only.
    fn class_only(
        &self,
        class: &str,
        cache: &mut HashMap<String, PreparedClaim>,
    ) -> Option<dra_alloc::SelSetId> {
        let prepared = cache.entry(class.to_string()).or_insert_with(|| {
            let claim = ResourceClaim {
                spec: Some(ResourceClaimSpec {
                    devices: Some(k8s_openapi::api::resource::v1::DeviceClaim {
                        requests: Some(vec![DeviceRequest {
                            name: "class".to_string(),
                            exactly: Some(ExactDeviceRequest {
                                device_class_name: class.to_string(),
                                ..ExactDeviceRequest::default()
                            }),
                            ..DeviceRequest::default()
                        }]),
                        ..Default::default()
                    }),
                }),
                ..ResourceClaim::default()
            };
            PreparedClaim::new(self.index, &claim)
        });
        match &prepared.requests.first()?.body {
            RequestBody::Exact(spec) => spec.selector_set.clone(),
            _ => None,
        }
    }

    fn request_diagnosis(
        &self,
        node: NodeId,
        request_name: String,
        spec: &RequestSpec,
        class_cache: &mut HashMap<String, PreparedClaim>,
        candidates: &mut Vec<DeviceIdx>,
    ) -> RequestDiagnosis {
        let mut d = RequestDiagnosis {
            request: request_name,
            device_class: spec.class_name.clone(),
            wants: match &spec.mode {
                AllocationMode::ExactCount => spec.count.to_string(),
                AllocationMode::All => "All".to_string(),
                AllocationMode::Unsupported(m) => m.clone(),
            },
            class_missing: spec.class.is_none(),
            devices: 0,
            class_matched: 0,
            request_matched: 0,
            in_use: Vec::new(),
            tainted: Vec::new(),
            not_on_this_node: 0,
            capacity_used_up: Vec::new(),
            counters_used_up: Vec::new(),
            selector_errors: Vec::new(),
            available: 0,
        };
        let Ok(pools) = self.index.node_pools(node) else {
            return d;
        };
        let class_set = self.class_only(&spec.class_name, class_cache);
        let facts = self.index.node_facts(node);
        let state = &self.devices.state;
        let mut errors: BTreeSet<String> = BTreeSet::new();
        for pool in pools.pools.iter().filter(|p| p.usable()) {
            let mut counters_left = available_counters(self.index, pool, state);
            for &device in &pool.devices {
                d.devices += 1;
                let Some(class_set) = &class_set else {
                    continue;
                };
                match class_set.set.matches(self.index, device) {
                    Match::Yes => {}
                    Match::No => continue,
                    Match::Failed(f) => {
                        errors.insert(selector_error(&f, &spec.class_name));
                        continue;
                    }
                }
                d.class_matched += 1;
                let Some(set) = &spec.selector_set else {
                    continue;
                };
                match set.set.matches(self.index, device) {
                    Match::Yes => {}
                    Match::No => continue,
                    Match::Failed(f) => {
                        errors.insert(selector_error(&f, &spec.class_name));
                        continue;
                    }
                }
                d.request_matched += 1;
                let entry = self.index.device(device);
                let slice = self.index.slice(entry.slice);
                if slice.per_device_node_selection_field && !device_on_node(entry, facts) {
                    d.not_on_this_node += 1;
                    continue;
                }
                let name = self.device_name(device);
                if !spec.admin() && state.is_exclusively_allocated(entry.key) {
                    let holders: Vec<&ClaimKey> = self.devices.holders(entry.key).collect();
                    let mut pods: Vec<PodRef> =
                        holders.iter().flat_map(|c| self.pods_of(c)).collect();
                    pods.sort();
                    pods.dedup();
                    d.in_use.push(HeldDevice {
                        device: name,
                        claims: holders.iter().map(|(ns, n)| format!("{ns}/{n}")).collect(),
                        pods,
                    });
                    continue;
                }
                if let Some(taint) = untolerated_taint(&entry.taints, &spec.tolerations) {
                    d.tainted.push(TaintedDevice {
                        device: name,
                        taint: format!(
                            "{}{}:{}",
                            taint.key,
                            taint
                                .value
                                .as_deref()
                                .map(|v| format!("={v}"))
                                .unwrap_or_default(),
                            taint.effect
                        ),
                    });
                    continue;
                }
                if entry.allow_multiple_allocations
                    && capacity_used_up(entry, state.aggregated_capacity(entry.key))
                {
                    d.capacity_used_up.push(name);
                    continue;
                }
                if !entry.consumes_counters.is_empty() && !counters_fit(entry, &mut counters_left) {
                    d.counters_used_up.push(name);
                    continue;
                }
                d.available += 1;
                candidates.push(device);
            }
        }
        d.selector_errors = errors.into_iter().collect();
        d
    }

    fn claim_diagnosis(
        &self,
        node: NodeId,
        name: &str,
        claim: &PreparedClaim,
        class_cache: &mut HashMap<String, PreparedClaim>,
    ) -> ClaimDiagnosis {
        let mut requests = Vec::new();
        // Free candidates and wanted count per base request name (best subrequest for
        // firstAvailable), for the constraints.
        let mut per_request: BTreeMap<String, (Vec<DeviceIdx>, i64)> = BTreeMap::new();
        for request in &claim.requests {
            match &request.body {
                RequestBody::Exact(spec) => {
                    let mut candidates = Vec::new();
                    let d = self.request_diagnosis(
                        node,
                        request.name.clone(),
                        spec,
                        class_cache,
                        &mut candidates,
                    );
                    per_request.insert(request.name.clone(), (candidates, spec.count));
                    requests.push(d);
                }
                RequestBody::FirstAvailable(subs) => {
                    for sub in subs {
                        let mut candidates = Vec::new();
                        let d = self.request_diagnosis(
                            node,
                            format!("{}/{}", request.name, sub.name),
                            sub,
                            class_cache,
                            &mut candidates,
                        );
                        let entry = per_request.entry(request.name.clone()).or_default();
                        if entry.0.len() < candidates.len() {
                            *entry = (candidates, sub.count);
                        }
                        requests.push(d);
                    }
                }
                RequestBody::Unknown => {}
            }
        }
        let constraints = claim
            .constraints
            .iter()
            .filter_map(|c| match c {
                ConstraintSpec::MatchAttribute {
                    requests,
                    attribute,
                } => Some(("matchAttribute", requests, attribute)),
                ConstraintSpec::DistinctAttribute {
                    requests,
                    attribute,
                } => Some(("distinctAttribute", requests, attribute)),
                ConstraintSpec::Empty => None,
            })
            .map(|(kind, names, attribute)| {
                let applies = |r: &str| {
                    names.is_empty()
                        || names
                            .iter()
                            .any(|n| n == r || n.starts_with(&format!("{r}/")))
                };
                let mut values: BTreeMap<String, usize> = BTreeMap::new();
                let mut per_value_per_request: BTreeMap<String, BTreeMap<&str, usize>> =
                    BTreeMap::new();
                let mut wanted_total = 0i64;
                for (request, (candidates, wanted)) in
                    per_request.iter().filter(|(r, _)| applies(r))
                {
                    wanted_total += wanted;
                    for &device in candidates {
                        let entry = self.index.device(device);
                        let driver = &self.index.slice(entry.slice).driver;
                        let value = entry
                            .lookup_attribute(driver, attribute)
                            .map(attr_text)
                            .unwrap_or_else(|| "<none>".to_string());
                        *values.entry(value.clone()).or_default() += 1;
                        *per_value_per_request
                            .entry(value)
                            .or_default()
                            .entry(request)
                            .or_default() += 1;
                    }
                }
                let constrained: Vec<(&String, i64)> = per_request
                    .iter()
                    .filter(|(r, _)| applies(r))
                    .map(|(r, (_, wanted))| (r, *wanted))
                    .collect();
                let satisfiable = if kind == "matchAttribute" {
                    per_value_per_request
                        .iter()
                        .filter(|(v, _)| *v != "<none>")
                        .any(|(_, counts)| {
                            constrained.iter().all(|(r, wanted)| {
                                counts.get(r.as_str()).copied().unwrap_or(0) as i64 >= *wanted
                            })
                        })
                } else {
                    values.keys().filter(|v| *v != "<none>").count() as i64 >= wanted_total
                };
                ConstraintDiagnosis {
                    kind: kind.to_string(),
                    attribute: attribute.clone(),
                    requests: names.clone(),
                    values,
                    satisfiable,
                }
            })
            .collect();
        ClaimDiagnosis {
            claim: name.to_string(),
            requests,
            constraints,
        }
    }

    /// Pool problems of the node.
    fn pool_problems(&self, node: NodeId) -> Vec<PoolProblem> {
        match self.index.node_pools(node) {
            Err(e) => vec![PoolProblem {
                pool: "-".to_string(),
                problem: e.message,
            }],
            Ok(pools) => pools
                .pools
                .iter()
                .filter(|p| !p.usable())
                .map(|p| PoolProblem {
                    pool: format!("{}/{}", p.driver, p.pool),
                    problem: if p.incomplete {
                        "incomplete: not all of its ResourceSlices are published (resourceSliceCount)".to_string()
                    } else {
                        format!("invalid: {}", p.invalid.clone().unwrap_or_default())
                    },
                })
                .collect(),
        }
    }

    /// Claims whose release lets the allocator succeed on the node: greedily by lowest
    /// priority, then pruned to a minimal set.
    fn release_hint(
        &self,
        node: NodeId,
        claims: &[(String, PreparedClaim)],
        held: &[HeldDevice],
    ) -> Option<ReleaseHint> {
        let mut candidates: Vec<(i32, ClaimKey)> = Vec::new();
        for h in held {
            for c in &h.claims {
                let Some((ns, name)) = c.split_once('/') else {
                    continue;
                };
                let key = (ns.to_string(), name.to_string());
                if self.pod_claims.contains(&key) || candidates.iter().any(|(_, k)| *k == key) {
                    continue;
                }
                let priority = self
                    .pods_of(&key)
                    .iter()
                    .map(|p| p.priority)
                    .max()
                    .unwrap_or(i32::MIN);
                candidates.push((priority, key));
            }
        }
        candidates.sort();
        candidates.truncate(16);
        if candidates.is_empty() {
            return None;
        }
        let refs: Vec<&PreparedClaim> = claims.iter().map(|(_, c)| c).collect();
        let allocation_of = |key: &ClaimKey| {
            self.claims
                .get(&key.0, &key.1)
                .and_then(|c| c.status.as_ref())
                .and_then(|s| s.allocation.clone())
        };
        let fits = |released: &[&ClaimKey]| -> bool {
            let mut state: AllocatedState = self.devices.state.clone();
            for key in released {
                if let Some(allocation) = allocation_of(key)
                    && state.remove(self.index, &allocation).is_err()
                {
                    return false;
                }
            }
            matches!(
                allocate(self.index, &state, node, &refs).0,
                Outcome::Allocated(_)
            )
        };
        let mut chosen: Vec<&ClaimKey> = Vec::new();
        let mut found = false;
        for (_, key) in &candidates {
            chosen.push(key);
            if fits(&chosen) {
                found = true;
                break;
            }
        }
        if !found {
            return None;
        }
        // Drop claims the others make unnecessary.
        let mut i = 0;
        while i < chosen.len() && chosen.len() > 1 {
            let mut without = chosen.clone();
            without.remove(i);
            if fits(&without) {
                chosen = without;
            } else {
                i += 1;
            }
        }
        let node_devices: BTreeSet<&str> = held.iter().map(|h| h.device.as_str()).collect();
        let released: Vec<ReleasedClaim> = chosen
            .iter()
            .map(|key| {
                let claim = format!("{}/{}", key.0, key.1);
                let devices = held
                    .iter()
                    .filter(|h| {
                        h.claims.contains(&claim) && node_devices.contains(h.device.as_str())
                    })
                    .map(|h| h.device.clone())
                    .collect::<BTreeSet<_>>()
                    .into_iter()
                    .collect();
                ReleasedClaim {
                    claim,
                    devices,
                    pods: self.pods_of(key),
                }
            })
            .collect();
        let lower_priority_only = released
            .iter()
            .all(|c| c.pods.iter().all(|p| p.priority < self.pod.priority));
        Some(ReleaseHint {
            node: self.node_names[node.0 as usize].clone(),
            claims: released,
            lower_priority_only,
        })
    }

    /// The diagnosis of a pending pod from every node's verdict.
    pub fn diagnose(
        &self,
        total_nodes: usize,
        verdicts: &[NodeVerdict],
        pre_filter: Option<&str>,
    ) -> Diagnosis {
        let message = match pre_filter {
            Some(reason) => format!("0/{total_nodes} nodes are available: {reason}."),
            None => fit_error_message(
                total_nodes,
                &verdicts
                    .iter()
                    .map(|v| v.failures.clone())
                    .collect::<Vec<_>>(),
            ),
        };
        // Nodes that only DRA rejected come first: they are the interesting ones.
        let mut order: Vec<&NodeVerdict> = verdicts.iter().collect();
        let only_dra = |v: &NodeVerdict| v.failures.iter().all(|f| f.plugin == "DynamicResources");
        order.sort_by(|a, b| {
            only_dra(b).cmp(&only_dra(a)).then_with(|| {
                self.node_names[a.node.0 as usize]
                    .as_bytes()
                    .cmp(self.node_names[b.node.0 as usize].as_bytes())
            })
        });
        let shown = order.len().min(self.max_nodes);
        let mut class_cache = HashMap::new();
        let mut nodes = Vec::new();
        let mut hints = Vec::new();
        let mut release_budget = 8usize;
        for verdict in &order[..shown] {
            let dra_rejected = verdict
                .failures
                .iter()
                .any(|f| f.plugin == "DynamicResources");
            let claim_set: &[(String, PreparedClaim)] = self
                .claim_sets
                .get(verdict.claim_set)
                .map(Vec::as_slice)
                .unwrap_or_default();
            let claims: Vec<ClaimDiagnosis> = if dra_rejected {
                claim_set
                    .iter()
                    .map(|(name, c)| self.claim_diagnosis(verdict.node, name, c, &mut class_cache))
                    .collect()
            } else {
                Vec::new()
            };
            let pools = if dra_rejected {
                self.pool_problems(verdict.node)
            } else {
                Vec::new()
            };
            let mut node = NodeDiagnosis {
                node: self.node_names[verdict.node.0 as usize].clone(),
                failures: verdict.failures.clone(),
                pools,
                claims,
                would_fit_if_released: None,
            };
            if self.release_hints
                && only_dra(verdict)
                && release_budget > 0
                && !claim_set.is_empty()
                && verdict
                    .failures
                    .iter()
                    .any(|f| f.reason == "cannot allocate all claims")
            {
                release_budget -= 1;
                let held: Vec<HeldDevice> = node
                    .claims
                    .iter()
                    .flat_map(|c| c.requests.iter())
                    .flat_map(|r| r.in_use.iter().cloned())
                    .collect();
                node.would_fit_if_released = self.release_hint(verdict.node, claim_set, &held);
            }
            hints.extend(node_hints(&node, &self.pod));
            nodes.push(node);
        }
        Diagnosis {
            message,
            nodes_not_shown: order.len() - shown,
            nodes,
            hints,
        }
    }
}

/// Sentences for one node: release hints and taint hints.
fn node_hints(node: &NodeDiagnosis, pod: &PodRef) -> Vec<String> {
    let mut hints = Vec::new();
    if let Some(hint) = &node.would_fit_if_released {
        let claims: Vec<String> = hint
            .claims
            .iter()
            .map(|c| {
                let pods: Vec<String> = c
                    .pods
                    .iter()
                    .map(|p| format!("{} (priority {})", p.pod, p.priority))
                    .collect();
                let held_by = if pods.is_empty() {
                    "reserved by no pod".to_string()
                } else {
                    format!("held by {}", pods.join(", "))
                };
                format!(
                    "claim {} released {} device{} ({held_by})",
                    c.claim,
                    c.devices.len(),
                    if c.devices.len() == 1 { "" } else { "s" }
                )
            })
            .collect();
        let mut text = format!("would fit on {} if {}", hint.node, claims.join(" and "));
        if hint.lower_priority_only {
            text.push_str(&format!(
                "; those pods have a lower priority than {} ({}), but the scheduler does not preempt pods to free DRA devices",
                pod.pod, pod.priority
            ));
        } else {
            text.push_str("; DRA does not preempt");
        }
        hints.push(text);
    }
    for claim in &node.claims {
        for request in &claim.requests {
            let Ok(wanted) = request.wants.parse::<usize>() else {
                continue;
            };
            if request.available < wanted
                && request.available + request.tainted.len() >= wanted
                && !request.tainted.is_empty()
            {
                let taints: BTreeSet<&str> =
                    request.tainted.iter().map(|t| t.taint.as_str()).collect();
                hints.push(format!(
                    "on {}, request {} of claim {} would have enough devices with a toleration for {}",
                    node.node,
                    request.request,
                    claim.claim,
                    taints.into_iter().collect::<Vec<_>>().join(", ")
                ));
            }
        }
    }
    hints
}

fn selector_error(f: &SelectorFailure, class: &str) -> String {
    let owner = match f.origin {
        SelectorOrigin::Class => format!("class {class} selector #{}", f.index),
        SelectorOrigin::Request => format!("request selector #{}", f.index),
    };
    let kind = if f.compile {
        "CEL compile error"
    } else {
        "CEL runtime error"
    };
    format!("{owner}: {kind}: {}", f.message)
}

fn attr_text(value: &AttrValue) -> String {
    match value {
        AttrValue::Int(v) => v.to_string(),
        AttrValue::Bool(v) => v.to_string(),
        AttrValue::String(v) | AttrValue::Version(v) => v.to_string(),
        // Lists and unset values cannot satisfy a constraint in the incubating allocator.
        _ => "<not comparable>".to_string(),
    }
}

fn device_on_node(
    entry: &dra_alloc::DeviceEntry,
    node: &dra_alloc::node_selector::NodeFacts,
) -> bool {
    if let Some(name) = entry.node_name.as_deref().filter(|n| !n.is_empty()) {
        return name == node.name;
    }
    if entry.all_nodes {
        return true;
    }
    entry
        .node_selector
        .as_ref()
        .is_some_and(|s| node_selector_matches(s, node).unwrap_or(false))
}

/// Whether a shared device has no capacity left at all.
fn capacity_used_up(
    entry: &dra_alloc::DeviceEntry,
    consumed: Option<&dra_alloc::CapacityAmounts>,
) -> bool {
    let Some(consumed) = consumed else {
        return false;
    };
    entry.capacity.iter().any(|(name, capacity)| {
        consumed
            .get(name.as_ref())
            .is_some_and(|used| used.cmp_value(&capacity.value) != std::cmp::Ordering::Less)
    })
}

type Counters = BTreeMap<String, BTreeMap<String, Quantity>>;

/// Counters of a pool left after the allocated devices took theirs.
fn available_counters(
    index: &Index,
    pool: &dra_alloc::PoolView,
    state: &AllocatedState,
) -> Counters {
    let mut left: Counters = pool
        .counter_sets
        .values()
        .map(|set| (set.name.clone(), set.counters.clone()))
        .collect();
    if left.is_empty() {
        return left;
    }
    let devices = pool.devices.iter().copied().chain(
        pool.not_targeting
            .iter()
            .flat_map(|s| index.slice(*s).devices.clone().map(DeviceIdx)),
    );
    for device in devices {
        let entry = index.device(device);
        if !state.is_allocated(entry.key) {
            continue;
        }
        for consumption in &entry.consumes_counters {
            if let Some(set) = left.get_mut(&consumption.counter_set) {
                for (name, value) in &consumption.counters {
                    if let Some(counter) = set.get_mut(name) {
                        *counter = counter.checked_sub(value).unwrap_or_else(Quantity::zero);
                    }
                }
            }
        }
    }
    left
}

/// Whether the device's consumption fits what is left (without taking it).
fn counters_fit(entry: &dra_alloc::DeviceEntry, left: &mut Counters) -> bool {
    entry.consumes_counters.iter().all(|consumption| {
        let Some(set) = left.get(&consumption.counter_set) else {
            return true;
        };
        consumption.counters.iter().all(|(name, value)| {
            set.get(name)
                .is_none_or(|avail| avail.cmp_value(value) != std::cmp::Ordering::Less)
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failure(plugin: &'static str, reason: &str) -> FitFailure {
        FitFailure {
            plugin,
            reason: reason.to_string(),
            detail: None,
        }
    }

    #[test]
    fn fit_error_counts_the_first_plugin_of_each_node() {
        let verdicts = vec![
            vec![
                failure("NodeResourcesFit", "Insufficient cpu"),
                failure("NodeResourcesFit", "Insufficient memory"),
            ],
            vec![
                failure("TaintToleration", "node(s) had untolerated taint {a: b}"),
                failure("NodeResourcesFit", "Insufficient cpu"),
            ],
            vec![failure("DynamicResources", "cannot allocate all claims")],
            vec![failure("DynamicResources", "cannot allocate all claims")],
        ];
        assert_eq!(
            fit_error_message(4, &verdicts),
            "0/4 nodes are available: 1 Insufficient cpu, 1 Insufficient memory, 1 node(s) had untolerated taint {a: b}, 2 cannot allocate all claims."
        );
    }
}
