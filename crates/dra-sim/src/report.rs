//! The result documents of a simulation (`dra simulate -o json`), supersets of the
//! conformance shape in `conformance/README.md`: [`Report`] for the reference loop,
//! [`PodResult`] for each pod of the full model.

use std::collections::BTreeMap;
use std::sync::Arc;

use dra_alloc::Allocation;
use k8s_openapi::api::core::v1::PodExtendedResourceClaimStatus;
use serde::Serialize;

use crate::ClaimStore;

/// A small map keyed by name, in name order, written as a JSON object (as a `BTreeMap` would
/// be). A pod has one claim or a few; a sorted list holds them in a fraction of a `BTreeMap`'s
/// memory, whose first node has room for eleven entries (over half a kilobyte per pod and
/// map, most of a large simulation's result memory), and its first entry takes room for
/// exactly one.
#[derive(Debug, Clone, PartialEq)]
pub struct NameMap<V>(Vec<(String, V)>);

impl<V> Default for NameMap<V> {
    fn default() -> Self {
        NameMap(Vec::new())
    }
}

/// The claims a pod's scheduling allocated: claim name to allocation. Shared: the scheduler
/// model's claim store holds the same allocation for a claim it made from a template
/// (written as the allocation itself).
pub type ClaimAllocations = NameMap<Arc<Allocation>>;

impl<V> NameMap<V> {
    /// Adds or replaces the value of `name`; returns the one it replaced.
    pub fn insert(&mut self, name: String, value: V) -> Option<V> {
        match self
            .0
            .binary_search_by(|(known, _)| known.as_str().cmp(&name))
        {
            Ok(at) => Some(std::mem::replace(&mut self.0[at].1, value)),
            Err(at) => {
                // Most maps stay at one entry.
                dra_types::lists::reserve_first(&mut self.0);
                self.0.insert(at, (name, value));
                None
            }
        }
    }

    pub fn get(&self, name: &str) -> Option<&V> {
        self.0
            .binary_search_by(|(known, _)| known.as_str().cmp(name))
            .ok()
            .map(|at| &self.0[at].1)
    }

    /// `(name, value)` in name order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&String, &V)> {
        self.into_iter()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl<'a, V> IntoIterator for &'a NameMap<V> {
    type Item = (&'a String, &'a V);
    type IntoIter = std::iter::Map<
        std::slice::Iter<'a, (String, V)>,
        fn(&'a (String, V)) -> (&'a String, &'a V),
    >;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter().map(|(name, value)| (name, value))
    }
}

impl<V: Serialize> Serialize for NameMap<V> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.iter())
    }
}

/// What happened to a pod.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PodStatus {
    Scheduled,
    Unschedulable,
    Error,
}

/// One pod of the simulation.
#[derive(Debug, Clone, Serialize)]
pub struct PodOutcome {
    /// `namespace/name`.
    pub pod: String,
    pub node: Option<String>,
    pub status: PodStatus,
    /// Claims allocated for this pod (claims allocated earlier are not repeated).
    pub allocations: ClaimAllocations,
    /// The error text when `status` is `error`.
    pub error: Option<String>,
    /// Why the pod is unschedulable, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Allocator search steps spent on this pod.
    pub steps: u64,
    /// `Allocate` calls made for this pod (one per node tried).
    pub allocate_calls: u64,
}

impl PodOutcome {
    pub fn new(pod: String) -> PodOutcome {
        PodOutcome {
            pod,
            node: None,
            status: PodStatus::Unschedulable,
            allocations: ClaimAllocations::default(),
            error: None,
            reason: None,
            steps: 0,
            allocate_calls: 0,
        }
    }
}

/// The whole simulation.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Report {
    pub results: Vec<PodOutcome>,
    /// Allocator search steps in total.
    pub steps: u64,
    /// `Allocate` calls in total.
    pub allocate_calls: u64,
    /// Of those, the calls not made because the node was known to reject the claims (counted
    /// as they would have answered): a statistic of the method, not part of the answer.
    #[serde(skip)]
    pub skipped_calls: u64,
    /// Every claim after the run, allocations included ([`ClaimStore::all`] gives them in
    /// (namespace, name) order). Handed over as it is: copying thousands of claims into a list
    /// nobody may read was a visible part of a run.
    #[serde(skip)]
    pub claims: ClaimStore,
}

/// What happened to a pod in the full scheduler model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PodState {
    /// Placed by the simulated scheduler.
    Scheduled,
    /// Stays pending: no node fits.
    Unschedulable,
    /// The scheduling attempt failed with an error (kube-scheduler retries it with backoff).
    Error,
    /// Already bound in the input (`spec.nodeName`); not scheduled again.
    Running,
    /// Running in the input and evicted by the device taint eviction controller.
    Evicted,
    /// Not handed to the scheduler: scheduling gates, another scheduler, finished.
    Skipped,
}

/// One pod of the full simulation (`dra simulate -o json`): the conformance fields (`pod`,
/// `node`, `status`, `allocations`, `error`) plus the model's own.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PodResult {
    /// `namespace/name`.
    pub pod: String,
    pub node: Option<String>,
    pub status: PodState,
    /// Claims allocated for this pod by the simulation, including the extended-resource
    /// claim `<pod>-extended-resources`; claims allocated earlier are not repeated.
    pub allocations: ClaimAllocations,
    /// The error text when `status` is `error`.
    pub error: Option<String>,
    pub priority: i32,
    /// Position in the scheduling queue (priority, then input order); absent for pods that
    /// were not queued.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue_position: Option<usize>,
    /// Pod claim name -> ResourceClaim name.
    #[serde(skip_serializing_if = "NameMap::is_empty")]
    pub claims: NameMap<String>,
    /// Extended resources the pod requests that a DeviceClass maps, and what serves them on
    /// the pod's node: `DRA` or `device plugin`.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub extended_resources: BTreeMap<String, String>,
    /// As the scheduler writes it into the pod's status.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extended_resource_claim_status: Option<PodExtendedResourceClaimStatus>,
    /// One line: why the pod is pending or failed, or why it was skipped or evicted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The winner's score and how many nodes were feasible / evaluated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub placement: Option<crate::scheduler::Placement>,
    /// Per node, claim and request: why the pod does not fit, and what would change it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diagnosis: Option<crate::explain::Diagnosis>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub eviction: Option<crate::scheduler::Eviction>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// Allocator search steps spent on this pod.
    pub steps: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn allocation(device: &str) -> Allocation {
        crate::test_support::allocation("r", "d.example.com", "p", &[device]).into()
    }

    #[test]
    fn name_maps_keep_name_order_and_replace_like_a_map() {
        let mut list = ClaimAllocations::default();
        let mut map = BTreeMap::new();
        for (claim, device) in [("b", "1"), ("a", "2"), ("c", "3"), ("a", "4"), ("aa", "5")] {
            let replaced = list.insert(claim.to_string(), Arc::new(allocation(device)));
            assert_eq!(
                replaced,
                map.insert(claim.to_string(), Arc::new(allocation(device)))
            );
        }
        assert_eq!(list.len(), 4);
        assert_eq!(list.get("a").map(|a| &**a), Some(&allocation("4")));
        assert_eq!(list.get("zz"), None);
        let names: Vec<&String> = list.iter().map(|(name, _)| name).collect();
        assert_eq!(names, ["a", "aa", "b", "c"]);
        // Written exactly as the map it replaces.
        assert_eq!(
            serde_json::to_string_pretty(&list).expect("serialises"),
            serde_json::to_string_pretty(&map).expect("serialises")
        );
        let mut claims: NameMap<String> = NameMap::default();
        assert!(claims.is_empty());
        claims.insert("gpu".to_string(), "pod-gpu".to_string());
        assert_eq!(claims.0.capacity(), 1);
        assert_eq!(
            serde_json::to_string(&claims).expect("serialises"),
            r#"{"gpu":"pod-gpu"}"#
        );
    }
}
