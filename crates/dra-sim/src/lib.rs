//! `dra-sim`: a simulation of kube-scheduler's handling of Dynamic Resource Allocation.
//!
//! Two entry points share the same pieces ([`ClaimStore`] for claims and templates, `dra-alloc`
//! for allocation):
//!
//! * [`run_first_fit`] is the conformance reference loop (`conformance/README.md`): pods in
//!   input order, the first node by name where the claims fit. It stays exactly as specified
//!   because the upstream allocator's expected results were produced with it.
//! * [`simulate`] is the scheduler model ([`scheduler`]): running pods and their devices, the
//!   device taint eviction controller ([`taints`]), the queue by priority without preemption for
//!   DRA devices, node fit besides DRA ([`fit`]), extended resources served by DRA or by the
//!   device plugin (module `extended`), the default profile's scores ([`score`]), and for every
//!   pending pod a [`Diagnosis`] per node, claim and request ([`explain`]).
//!
//! Key decision: the model is exact where kube-scheduler is deterministic and documents where it
//! is not (ties between equally scored nodes, which nodes a parallel filter finds first, the
//! order of informer events); speed comes from proving nodes infeasible cheaply
//! ([`devices`]), never from guessing.
//!
//! # Not modelled
//! * Preemption. kube-scheduler never preempts pods to free DRA devices, and the simulation
//!   never preempts at all: a pod that kube-scheduler could place by preempting lower-priority
//!   pods for cpu, memory or the pod count stays pending, and its reason says so.
//! * Filters and scores outside DRA and node fit: `NodePorts`, the volume plugins,
//!   `PodTopologySpread`, `InterPodAffinity`, `ImageLocality`; node conditions (only
//!   `spec.taints` and `spec.unschedulable`).
//! * Time: evictions that wait for `tolerationSeconds` are applied before the queue runs (the
//!   report says when they happen); binding conditions are allocated but not waited for; the
//!   DRA filter timeout does not apply. Controllers do not replace evicted pods.
//! * Requeueing: each pod is tried once, in queue order. During the run devices and node
//!   resources only get used, never freed, so a pod that did not fit would not fit later;
//!   after a PostFilter deallocation the pod is retried at once.
//! * Workload claims (`spec.schedulingGroup`, PodGroups), `nominatedNodeName`, ResourceQuota.
//! * A node without `status.allocatable` (hand-written input) does not limit cpu, memory or
//!   pods, and the report notes it.
//! * When a pod has claims of its own and the chosen node serves all its extended resources
//!   through the device plugin, no extended-resource claim is created (the upstream code of
//!   mid-2026 passes an empty one to the allocator).
//!
//! Names the simulation invents where the API server or a controller would add a random
//! suffix: claims from templates are `<pod>-<pod claim name>`, the extended-resource claim is
//! `<pod>-extended-resources`, a pod without a UID gets one derived from its name
//! ([`stable_uid`]).
//!
//! ```
//! let loaded = dra_api::load_str("c.yaml", "
//! apiVersion: v1
//! kind: Node
//! metadata: {name: n1}
//! status: {allocatable: {cpu: '4', memory: 8Gi, pods: '10'}}
//! ---
//! apiVersion: v1
//! kind: Pod
//! metadata: {name: p}
//! spec: {containers: [{name: c, resources: {requests: {cpu: '1'}}}]}
//! ");
//! let input = dra_sim::SimInput::from_cluster(&loaded.cluster);
//! let sim = dra_sim::simulate(&input, &dra_sim::SimOptions::default()).unwrap();
//! assert_eq!(sim.results[0].node.as_deref(), Some("n1"));
//! ```

mod claims;
mod classes;
pub mod devices;
pub mod explain;
mod extended;
pub mod fit;
pub(crate) mod parallel;
mod priority;
mod reference;
mod report;
pub mod resources;
pub mod scheduler;
pub mod score;
pub mod taints;
#[cfg(test)]
mod test_support;

use std::sync::Arc;

use dra_alloc::{
    FittedRuns, Index, IndexError, IndexInput, IndexOptions, SliceInput, SliceRunAhead,
};
use dra_api::SliceDoc;
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::api::resource::v1::{
    DeviceClass, DeviceTaintRule, ResourceClaim, ResourceClaimTemplate,
};
use k8s_openapi::api::scheduling::v1::PriorityClass;

pub use claims::{
    ClaimStore, POD_CLAIM_NAME_ANNOTATION, PodClaim, PodClaimError, pod_uid, stable_uid,
};
pub use explain::Diagnosis;
pub use extended::{
    DEVICE_CLASS_PREFIX, DuplicateExtendedResourceName, EXTENDED_RESOURCE_CLAIM_ANNOTATION,
    EXTENDED_RESOURCE_CLAIM_SUFFIX, ExtendedResourceMapping, SpecialClaimPlan,
    extended_resource_winner, is_dra_extended_resource_name, is_extended_resource_name,
    special_claim_plan,
};
pub use fit::pod_node_name_and_selector_fit;
pub use priority::pod_priority;
pub use reference::{
    CandidatesAhead, gather_pools_from_the_last_node, run_first_fit, run_first_fit_claims_ahead,
    run_first_fit_every_node, run_first_fit_snapshot, run_first_fit_snapshot_each,
};
pub use report::{ClaimAllocations, NameMap, PodOutcome, PodResult, PodState, PodStatus, Report};
pub use scheduler::{
    Binding, ExplainOptions, NodePick, NodeSampling, PodChanges, SimOptions, Simulation, simulate,
    simulate_snapshot,
};

/// The objects a simulation reads, borrowed from the loader's cluster.
#[derive(Debug, Default, Clone)]
pub struct SimInput<'a> {
    pub nodes: Vec<&'a Node>,
    /// Pods in input order.
    pub pods: Vec<&'a Pod>,
    pub claims: Vec<&'a ResourceClaim>,
    pub templates: Vec<&'a ResourceClaimTemplate>,
    /// In input order; with [`dra_api::LoadOptions::defer_slices`], many as JSON text.
    pub slices: Vec<SliceInput<'a>>,
    pub classes: Vec<&'a DeviceClass>,
    pub taint_rules: Vec<&'a DeviceTaintRule>,
    pub priority_classes: Vec<&'a PriorityClass>,
}

impl<'a> SimInput<'a> {
    /// The objects of a loaded cluster, in input order.
    pub fn from_cluster(cluster: &'a dra_api::Cluster) -> SimInput<'a> {
        SimInput {
            nodes: cluster.nodes.iter().map(|o| &*o.object).collect(),
            pods: cluster.pods.iter().map(|o| &*o.object).collect(),
            claims: cluster.resource_claims.iter().map(|o| &*o.object).collect(),
            templates: cluster
                .resource_claim_templates
                .iter()
                .map(|o| &*o.object)
                .collect(),
            slices: slice_inputs(cluster),
            classes: cluster.device_classes.iter().map(|o| &*o.object).collect(),
            taint_rules: taint_rules(cluster),
            priority_classes: cluster
                .priority_classes
                .iter()
                .map(|o| &*o.object)
                .collect(),
        }
    }

    fn build_index(&self, ahead: Vec<SliceRunAhead>) -> Result<Index, SimError> {
        Index::build_with_ahead(
            &IndexInput {
                nodes: self.nodes.clone(),
                slices: self.slices.clone(),
                classes: self.classes.clone(),
                taint_rules: self.taint_rules.clone(),
            },
            &IndexOptions::default(),
            ahead,
        )
        .map_err(SimError::Index)
    }
}

/// What a simulation keeps of the cluster's devices: the allocator's [`Index`] and the device
/// taints. Once it is built, the simulation does not read the input's ResourceSlices again;
/// they are the bulk of a large cluster's memory, so a caller that holds its own cluster can
/// free them before simulating ([`simulate_snapshot`], [`run_first_fit_snapshot`]).
#[derive(Debug)]
pub struct Snapshot {
    /// Shared with the allocations the simulation keeps as picks
    /// ([`dra_alloc::Allocation::from_picks`]), which write their objects when read.
    index: Arc<Index>,
    taints: taints::TaintView,
}

impl Snapshot {
    /// Indexes the input's nodes, slices, classes and taint rules.
    pub fn new(input: &SimInput<'_>) -> Result<Snapshot, SimError> {
        Snapshot::with_slices_ahead(input, Vec::new())
    }

    /// [`Snapshot::new`], with slices the caller converted ahead ([`SliceRunAhead`]: taken
    /// only if they are exactly the input's slices; the snapshot is the same).
    pub fn with_slices_ahead(
        input: &SimInput<'_>,
        ahead: Vec<SliceRunAhead>,
    ) -> Result<Snapshot, SimError> {
        let index = input.build_index(ahead)?;
        Ok(Snapshot::of_index(index, &input.taint_rules))
    }

    /// [`Snapshot::new`] of an input whose slices were converted into `fitted`
    /// ([`fit_slices_ahead`]) and then taken out of it: `input` is the rest of the same
    /// cluster. The snapshot is the one the input with its slices gives.
    pub fn with_fitted_runs(
        input: &SimInput<'_>,
        fitted: FittedRuns,
    ) -> Result<Snapshot, SimError> {
        // Runs fit only an input without taint rules and are all of its slices.
        debug_assert!(input.slices.is_empty() && input.taint_rules.is_empty());
        let index = Index::build_with_fitted(
            &input.nodes,
            &input.classes,
            &IndexOptions::default(),
            fitted,
        )
        .map_err(SimError::Index)?;
        Ok(Snapshot::of_index(index, &input.taint_rules))
    }

    fn of_index(index: Index, taint_rules: &[&DeviceTaintRule]) -> Snapshot {
        let taints = taints::TaintView::new(&index, taint_rules);
        Snapshot {
            index: Arc::new(index),
            taints,
        }
    }
}

/// Whether the slices `ahead` converted are exactly `cluster`'s ([`SliceRunAhead::fitted`]):
/// then [`Snapshot::with_fitted_runs`] builds the snapshot after the slices are freed.
pub fn fit_slices_ahead(
    cluster: &dra_api::Cluster,
    ahead: Vec<SliceRunAhead>,
) -> Result<FittedRuns, Vec<SliceRunAhead>> {
    SliceRunAhead::fitted(ahead, &slice_inputs(cluster), &taint_rules(cluster))
}

/// The cluster's slices, in input order, as the index takes them.
fn slice_inputs(cluster: &dra_api::Cluster) -> Vec<SliceInput<'_>> {
    cluster
        .resource_slices
        .iter()
        .map(|o| SliceInput::Object(&o.object))
        .chain(cluster.slice_docs.iter().map(|o| match &*o.object {
            SliceDoc::Object(slice) => SliceInput::Object(slice),
            SliceDoc::Json(json) if json.end_unchecked() => SliceInput::JsonToLineEnd(json.text()),
            SliceDoc::Json(json) => SliceInput::Json(json.text()),
        }))
        .collect()
}

fn taint_rules(cluster: &dra_api::Cluster) -> Vec<&DeviceTaintRule> {
    cluster
        .device_taint_rules
        .iter()
        .map(|o| &*o.object)
        .collect()
}

/// Input the simulation cannot work with.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    #[error(transparent)]
    Index(IndexError),
    #[error("ResourceClaim {claim}: status.allocation: {message}")]
    Claim { claim: String, message: String },
}
