//! The scheduler model: kube-scheduler's queue and the `DynamicResources` plugin with the
//! default profile's other filters and scores, one pod at a time.
//!
//! # Order of events
//! 1. Pods with `spec.nodeName` are running: their requests count on their node, their
//!    allocated claims hold devices. Finished pods (`Succeeded`, `Failed`) are ignored by the
//!    scheduler and the resourceclaim controller releases their claims.
//! 2. The device taint eviction controller evicts running pods whose devices carry an
//!    untolerated NoExecute taint ([`crate::taints`]); their claims are released (deallocated
//!    when nobody else reserves them, deleted when the pod owned them). The simulation shows
//!    the cluster after all evictions, also those that wait for `tolerationSeconds`.
//! 3. The other pods are queued by priority, then input order, and scheduled one by one:
//!    PreEnqueue/PreFilter (claims, classes, the extended-resource claim), Filter per node (node
//!    fit, then DRA), PostFilter (deallocation of an idle pinned claim, then a retry), Score,
//!    Reserve and PreBind (claim status, pod status). A pod that does not fit stays pending;
//!    no pod is preempted for DRA devices.
//!
//! # Node choice
//! [`NodePick::Scored`] follows the default profile's scores ([`crate::score`]); ties go to
//! the smaller node name where kube-scheduler picks at random. [`NodePick::MostAllocated`]
//! swaps `NodeResourcesFit` to `MostAllocated` (bin packing). [`NodePick::FirstFeasible`] takes
//! the first feasible node by name. With [`NodeSampling::AllNodes`] (the default) every node is
//! considered; the result is exact, and the allocator runs on as few nodes as possible: a
//! cheap pre-check ([`crate::devices`]) skips nodes that provably lack free devices, and when
//! the normalised scores cannot differ between nodes, nodes are tried best score first and the
//! first that the allocator accepts wins. [`NodeSampling::Adaptive`] and
//! [`NodeSampling::Percentage`] model `percentageOfNodesToScore`: nodes are visited round-robin
//! from where the previous pod stopped until enough feasible nodes are found. kube-scheduler
//! filters nodes in parallel, so which nodes it finds first depends on thread timing; the
//! simulation visits them sequentially (kube-scheduler with parallelism 1), in name order
//! (kube-scheduler's node list interleaves zones).
//!
//! When every node is filtered (all nodes considered, scores that can differ), the allocator
//! runs on the candidates on [`SimOptions::threads`] threads (module `parallel`), and the
//! answers are walked in node order afterwards: the result does not depend on the threads.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use dra_alloc::{
    Allocation, AllocationMode, ClaimPicks, DeviceKey, Index, NodeId, Picked, PreparedClaim,
    RequestBody, allocate_picks,
};
use k8s_openapi::api::core::v1::{
    Node, NodeSelector, Pod, PodExtendedResourceClaimStatus, PodResourceClaimStatus, PodStatus,
};
use k8s_openapi::api::resource::v1::{
    AllocationResult, DeviceClaim, ResourceClaim, ResourceClaimSpec, ResourceClaimStatus,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use serde::Serialize;

use crate::Snapshot;
use crate::claims::{
    ClaimStore, PodClaim, PodClaimError, TemplateSpecs, key_of, namespace_of, pod_uid, template_of,
};
use crate::classes::NodeClasses;
use crate::devices::{ClaimKey, DeviceState, Requirement};
use crate::explain::{Diagnosis, ExplainContext, NodeVerdict, PodRef};
use crate::extended::{
    DuplicateExtendedResourceName, EXTENDED_RESOURCE_CLAIM_ANNOTATION,
    EXTENDED_RESOURCE_CLAIM_SUFFIX, ExtendedResourceMapping, SpecialClaimPlan,
    is_dra_extended_resource_name, special_claim_plan,
};
use crate::fit::{
    FitFailure, PodFacts, SimNode, intolerable_prefer_no_schedule_taints, node_affinity_matches,
    node_fit_failures, node_fits, node_fits_except_affinity, preferred_affinity_score,
};
use crate::report::{ClaimAllocations, NameMap, PodResult, PodState};
use crate::score::{
    FIRST_AVAILABLE_MAX_SIZE, FitStrategy, NodeScore, RawScore, balanced_allocation_score, combine,
    combine_one, resource_fit_score, select_host,
};
use crate::taints::{EvictionReason, EvictionTime, TaintView, earliest};
use crate::{SimError, SimInput};

/// The scheduler name kube-scheduler's default profile serves.
pub const DEFAULT_SCHEDULER_NAME: &str = "default-scheduler";
/// `ResourceClaimReservedForMaxSize`.
pub const RESERVED_FOR_MAX: usize = 256;
/// `minFeasibleNodesToFind`.
pub const MIN_FEASIBLE_NODES_TO_FIND: usize = 100;
/// `minFeasibleNodesPercentageToFind`.
pub const MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND: usize = 5;

/// How the simulated scheduler chooses among feasible nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NodePick {
    /// The default profile's scores with `NodeResourcesFit` `LeastAllocated` (spreading).
    #[default]
    Scored,
    /// The same with `NodeResourcesFit` `MostAllocated` (bin packing).
    MostAllocated,
    /// The first feasible node in name order (the reference loop's choice, with the full
    /// model's filters).
    FirstFeasible,
}

impl NodePick {
    pub fn name(self) -> &'static str {
        match self {
            NodePick::Scored => "scored",
            NodePick::MostAllocated => "most-allocated",
            NodePick::FirstFeasible => "first-feasible",
        }
    }
}

/// Which nodes are considered for a pod (`percentageOfNodesToScore`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NodeSampling {
    /// Every node (exact; the default).
    #[default]
    AllNodes,
    /// kube-scheduler's default: `50 - nodes/125` percent, at least 5%, at least 100 nodes.
    Adaptive,
    /// A fixed percentage (1-100), at least 100 nodes.
    Percentage(u32),
}

/// How much `simulate` explains about pending pods.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExplainOptions {
    /// Nodes described in detail per pending pod.
    pub max_nodes: usize,
    /// Ask the allocator which claims would have to release their devices.
    pub release_hints: bool,
}

impl Default for ExplainOptions {
    fn default() -> ExplainOptions {
        ExplainOptions {
            max_nodes: 16,
            release_hints: true,
        }
    }
}

/// Options of [`simulate`].
#[derive(Debug, Clone, Copy, Default)]
pub struct SimOptions {
    pub node_pick: NodePick,
    pub sampling: NodeSampling,
    pub explain: ExplainOptions,
    /// Run the allocator on every node that passes the other filters, without the device
    /// pre-check and without trying nodes best score first. Same results, slower: it exists to
    /// test that the shortcuts change nothing.
    pub exhaustive: bool,
    /// Look at every node on its own instead of deciding per node class (nodes that the
    /// filters and scores besides DRA and node affinity cannot tell apart, see the module
    /// documentation). The output is the same to the last field; it exists to test that.
    pub per_node: bool,
    /// Threads that run the allocator on the nodes of one pod at once, and that build a
    /// selector family's pre-check tables for every node (0: one per core). The output does
    /// not depend on it.
    pub threads: usize,
    /// Start those threads at once. By default they start only once the work done so far
    /// shows that the rest would take one thread over a millisecond (`LONG_FILTER`): a
    /// thread costs a few hundred microseconds to start and join on a small machine, more
    /// than a quick pod's runs. The output does not depend on it.
    pub threads_at_once: bool,
}

/// Where a pod went and why there.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Placement {
    /// The winner's scores (absent when there was nothing to compare).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub score: Option<NodeScore>,
    /// The best other feasible node, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runner_up: Option<NodeScore>,
    /// Feasible nodes, when all were determined.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub feasible_nodes: Option<usize>,
    /// Nodes the allocator ran on.
    pub allocator_calls: usize,
    /// Nodes that ranked ahead of the chosen one (on the resource scores, or in visiting order
    /// for `first-feasible`) but where the claims do not fit, with the reason (at most 3).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub passed_over: Vec<crate::explain::NodeDiagnosis>,
}

/// A running pod the device taint eviction controller deletes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Eviction {
    pub pod: String,
    pub node: String,
    /// Seconds after the deciding taint was added (`tolerationSeconds`; 0 = at once).
    pub after_seconds: i64,
    /// The moment, when the taint has a `timeAdded`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub at: Option<String>,
    pub reasons: Vec<EvictionReason>,
    /// Claims deallocated because no other pod reserves them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub deallocated_claims: Vec<String>,
    /// Claims deleted with the pod (created for it from templates or for its extended
    /// resources).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub deleted_claims: Vec<String>,
}

/// A device with taints and the claims that hold it after the simulation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TaintedDevice {
    /// `driver/pool/device`.
    pub device: String,
    pub taints: Vec<crate::taints::TaintSource>,
    /// Claims allocated this device (only claims whose requests tolerate the taint can get it
    /// from the scheduler; others held it before the taint came).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub allocated_to: Vec<String>,
}

/// A running pod that a taint with effect None would evict if it were NoExecute.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WouldEvict {
    pub pod: String,
    pub reasons: Vec<EvictionReason>,
}

/// An extended resource name and the class that serves it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExtendedResourceEntry {
    pub resource_name: String,
    pub device_class: String,
}

/// The extended-resource mapping as the scheduler sees it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExtendedResources {
    /// Explicit names only (every class also serves `deviceclass.resource.kubernetes.io/<class>`).
    pub mappings: Vec<ExtendedResourceEntry>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub duplicates: Vec<DuplicateExtendedResourceName>,
}

/// Counts per outcome.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    pub pods: usize,
    pub scheduled: usize,
    pub unschedulable: usize,
    pub error: usize,
    pub running: usize,
    pub evicted: usize,
    pub skipped: usize,
}

/// The outcome of [`simulate`].
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Simulation {
    pub node_pick: &'static str,
    /// One entry per pod, in input order.
    pub results: Vec<PodResult>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub evictions: Vec<Eviction>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub would_evict: Vec<WouldEvict>,
    /// Devices with taints (from their slices or DeviceTaintRules).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tainted_devices: Vec<TaintedDevice>,
    pub extended_resources: ExtendedResources,
    /// Observations about the input (nodes without allocatable, conflicting claims, ...).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    pub summary: Summary,
    /// Allocator search steps in total.
    pub steps: u64,
    /// What the simulation changed on each pod, in input order (`None`: evicted, deleted);
    /// [`Simulation::resulting_pods`] applies the changes to the input's pods.
    #[serde(skip)]
    pub pod_changes: Vec<Option<PodChanges>>,
    /// Scheduling attempts decided per node class rather than node by node (see
    /// [`SimOptions::per_node`]): a statistic of the method, not part of the answer.
    #[serde(skip)]
    pub class_decisions: usize,
    /// Scheduling attempts whose allocator runs were spread over more than one thread (see
    /// [`SimOptions::threads`]): a statistic of the method, not part of the answer.
    #[serde(skip)]
    pub parallel_filters: usize,
    /// Every claim after the simulation ([`ClaimStore::all`]: by namespace and name). The
    /// claims the simulation made from templates become objects only when read.
    #[serde(skip)]
    pub claims: ClaimStore,
}

impl Simulation {
    /// The result for `namespace/name`.
    pub fn result(&self, pod: &str) -> Option<&PodResult> {
        self.results.iter().find(|r| r.pod == pod)
    }

    /// The pods after the simulation, in input order (`None`: evicted, deleted): the pods of
    /// `input` (the input that was simulated) with the changes applied.
    pub fn resulting_pods(&self, input: &SimInput<'_>) -> Vec<Option<Pod>> {
        input
            .pods
            .iter()
            .zip(&self.pod_changes)
            .map(|(pod, changes)| changes.as_ref().map(|c| c.apply(pod)))
            .collect()
    }
}

/// What the simulation changes on a pod it keeps. The resulting objects are built on request
/// ([`Simulation::resulting_pods`]): a copy of every pod would be the largest part of a
/// simulation's answer.
#[derive(Debug, Clone, PartialEq)]
pub struct PodChanges {
    /// `metadata.uid` when the input has none and the simulation derived one
    /// ([`crate::stable_uid`]); `None`: the input's stays.
    pub derived_uid: Option<String>,
    /// What Reserve and PreBind wrote, when the simulation bound the pod.
    pub binding: Option<Binding>,
}

/// What Reserve and PreBind write into a pod.
#[derive(Debug, Clone, PartialEq)]
pub struct Binding {
    /// `spec.nodeName`.
    pub node_name: String,
    /// `status.resourceClaimStatuses` for the claims from templates (left alone when empty).
    pub template_claims: Vec<PodResourceClaimStatus>,
    /// `status.extendedResourceClaimStatus`.
    pub extended: Option<PodExtendedResourceClaimStatus>,
}

impl PodChanges {
    /// The pod with the changes.
    pub fn apply(&self, pod: &Pod) -> Pod {
        let mut object = pod.clone();
        if let Some(uid) = &self.derived_uid {
            object.metadata.uid = Some(uid.clone());
        }
        if let Some(binding) = &self.binding {
            object.spec.get_or_insert_with(Default::default).node_name =
                Some(binding.node_name.clone());
            let status = object.status.get_or_insert_with(PodStatus::default);
            if !binding.template_claims.is_empty() {
                status.resource_claim_statuses = Some(binding.template_claims.clone());
            }
            if let Some(extended) = &binding.extended {
                status.extended_resource_claim_status = Some(extended.clone());
            }
        }
        object
    }
}

/// Runs the scheduler model over `input`.
pub fn simulate(input: &SimInput<'_>, options: &SimOptions) -> Result<Simulation, SimError> {
    simulate_snapshot(input, &Snapshot::new(input)?, options)
}

/// [`simulate`] over a [`Snapshot`] built beforehand from the same input; the input's
/// ResourceSlices are not read again, so the caller may have freed them. The caller keeps the
/// snapshot (a process about to exit need not free it).
pub fn simulate_snapshot<'a>(
    input: &'a SimInput<'a>,
    snapshot: &'a Snapshot,
    options: &'a SimOptions,
) -> Result<Simulation, SimError> {
    let mut engine = Engine::new(input, snapshot, options)?;
    engine.setup_running_pods();
    engine.run_evictions();
    engine.run_queue();
    Ok(engine.finish())
}

/// The name of the claim that serves a pod's extended resources through DRA.
fn special_claim_name(pod_name: &str) -> String {
    [pod_name, EXTENDED_RESOURCE_CLAIM_SUFFIX].concat()
}

struct PodEntry<'a> {
    pod: &'a Pod,
    /// What binding changed on the pod (the resulting object is built at the end).
    binding: Option<Binding>,
    /// The pod's namespace (`default` when it has none) and name, borrowed from it.
    namespace: &'a str,
    name: &'a str,
    /// [`pod_uid`]: borrowed from the pod unless derived.
    uid: Cow<'a, str>,
    facts: PodFacts,
    priority: Result<i32, String>,
    deleted: bool,
}

/// A special claim variant: the pod's extended resources served by DRA on some nodes.
struct SpecialVariant {
    plan: SpecialClaimPlan,
    prepared: PreparedClaim,
}

/// The claims the allocator gets on nodes that serve the same extended resources through DRA
/// (nodes offering some of them through the device plugin need another special claim).
#[derive(Default)]
struct Variant {
    /// DRA-served extended resources; empty: no special claim.
    resources: BTreeSet<String>,
    /// The nodes this variant is for: per entry of [`Attempt::extended`], in its order,
    /// whether the node offers the resource itself (the complement of `resources`).
    offered: Vec<bool>,
    special: Option<SpecialVariant>,
    /// The device pre-check's view of the claims, built on first use.
    requirement: Option<Arc<Requirement>>,
}

/// What PreFilter found for a pod, reused for every node.
struct Attempt {
    claims: Vec<PodClaim>,
    /// Allocated claims: their node selector pins the pod.
    pinned: Vec<(ClaimKey, Option<NodeSelector>)>,
    /// Unallocated user claims, prepared, in pod order.
    to_allocate: Vec<(ClaimKey, PreparedClaim)>,
    /// DRA extended resources the pod requests (name -> quantity).
    extended: BTreeMap<String, i64>,
    /// Index 0 serves nothing through DRA.
    variants: Vec<Variant>,
    /// The `Variant::offered` pattern of the node at hand (kept to reuse its buffer).
    node_offers: Vec<bool>,
    has_all_mode: bool,
    has_first_available: bool,
    /// Every claim to allocate has a spec the engine's [`TemplateSpecs`] holds (so the
    /// specs' addresses name them for as long as the engine lives).
    specs_held: bool,
}

/// A node class that passes the filters besides node affinity, for one pod.
struct ClassView {
    class: u32,
    /// The member with the smallest name (its scores and verdicts stand for all members).
    first: NodeId,
    variant: usize,
    needs_allocator: bool,
    /// Candidates without looking at pinned claims (no claims, no extended-resource claim).
    unchecked: bool,
}

/// A node that passed the cheap filters.
struct Candidate {
    node: NodeId,
    variant: usize,
    needs_allocator: bool,
    risky: bool,
}

/// Why a node was rejected, kept small: the words are only written for a diagnosis.
#[derive(Debug, Clone, Copy)]
enum Rejection {
    /// A filter besides DRA.
    Fit,
    /// The device pre-check: fewer free matching devices than requested.
    Devices,
    /// An allocated claim's node selector excludes the node.
    Unavailable,
    /// The allocator's answer.
    Allocator(&'static str),
}

#[derive(Debug, Clone, Copy)]
struct Rejected {
    node: NodeId,
    variant: usize,
    why: Rejection,
}

enum Check {
    Rejected(Rejected),
    /// Index of a pinned claim that is not available on the node.
    Unavailable(usize, Rejected),
    Candidate(Candidate),
}

/// A feasible node with what the allocator returned.
struct Feasible {
    node: NodeId,
    variant: usize,
    results: Vec<ClaimPicks>,
}

enum Decision {
    Scheduled {
        feasible: Feasible,
        placement: Box<Placement>,
        /// Allocator rejections that ranked ahead of the chosen node.
        passed_over: Vec<Rejected>,
    },
    Pending {
        rejected: Vec<Rejected>,
        unavailable: BTreeSet<usize>,
    },
    Error(String),
}

struct Engine<'a> {
    input: &'a SimInput<'a>,
    options: &'a SimOptions,
    index: &'a Index,
    /// The same index, for the allocations kept as picks.
    shared_index: &'a Arc<Index>,
    mapping: ExtendedResourceMapping,
    claims: ClaimStore,
    /// The specs of claims made from templates, prepared once per template.
    template_specs: TemplateSpecs,
    /// The device pre-check's view of the claims of pods whose claims all have specs held by
    /// `template_specs`, by the specs' addresses in claim order.
    shared_requirements: HashMap<Vec<usize>, Arc<Requirement>>,
    devices: DeviceState,
    nodes: Vec<SimNode<'a>>,
    node_names: Vec<String>,
    order: Vec<NodeId>,
    /// Position of each node in name order.
    rank: Vec<usize>,
    pods: Vec<PodEntry<'a>>,
    /// Per pod, in input order (as `pods`): what the simulation answers.
    results: Vec<PodResult>,
    next_start: usize,
    evictions: Vec<Eviction>,
    would_evict: Vec<WouldEvict>,
    notes: Vec<String>,
    /// Device taints of the input's slices and rules.
    taints: &'a TaintView,
    /// The node classes while the queue runs with [`Engine::decide_by_class`] enabled.
    classes: Option<NodeClasses>,
    class_decisions: usize,
    parallel_filters: std::cell::Cell<usize>,
    /// The live pods by UID and by name, for diagnoses: built on first use once the queue
    /// runs (no pod is deleted or renamed after the evictions).
    pod_refs: std::cell::OnceCell<PodRefs>,
}

/// Live pods by UID and by (namespace, name).
type PodRefs = (HashMap<String, PodRef>, HashMap<(String, String), PodRef>);

fn dra_failure(reason: &str) -> FitFailure {
    FitFailure {
        plugin: "DynamicResources",
        reason: reason.to_string(),
        detail: None,
    }
}

impl<'a> Engine<'a> {
    fn new(
        input: &'a SimInput<'a>,
        snapshot: &'a Snapshot,
        options: &'a SimOptions,
    ) -> Result<Engine<'a>, SimError> {
        let Snapshot {
            index: shared_index,
            taints,
        } = snapshot;
        let index: &Index = shared_index;
        let mapping = ExtendedResourceMapping::build(&input.classes);
        let claims = ClaimStore::new(input);
        let mut devices = DeviceState::new(index);
        let allocated: Vec<(Arc<ClaimKey>, AllocationResult)> = claims
            .allocated()
            .map(|(c, a)| (Arc::new(key_of(&c.metadata)), a.clone()))
            .collect();
        for (key, allocation) in &allocated {
            devices
                .add_claim(index, key, allocation)
                .map_err(|e| SimError::Claim {
                    claim: format!("{}/{}", key.0, key.1),
                    message: e.to_string(),
                })?;
        }
        let mut notes = Vec::new();
        for (device, holders) in devices.conflicts(index) {
            let names: Vec<String> = holders.iter().map(|(ns, n)| format!("{ns}/{n}")).collect();
            notes.push(format!(
                "device {device} is allocated to more than one claim ({}); the scheduler treats it as in use",
                names.join(", ")
            ));
        }
        let mut nodes = Vec::new();
        let mut node_names = Vec::new();
        // The first node of each name, as a search in input order finds it.
        let mut by_name: HashMap<&str, &Node> = HashMap::new();
        for node in &input.nodes {
            if let Some(name) = node.metadata.name.as_deref() {
                by_name.entry(name).or_insert(node);
            }
        }
        // What the filters read of each node besides its name and labels (borrowed from the
        // index): taints and allocatable, parsed on every thread (10,000 nodes take 60 M
        // instructions).
        let threads = crate::parallel::thread_count(options.threads);
        let ids: Vec<NodeId> = index.node_ids().collect();
        let (sim_nodes, _) =
            crate::parallel::map_in_order(&ids, threads, options.threads_at_once, |&id| {
                let facts = index.node_facts(id);
                let raw = by_name.get(facts.name.as_str()).copied();
                SimNode::new(Cow::Borrowed(facts), raw)
            });
        for node in sim_nodes {
            if !node.allocatable.declared {
                notes.push(format!(
                    "node {} has no status.allocatable: its cpu, memory and pod count are not limited",
                    node.facts.name
                ));
            }
            node_names.push(node.facts.name.clone());
            nodes.push(node);
        }
        let order = index.node_ids_by_name();
        let mut rank = vec![0; order.len()];
        for (position, node) in order.iter().enumerate() {
            rank[node.0 as usize] = position;
        }
        // Each pod's result is kept apart from what the engine knows of the pod, so that the
        // simulation's answer is the list as it stands, not a copy made at the end.
        let mut results = Vec::with_capacity(input.pods.len());
        // What the node filters need of each pod depends on the pod alone: worked out on every
        // thread (80,000 pods take 94 M instructions).
        let (facts, _) =
            crate::parallel::map_in_order(&input.pods, threads, options.threads_at_once, |pod| {
                PodFacts::of(pod, &mapping)
            });
        let pods = input
            .pods
            .iter()
            .zip(facts)
            .map(|(pod, facts)| {
                let namespace = namespace_of(&pod.metadata);
                let name = pod.metadata.name.as_deref().unwrap_or_default();
                let uid = pod_uid(pod);
                let priority = crate::priority::pod_priority(pod, &input.priority_classes);
                results.push(PodResult {
                    pod: [namespace, "/", name].concat(),
                    node: None,
                    status: PodState::Unschedulable,
                    allocations: ClaimAllocations::default(),
                    error: None,
                    priority: *priority.as_ref().unwrap_or(&0),
                    queue_position: None,
                    claims: NameMap::default(),
                    extended_resources: BTreeMap::new(),
                    extended_resource_claim_status: None,
                    reason: None,
                    placement: None,
                    diagnosis: None,
                    eviction: None,
                    notes: Vec::new(),
                    steps: 0,
                });
                PodEntry {
                    pod,
                    binding: None,
                    facts,
                    priority,
                    namespace,
                    name,
                    uid,
                    deleted: false,
                }
            })
            .collect();
        Ok(Engine {
            input,
            options,
            index,
            shared_index,
            mapping,
            claims,
            template_specs: TemplateSpecs::default(),
            shared_requirements: HashMap::new(),
            devices,
            nodes,
            node_names,
            order,
            rank,
            pods,
            results,
            next_start: 0,
            evictions: Vec::new(),
            would_evict: Vec::new(),
            notes,
            classes: None,
            class_decisions: 0,
            parallel_filters: std::cell::Cell::new(0),
            pod_refs: std::cell::OnceCell::new(),
            taints,
        })
    }

    fn node_by_name(&self, name: &str) -> Option<NodeId> {
        self.index.node(name)
    }

    /// Releases a pod's reservation of a claim; deallocates it when nobody else reserves it.
    /// Returns whether it was deallocated.
    fn release_claim(&mut self, key: &ClaimKey, pod_name: &str, uid: &str) -> bool {
        let remaining = self.claims.unreserve(&key.0, &key.1, pod_name, uid);
        if remaining > 0 {
            return false;
        }
        let Some(allocation) = self.claims.clear_allocation(&key.0, &key.1) else {
            return false;
        };
        // The allocation was accepted when it was added; removing it cannot fail.
        let _ = self.devices.remove_claim(self.index, key, &allocation);
        true
    }

    fn owned_by(&self, key: &ClaimKey, uid: &str) -> bool {
        self.claims.controlled_by_uid(&key.0, &key.1, uid)
    }

    /// The claims of a bound pod: its resolved claims plus its extended-resource claim.
    fn bound_pod_claims(&mut self, p: usize) -> Vec<ClaimKey> {
        let pod = self.pods[p].pod;
        let namespace = self.pods[p].namespace;
        let mut keys: Vec<ClaimKey> = match self.claims.existing_pod_claims(pod) {
            Ok(claims) => claims
                .into_iter()
                .map(|c| (namespace.to_string(), c.claim_name))
                .collect(),
            Err(PodClaimError(message)) => {
                self.results[p].notes.push(message);
                Vec::new()
            }
        };
        if let Some(name) = pod
            .status
            .as_ref()
            .and_then(|s| s.extended_resource_claim_status.as_ref())
            .map(|s| s.resource_claim_name.clone())
        {
            keys.push((namespace.to_string(), name));
        }
        keys
    }

    fn setup_running_pods(&mut self) {
        for p in 0..self.pods.len() {
            let pod = self.pods[p].pod;
            let spec = pod.spec.as_ref();
            let phase = pod
                .status
                .as_ref()
                .and_then(|s| s.phase.as_deref())
                .unwrap_or("");
            let node_name = spec.and_then(|s| s.node_name.as_deref()).unwrap_or("");
            if matches!(phase, "Succeeded" | "Failed") {
                let uid = self.pods[p].uid.to_string();
                let name = self.pods[p].name;
                let mut released = Vec::new();
                for key in self.bound_pod_claims(p) {
                    if self.release_claim(&key, name, &uid) {
                        released.push(format!("{}/{}", key.0, key.1));
                    }
                }
                let result = &mut self.results[p];
                result.status = PodState::Skipped;
                result.node = (!node_name.is_empty()).then(|| node_name.to_string());
                result.reason = Some(format!(
                    "finished (phase {phase}): the scheduler ignores it and the resourceclaim controller releases its claims"
                ));
                if !released.is_empty() {
                    result
                        .notes
                        .push(format!("deallocated: {}", released.join(", ")));
                }
                continue;
            }
            if node_name.is_empty() {
                continue;
            }
            let claims = self.bound_pod_claims(p);
            let entry = &mut self.pods[p];
            let result = &mut self.results[p];
            result.status = PodState::Running;
            result.node = Some(node_name.to_string());
            for (ns, name) in &claims {
                let allocated = self
                    .claims
                    .get(ns, name)
                    .is_some_and(|c| c.status.as_ref().is_some_and(|s| s.allocation.is_some()));
                if !allocated {
                    result.notes.push(format!(
                        "claim {ns}/{name} is not allocated: the kubelet cannot start the pod"
                    ));
                }
            }
            match self.index.node(node_name) {
                Some(node) => {
                    let facts = entry.facts.clone();
                    self.nodes[node.0 as usize].add_pod(&facts);
                }
                None => result
                    .notes
                    .push(format!("node {node_name} is not in the input")),
            }
        }
    }

    fn run_evictions(&mut self) {
        for p in 0..self.pods.len() {
            if self.results[p].status != PodState::Running {
                continue;
            }
            let uid = self.pods[p].uid.to_string();
            let name = self.pods[p].name;
            let input_uid = self.pods[p].pod.metadata.uid.clone();
            let claims = self.bound_pod_claims(p);
            let mut times: Vec<EvictionTime> = Vec::new();
            let mut dry_run = Vec::new();
            for key in &claims {
                let Some(allocation) = self.claims.allocation(&key.0, &key.1) else {
                    continue;
                };
                // Only claims that list the pod in reservedFor (by UID) concern the controller.
                let reserved = self.claims.reserved_for(&key.0, &key.1).iter().any(|r| {
                    r.resource == "pods"
                        && r.api_group.as_deref().unwrap_or("").is_empty()
                        && (r.uid == uid || (input_uid.is_none() && r.name == name))
                });
                if !reserved {
                    continue;
                }
                let (time, none) = self
                    .taints
                    .claim_eviction(&format!("{}/{}", key.0, key.1), allocation);
                times.extend(time);
                dry_run.extend(none);
            }
            let pod_key = self.results[p].pod.clone();
            if !dry_run.is_empty() {
                self.would_evict.push(WouldEvict {
                    pod: pod_key.clone(),
                    reasons: dry_run,
                });
            }
            let Some(time) = earliest(times) else {
                continue;
            };
            let node = self.results[p].node.clone().unwrap_or_default();
            let mut deallocated = Vec::new();
            let mut deleted = Vec::new();
            for key in &claims {
                let owned = self.owned_by(key, &uid);
                if self.release_claim(key, name, &uid) {
                    deallocated.push(format!("{}/{}", key.0, key.1));
                }
                if owned && self.claims.remove(&key.0, &key.1).is_some() {
                    deleted.push(format!("{}/{}", key.0, key.1));
                }
            }
            if let Some(node) = self.node_by_name(&node) {
                let facts = self.pods[p].facts.clone();
                self.nodes[node.0 as usize].remove_pod(&facts);
            }
            let eviction = Eviction {
                pod: pod_key,
                node,
                after_seconds: time.after_seconds,
                at: time.at.map(|t| t.to_string()),
                reasons: time.reasons,
                deallocated_claims: deallocated,
                deleted_claims: deleted,
            };
            let entry = &mut self.pods[p];
            let result = &mut self.results[p];
            entry.deleted = true;
            result.status = PodState::Evicted;
            let first = &eviction.reasons[0];
            result.reason = Some(format!(
                "evicted by the device taint eviction controller {}: device {} of claim {} has taint {}:{} ({})",
                match (eviction.after_seconds, &eviction.at) {
                    (0, None) => "at once".to_string(),
                    (0, Some(at)) => format!("at once ({at})"),
                    (s, None) => format!("{s}s after the taint was added"),
                    (s, Some(at)) => format!("{s}s after the taint was added ({at})"),
                },
                first.device,
                first.claim,
                first.taint.key,
                first.taint.effect,
                first.taint.origin
            ));
            result.eviction = Some(eviction.clone());
            self.evictions.push(eviction);
        }
    }

    fn run_queue(&mut self) {
        let mut queue: Vec<usize> = Vec::new();
        for p in 0..self.pods.len() {
            let entry = &mut self.pods[p];
            let result = &mut self.results[p];
            if result.status != PodState::Unschedulable {
                continue;
            }
            let spec = entry.pod.spec.as_ref();
            let gates: Vec<&str> = spec
                .and_then(|s| s.scheduling_gates.as_deref())
                .unwrap_or_default()
                .iter()
                .map(|g| g.name.as_str())
                .collect();
            if !gates.is_empty() {
                result.status = PodState::Skipped;
                result.reason = Some(format!(
                    "waiting for scheduling gates: [{}]",
                    gates.join(" ")
                ));
                continue;
            }
            let scheduler = spec
                .and_then(|s| s.scheduler_name.as_deref())
                .unwrap_or(DEFAULT_SCHEDULER_NAME);
            if scheduler != DEFAULT_SCHEDULER_NAME {
                result.status = PodState::Skipped;
                result.reason = Some(format!(
                    "schedulerName {scheduler}: not handled by the simulated {DEFAULT_SCHEDULER_NAME}"
                ));
                continue;
            }
            if let Err(message) = &entry.priority {
                result.status = PodState::Error;
                result.error = Some(format!("pods \"{}\" is forbidden: {message}", entry.name));
                result.reason = result.error.clone();
                continue;
            }
            queue.push(p);
        }
        // PrioritySort: higher priority first, then queue order (input order).
        queue.sort_by(|a, b| {
            self.results[*b]
                .priority
                .cmp(&self.results[*a].priority)
                .then(a.cmp(b))
        });
        if self.decides_by_class() {
            self.classes = Some(NodeClasses::new(&self.nodes, &self.rank));
            self.devices.set_ranks(&self.rank);
            self.devices.set_threads(
                crate::parallel::thread_count(self.options.threads),
                self.options.threads_at_once,
            );
        }
        for (position, p) in queue.into_iter().enumerate() {
            self.results[p].queue_position = Some(position);
            self.schedule(p);
        }
    }

    /// PreEnqueue and PreFilter: the pod's claims and its extended resources.
    fn prepare(&mut self, p: usize) -> Result<Attempt, (PodState, String)> {
        let pod = self.pods[p].pod;
        let claims = self
            .claims
            .resolve_pod_claims(pod)
            .map_err(|PodClaimError(m)| (PodState::Unschedulable, m))?;
        let mut attempt = Attempt {
            claims: Vec::new(),
            pinned: Vec::new(),
            to_allocate: Vec::with_capacity(claims.len()),
            extended: BTreeMap::new(),
            variants: vec![Variant::default()],
            node_offers: Vec::new(),
            has_all_mode: false,
            has_first_available: false,
            specs_held: true,
        };
        // The pod's requests in whole units and their classes, as the node filter has them.
        let facts = &self.pods[p].facts;
        for ((name, value), has_class) in facts.requests.scalar.iter().zip(&facts.scalar_has_class)
        {
            if *value != 0 && *has_class && is_dra_extended_resource_name(name) {
                attempt.extended.insert(name.clone(), *value);
            }
        }
        let namespace = self.pods[p].namespace;
        for claim_ref in &claims {
            let key = (namespace.to_string(), claim_ref.claim_name.clone());
            // A claim just made from a template whose spec was prepared (and checked below)
            // for an earlier claim: the same spec, the same checks, the same preparation.
            let template = claim_ref
                .made_now
                .then(|| template_of(pod, &claim_ref.pod_claim_name))
                .flatten();
            attempt.specs_held &= template.is_some();
            if let Some(prepared) =
                template.and_then(|t| self.template_specs.shared(&key.0, &key.1, t))
            {
                attempt.to_allocate.push((key, prepared));
                continue;
            }
            let Some(claim) = self.claims.get(&key.0, &key.1) else {
                continue;
            };
            if let Some(allocation) = claim.status.as_ref().and_then(|s| s.allocation.as_ref()) {
                if let Some(selector) = &allocation.node_selector
                    && let Err(e) = dra_alloc::node_selector::node_selector_matches(
                        selector,
                        &dra_alloc::node_selector::NodeFacts::default(),
                    )
                {
                    return Err((PodState::Error, e.to_string()));
                }
                attempt.pinned.push((key, allocation.node_selector.clone()));
                continue;
            }
            for request in claim
                .spec
                .as_ref()
                .and_then(|s| s.devices.as_ref())
                .and_then(|d| d.requests.as_deref())
                .unwrap_or_default()
            {
                let classes: Vec<(String, &str)> = if let Some(exact) = &request.exactly {
                    vec![(request.name.clone(), exact.device_class_name.as_str())]
                } else if let Some(subs) =
                    request.first_available.as_ref().filter(|s| !s.is_empty())
                {
                    subs.iter()
                        .map(|s| {
                            (
                                format!("{}/{}", request.name, s.name),
                                s.device_class_name.as_str(),
                            )
                        })
                        .collect()
                } else {
                    return Err((
                        PodState::Unschedulable,
                        format!(
                            "resource claim {}/{}, request {}: unknown request type",
                            key.0, key.1, request.name
                        ),
                    ));
                };
                for (request_name, class) in classes {
                    if class.is_empty() {
                        return Err((
                            PodState::Error,
                            format!("request {request_name}: unsupported request type"),
                        ));
                    }
                    if self.index.class(class).is_none() {
                        return Err((
                            PodState::Unschedulable,
                            format!("request {request_name}: device class {class} does not exist"),
                        ));
                    }
                }
            }
            let prepared = self.template_specs.prepare(self.index, claim, template);
            attempt.to_allocate.push((key, prepared));
        }
        for (_, claim) in &attempt.to_allocate {
            for request in &claim.requests {
                match &request.body {
                    RequestBody::Exact(spec) => {
                        attempt.has_all_mode |= spec.mode == AllocationMode::All
                    }
                    RequestBody::FirstAvailable(subs) => {
                        attempt.has_first_available = true;
                        attempt.has_all_mode |= subs.iter().any(|s| s.mode == AllocationMode::All);
                    }
                    RequestBody::Unknown => {}
                }
            }
        }
        // Variant 0 is for nodes that offer every extended resource of the pod themselves.
        attempt.variants[0].offered = vec![true; attempt.extended.len()];
        attempt.claims = claims;
        Ok(attempt)
    }

    fn special_claim_name(&self, p: usize) -> String {
        special_claim_name(self.pods[p].name)
    }

    fn special_claim_object(&self, p: usize, plan: &SpecialClaimPlan) -> ResourceClaim {
        let entry = &self.pods[p];
        ResourceClaim {
            metadata: ObjectMeta {
                name: Some(self.special_claim_name(p)),
                namespace: Some(entry.namespace.to_string()),
                annotations: Some(BTreeMap::from([(
                    EXTENDED_RESOURCE_CLAIM_ANNOTATION.to_string(),
                    "true".to_string(),
                )])),
                owner_references: Some(vec![OwnerReference {
                    api_version: "v1".to_string(),
                    kind: "Pod".to_string(),
                    name: entry.name.to_string(),
                    uid: entry.uid.to_string(),
                    controller: Some(true),
                    block_owner_deletion: None,
                }]),
                ..ObjectMeta::default()
            },
            spec: Some(ResourceClaimSpec {
                devices: Some(DeviceClaim {
                    requests: Some(plan.requests.clone()),
                    ..DeviceClaim::default()
                }),
            }),
            status: None,
        }
    }

    /// The variant for a node: which of the pod's extended resources DRA serves there.
    fn variant_for(&mut self, p: usize, attempt: &mut Attempt, node: NodeId) -> usize {
        if attempt.extended.is_empty() {
            return 0;
        }
        // Nodes are many: one lookup per resource in the node's own list (none when it lists
        // no extended resources, as usual), then a comparison of patterns per variant.
        let scalar = &self.nodes[node.0 as usize].allocatable.resources.scalar;
        let offers = &mut attempt.node_offers;
        offers.clear();
        if scalar.is_empty() {
            offers.resize(attempt.extended.len(), false);
        } else {
            offers.extend(
                attempt
                    .extended
                    .keys()
                    .map(|name| scalar.get(name).is_some_and(|quantity| *quantity != 0)),
            );
        }
        if let Some(i) = attempt.variants.iter().position(|v| v.offered == *offers) {
            return i;
        }
        let resources: BTreeSet<String> = attempt
            .extended
            .keys()
            .zip(offers.iter())
            .filter(|(_, offered)| !**offered)
            .map(|(name, _)| name.clone())
            .collect();
        let offered = offers.clone();
        let plan = special_claim_plan(self.pods[p].pod, &resources, &self.mapping);
        let object = self.special_claim_object(p, &plan);
        let prepared = PreparedClaim::new(self.index, &object);
        attempt.variants.push(Variant {
            resources,
            offered,
            special: Some(SpecialVariant { plan, prepared }),
            requirement: None,
        });
        attempt.variants.len() - 1
    }

    /// The claims the allocator gets on a node: user claims, then the special claim.
    fn claims_for(attempt: &Attempt, variant: usize) -> Vec<&PreparedClaim> {
        let mut claims: Vec<&PreparedClaim> = attempt.to_allocate.iter().map(|(_, c)| c).collect();
        if let Some(special) = &attempt.variants[variant].special {
            claims.push(&special.prepared);
        }
        claims
    }

    /// Builds the device pre-check's view of a variant's claims, once per variant. Pods whose
    /// claims all have specs held by [`TemplateSpecs`] (claims from templates, no special
    /// claim) share it per combination of specs: it depends on the specs alone.
    fn fill_requirement(&mut self, attempt: &mut Attempt, variant: usize) {
        if attempt.variants[variant].requirement.is_some() {
            return;
        }
        let key: Option<Vec<usize>> =
            (attempt.specs_held && attempt.variants[variant].special.is_none()).then(|| {
                attempt
                    .to_allocate
                    .iter()
                    .map(|(_, claim)| Arc::as_ptr(claim.spec()) as usize)
                    .collect()
            });
        let shared = key
            .as_ref()
            .and_then(|key| self.shared_requirements.get(key))
            .cloned();
        let requirement = shared.unwrap_or_else(|| {
            let claims = Self::claims_for(attempt, variant);
            let requirement = Arc::new(self.devices.requirements(&claims));
            if let Some(key) = key {
                self.shared_requirements
                    .insert(key, Arc::clone(&requirement));
            }
            requirement
        });
        attempt.variants[variant].requirement = Some(requirement);
    }

    /// The claims of a variant with their names, for a diagnosis.
    fn named_claims(
        &self,
        p: usize,
        attempt: &Attempt,
        variant: usize,
    ) -> Vec<(String, PreparedClaim)> {
        let mut claims: Vec<(String, PreparedClaim)> = attempt
            .to_allocate
            .iter()
            .map(|(k, c)| (format!("{}/{}", k.0, k.1), c.clone()))
            .collect();
        if let Some(special) = &attempt.variants[variant].special {
            claims.push((
                format!("{}/{}", self.pods[p].namespace, self.special_claim_name(p)),
                special.prepared.clone(),
            ));
        }
        claims
    }

    /// The cheap filters: node fit, then the DRA plugin up to (not including) the allocator.
    fn check_node(&mut self, p: usize, attempt: &mut Attempt, node: NodeId) -> Check {
        let rejected = |variant: usize, why: Rejection| Rejected { node, variant, why };
        if !node_fits(&self.pods[p].facts, &self.nodes[node.0 as usize]) {
            return Check::Rejected(rejected(0, Rejection::Fit));
        }
        // filterExtendedResources: the special claim for this node, if any.
        let variant = self.variant_for(p, attempt, node);
        let serves_extended = attempt.variants[variant].special.is_some();
        if !serves_extended && attempt.claims.is_empty() {
            return Check::Candidate(Candidate {
                node,
                variant,
                needs_allocator: false,
                risky: false,
            });
        }
        let facts = &self.nodes[node.0 as usize].facts;
        for (i, (_, selector)) in attempt.pinned.iter().enumerate() {
            if let Some(selector) = selector
                && !dra_alloc::node_selector::node_selector_matches(selector, facts)
                    .unwrap_or(false)
            {
                return Check::Unavailable(i, rejected(variant, Rejection::Unavailable));
            }
        }
        let needs_allocator = !attempt.to_allocate.is_empty() || serves_extended;
        if !needs_allocator {
            return Check::Candidate(Candidate {
                node,
                variant,
                needs_allocator,
                risky: false,
            });
        }
        self.fill_requirement(attempt, variant);
        let Some(requirement) = attempt.variants[variant].requirement.as_ref() else {
            return Check::Rejected(rejected(variant, Rejection::Devices));
        };
        // All mode fails on incomplete or invalid pools before any device is looked at.
        if !attempt.has_all_mode
            && !self.options.exhaustive
            && !self.devices.check(self.index, requirement, node)
        {
            return Check::Rejected(rejected(variant, Rejection::Devices));
        }
        let risky = attempt.has_all_mode || self.devices.may_fail(self.index, requirement, node);
        Check::Candidate(Candidate {
            node,
            variant,
            needs_allocator,
            risky,
        })
    }

    /// The allocator on one candidate: `Ok(Ok(results))`, `Ok(Err(why))` when the claims do not
    /// fit there, `Err(message)` for a fatal error (the scheduling attempt fails).
    fn run_allocator(
        &self,
        attempt: &Attempt,
        candidate: &Candidate,
        steps: &mut u64,
    ) -> AllocatorAnswer {
        if !candidate.needs_allocator {
            return Ok(Ok(Vec::new()));
        }
        let claims = Self::claims_for(attempt, candidate.variant);
        let (answer, node_steps) =
            allocator_answer(self.index, &self.devices.state, candidate.node, &claims);
        *steps += node_steps;
        answer
    }

    /// [`Engine::run_allocator`] on each candidate, on up to [`SimOptions::threads`] threads,
    /// with the steps of each; the outcomes are in `candidates`' order.
    fn allocate_on(
        &self,
        attempt: &Attempt,
        candidates: &[Candidate],
    ) -> Vec<(AllocatorAnswer, u64)> {
        let claims: Vec<Vec<&PreparedClaim>> = (0..attempt.variants.len())
            .map(|variant| Self::claims_for(attempt, variant))
            .collect();
        let (index, state) = (self.index, &self.devices.state);
        let threads = crate::parallel::thread_count(self.options.threads);
        let (answers, used) =
            crate::parallel::map_in_order(candidates, threads, self.options.threads_at_once, |c| {
                if !c.needs_allocator {
                    return (Ok(Ok(Vec::new())), 0);
                }
                allocator_answer(index, state, c.node, &claims[c.variant])
            });
        if used > 1 {
            self.parallel_filters.set(self.parallel_filters.get() + 1);
        }
        answers
    }

    fn fit_strategy(&self) -> FitStrategy {
        match self.options.node_pick {
            NodePick::MostAllocated => FitStrategy::MostAllocated,
            _ => FitStrategy::LeastAllocated,
        }
    }

    /// The scores that are not normalised (`NodeResourcesFit`, `BalancedAllocation`): they
    /// order the nodes when the normalised ones cannot differ.
    fn static_key(&self, p: usize, node: NodeId) -> i64 {
        let pod = &self.pods[p].facts;
        let sim_node = &self.nodes[node.0 as usize];
        resource_fit_score(self.fit_strategy(), pod, sim_node)
            + balanced_allocation_score(pod, sim_node).unwrap_or(0)
    }

    fn raw_score(
        &self,
        p: usize,
        attempt: &Attempt,
        node: NodeId,
        results: &[ClaimPicks],
    ) -> RawScore {
        let pod = &self.pods[p].facts;
        let sim_node = &self.nodes[node.0 as usize];
        RawScore {
            node: sim_node.facts.name.clone(),
            taints: intolerable_prefer_no_schedule_taints(pod, sim_node),
            affinity: preferred_affinity_score(pod, &sim_node.facts),
            fit: resource_fit_score(self.fit_strategy(), pod, sim_node),
            balanced: balanced_allocation_score(pod, sim_node),
            dra: dra_score(attempt, results),
        }
    }

    /// Whether pods may be decided per node class ([`Engine::decide_by_class`]).
    fn decides_by_class(&self) -> bool {
        !self.options.per_node
            && !self.options.exhaustive
            && self.options.sampling == NodeSampling::AllNodes
            && self.options.node_pick != NodePick::FirstFeasible
    }

    /// [`Engine::decide`] per node class: the same decision, to the last field, with work in
    /// the number of classes plus the nodes actually examined instead of the number of nodes.
    /// `None` when the pod needs the node-by-node loop.
    ///
    /// Two cases are decided here, for pods without preferred node affinity, `firstAvailable`
    /// or All-mode requests (which make scores or errors differ between nodes of a class):
    /// * The allocator runs on every candidate: the node-by-node loop tries candidates best
    ///   static score first and takes the first the allocator accepts, when the normalised
    ///   scores cannot differ and no candidate could meet a selector error. Here the classes
    ///   are ranked by the static score, their members merged in name order, and nodes are
    ///   examined (node affinity, pinned claims, device pre-check, allocator) in exactly that
    ///   order, stopping once the winner is known and a second candidate shows that the loop
    ///   would have taken its best-score-first path.
    /// * No candidate needs the allocator and nothing node-specific is checked: every member
    ///   of a class that passes the filters is feasible with the class's scores, so the winner,
    ///   runner-up and feasible count follow from the classes alone.
    fn decide_by_class(
        &mut self,
        p: usize,
        attempt: &mut Attempt,
        steps: &mut u64,
    ) -> Option<Decision> {
        let classes = self.classes.take()?;
        let decision = self.decide_with_classes(p, attempt, steps, &classes);
        self.classes = Some(classes);
        decision
    }

    fn decide_with_classes(
        &mut self,
        p: usize,
        attempt: &mut Attempt,
        steps: &mut u64,
        classes: &NodeClasses,
    ) -> Option<Decision> {
        if !self.pods[p].facts.preferred_affinity.is_empty()
            || attempt.has_first_available
            || attempt.has_all_mode
        {
            return None;
        }
        // The classes whose members pass the filters besides node affinity, with the claims
        // the allocator gets there.
        let mut passing: Vec<ClassView> = Vec::new();
        for class in classes.live() {
            let first = self.order[classes.first(class)? as usize];
            if !node_fits_except_affinity(&self.pods[p].facts, &self.nodes[first.0 as usize]) {
                continue;
            }
            let variant = self.variant_for(p, attempt, first);
            let serves_extended = attempt.variants[variant].special.is_some();
            passing.push(ClassView {
                class,
                first,
                variant,
                needs_allocator: !attempt.to_allocate.is_empty() || serves_extended,
                // check_node takes such a node before looking at pinned claims.
                unchecked: !serves_extended && attempt.claims.is_empty(),
            });
        }
        if passing.is_empty() {
            let rejected = self
                .order
                .iter()
                .map(|&node| Rejected {
                    node,
                    variant: 0,
                    why: Rejection::Fit,
                })
                .collect();
            return Some(Decision::Pending {
                rejected,
                unavailable: BTreeSet::new(),
            });
        }
        if passing.iter().all(|c| c.needs_allocator) {
            self.decide_by_allocation_order(p, attempt, steps, classes, &passing)
        } else if passing.iter().all(|c| !c.needs_allocator) {
            self.decide_by_class_scores(p, attempt, classes, &passing)
        } else {
            None
        }
    }

    /// The first case of [`Engine::decide_by_class`].
    fn decide_by_allocation_order(
        &mut self,
        p: usize,
        attempt: &mut Attempt,
        steps: &mut u64,
        classes: &NodeClasses,
        passing: &[ClassView],
    ) -> Option<Decision> {
        // The normalised TaintToleration score must be equal on all candidates (NodeAffinity
        // and DynamicResources score nothing here): checked on a superset, the passing classes.
        let pod = &self.pods[p].facts;
        let taints =
            intolerable_prefer_no_schedule_taints(pod, &self.nodes[passing[0].first.0 as usize]);
        if passing.iter().any(|c| {
            intolerable_prefer_no_schedule_taints(pod, &self.nodes[c.first.0 as usize]) != taints
        }) {
            return None;
        }
        for c in passing {
            self.fill_requirement(attempt, c.variant);
        }
        // No candidate may be one where the allocator could meet a selector or pool error.
        for c in passing {
            let requirement = attempt.variants[c.variant].requirement.as_ref()?;
            for node in self.devices.risky_nodes(self.index, requirement) {
                if classes.class_of(node) == c.class
                    && node_affinity_matches(
                        &self.pods[p].facts,
                        &self.nodes[node.0 as usize].facts,
                    )
                    && self.unavailable_claim(attempt, node).is_none()
                {
                    return None;
                }
            }
        }
        // Classes by static score, best first; equal scores are merged by name.
        let mut ranked: Vec<(i64, usize)> = passing
            .iter()
            .enumerate()
            .map(|(i, c)| (self.static_key(p, c.first), i))
            .collect();
        ranked.sort_by_key(|&(key, i)| (std::cmp::Reverse(key), i));
        // Committed only with a decision: a fallback runs these allocations again.
        let mut tried_steps = 0u64;
        let mut refused: Vec<Rejected> = Vec::new();
        let mut allocator_calls = 0usize;
        let mut winner: Option<Feasible> = None;
        let mut candidates = 0usize;
        'scan: for group in ranked.chunk_by(|a, b| a.0 == b.0) {
            let group_classes: Vec<u32> = group.iter().map(|&(_, i)| passing[i].class).collect();
            // Nodes that fail the device pre-check can be skipped wholesale when the group's
            // classes share their claims.
            let variant = passing[group[0].1].variant;
            let anchor = group
                .iter()
                .all(|&(_, i)| passing[i].variant == variant)
                .then(|| attempt.variants[variant].requirement.as_ref())
                .flatten()
                .and_then(|requirement| requirement.anchor());
            let mut members = classes.stream(&group_classes);
            let mut from = 0u32;
            while let Some((rank, position)) = members.seek(from) {
                if let Some(anchor) = anchor {
                    match self.devices.next_possible(self.index, anchor, rank) {
                        None => break,
                        Some(next) if next != rank => {
                            from = next;
                            continue;
                        }
                        Some(_) => {}
                    }
                }
                from = rank + 1;
                let node = self.order[rank as usize];
                let variant = passing[group[position].1].variant;
                // The checks of check_node after the class-wide filters, in its order.
                if !node_affinity_matches(&self.pods[p].facts, &self.nodes[node.0 as usize].facts)
                    || self.unavailable_claim(attempt, node).is_some()
                {
                    continue;
                }
                let Some(requirement) = attempt.variants[variant].requirement.as_ref() else {
                    continue;
                };
                if !self.devices.check(self.index, requirement, node) {
                    continue;
                }
                candidates += 1;
                if winner.is_some() {
                    break 'scan;
                }
                allocator_calls += 1;
                let candidate = Candidate {
                    node,
                    variant,
                    needs_allocator: true,
                    risky: false,
                };
                match self.run_allocator(attempt, &candidate, &mut tried_steps) {
                    Err(e) => {
                        *steps += tried_steps;
                        return Some(Decision::Error(e));
                    }
                    Ok(Err(message)) => refused.push(Rejected {
                        node,
                        variant,
                        why: Rejection::Allocator(message),
                    }),
                    Ok(Ok(results)) => {
                        winner = Some(Feasible {
                            node,
                            variant,
                            results,
                        })
                    }
                }
            }
        }
        // A pending pod is explained node by node: the loop looks at every node anyway.
        let feasible = winner?;
        *steps += tried_steps;
        let score = combine_one(self.raw_score(p, attempt, feasible.node, &feasible.results));
        // With one candidate the node-by-node loop scores it alone and counts it.
        let single = candidates == 1;
        Some(Decision::Scheduled {
            feasible,
            placement: Box::new(Placement {
                score: Some(score),
                runner_up: None,
                feasible_nodes: single.then_some(1),
                allocator_calls,
                passed_over: Vec::new(),
            }),
            passed_over: refused,
        })
    }

    /// The second case of [`Engine::decide_by_class`].
    fn decide_by_class_scores(
        &mut self,
        p: usize,
        attempt: &Attempt,
        classes: &NodeClasses,
        passing: &[ClassView],
    ) -> Option<Decision> {
        let pod = &self.pods[p].facts;
        let node_specific = !pod.node_selector.is_empty()
            || pod.required_affinity.is_some()
            || (passing.iter().any(|c| !c.unchecked)
                && attempt
                    .pinned
                    .iter()
                    .any(|(_, selector)| selector.is_some()));
        if node_specific {
            return None;
        }
        let raw: Vec<RawScore> = passing
            .iter()
            .map(|c| self.raw_score(p, attempt, c.first, &[]))
            .collect();
        // Normalisation only depends on the maximum: the same over classes as over nodes.
        let scores = combine(&raw);
        let best_total = scores.iter().map(|s| s.total).max()?;
        // Up to two smallest ranks among the classes with the best total, then the smallest
        // rank among those with the next total.
        let mut best_ranks: Vec<(u32, usize)> = Vec::new();
        let mut next: Option<(i64, u32, usize)> = None;
        for (i, c) in passing.iter().enumerate() {
            let members = classes.members(c.class);
            if scores[i].total == best_total {
                best_ranks.extend(members.iter().take(2).map(|&rank| (rank, i)));
            } else {
                let rank = *members.first()?;
                let candidate = (scores[i].total, rank, i);
                if next.is_none_or(|(total, r, _)| {
                    candidate.0 > total || (candidate.0 == total && rank < r)
                }) {
                    next = Some(candidate);
                }
            }
        }
        best_ranks.sort_unstable();
        let named = |(rank, i): (u32, usize)| NodeScore {
            node: self.node_names[self.order[rank as usize].0 as usize].clone(),
            ..scores[i].clone()
        };
        let (winner_rank, winner_class) = *best_ranks.first()?;
        let runner_up = match best_ranks.get(1) {
            Some(&second) => Some(named(second)),
            None => next.map(|(_, rank, i)| named((rank, i))),
        };
        let feasible_nodes = passing.iter().map(|c| classes.members(c.class).len()).sum();
        Some(Decision::Scheduled {
            feasible: Feasible {
                node: self.order[winner_rank as usize],
                variant: passing[winner_class].variant,
                results: Vec::new(),
            },
            placement: Box::new(Placement {
                score: Some(named((winner_rank, winner_class))),
                runner_up,
                feasible_nodes: Some(feasible_nodes),
                allocator_calls: 0,
                passed_over: Vec::new(),
            }),
            passed_over: Vec::new(),
        })
    }

    /// The first pinned claim whose allocation's node selector excludes the node.
    fn unavailable_claim(&self, attempt: &Attempt, node: NodeId) -> Option<usize> {
        let facts = &self.nodes[node.0 as usize].facts;
        attempt.pinned.iter().position(|(_, selector)| {
            selector.as_ref().is_some_and(|selector| {
                !dra_alloc::node_selector::node_selector_matches(selector, facts).unwrap_or(false)
            })
        })
    }

    fn decide(&mut self, p: usize, attempt: &mut Attempt, steps: &mut u64) -> Decision {
        if let Some(decision) = self.decide_by_class(p, attempt, steps) {
            self.class_decisions += 1;
            return decision;
        }
        let total = self.order.len();
        let mut rejected: Vec<Rejected> = Vec::new();
        let mut unavailable: BTreeSet<usize> = BTreeSet::new();
        let num_to_find = match self.options.sampling {
            NodeSampling::AllNodes => total,
            NodeSampling::Adaptive => num_feasible_nodes_to_find(0, total),
            NodeSampling::Percentage(pct) => {
                num_feasible_nodes_to_find(pct.clamp(1, 100) as usize, total)
            }
        };
        let sampled = num_to_find < total;
        let mut feasible: Vec<Feasible> = Vec::new();
        // Candidates the allocator rejected, in the order they were tried.
        let mut refused: Vec<Rejected> = Vec::new();
        let mut allocator_calls = 0usize;
        let mut check = |engine: &mut Self,
                         attempt: &mut Attempt,
                         node: NodeId,
                         rejected: &mut Vec<Rejected>| {
            match engine.check_node(p, attempt, node) {
                Check::Rejected(r) => {
                    rejected.push(r);
                    None
                }
                Check::Unavailable(claim, r) => {
                    unavailable.insert(claim);
                    rejected.push(r);
                    None
                }
                Check::Candidate(c) => Some(c),
            }
        };
        if sampled || self.options.node_pick == NodePick::FirstFeasible {
            // Visit nodes in order (round-robin when sampling) and stop early.
            let start = if sampled { self.next_start } else { 0 };
            let wanted = if self.options.node_pick == NodePick::FirstFeasible {
                1
            } else {
                num_to_find
            };
            let mut processed = 0usize;
            for i in 0..total {
                let node = self.order[(start + i) % total];
                processed += 1;
                let Some(c) = check(self, attempt, node, &mut rejected) else {
                    continue;
                };
                allocator_calls += usize::from(c.needs_allocator);
                match self.run_allocator(attempt, &c, steps) {
                    Err(e) => {
                        if sampled {
                            self.next_start = (self.next_start + processed) % total;
                        }
                        return Decision::Error(e);
                    }
                    Ok(Err(message)) => {
                        let r = Rejected {
                            node,
                            variant: c.variant,
                            why: Rejection::Allocator(message),
                        };
                        refused.push(r);
                        rejected.push(r);
                    }
                    Ok(Ok(results)) => {
                        feasible.push(Feasible {
                            node,
                            variant: c.variant,
                            results,
                        });
                        if feasible.len() >= wanted {
                            break;
                        }
                    }
                }
            }
            if sampled {
                self.next_start = (self.next_start + processed) % total;
            }
        } else {
            let mut candidates: Vec<Candidate> = Vec::new();
            for i in 0..total {
                let node = self.order[i];
                if let Some(c) = check(self, attempt, node, &mut rejected) {
                    candidates.push(c);
                }
            }
            let need_allocator = candidates.iter().any(|c| c.needs_allocator);
            // The normalised scores cannot differ when their raw values are equal everywhere.
            let flat = !self.options.exhaustive
                && !attempt.has_first_available
                && !candidates.iter().any(|c| c.risky)
                && {
                    let pod = &self.pods[p].facts;
                    let raw = |c: &Candidate| {
                        let n = &self.nodes[c.node.0 as usize];
                        (
                            intolerable_prefer_no_schedule_taints(pod, n),
                            preferred_affinity_score(pod, &n.facts),
                        )
                    };
                    let first = candidates.first().map(raw);
                    candidates.iter().skip(1).all(|c| Some(raw(c)) == first)
                };
            if need_allocator && flat && candidates.len() > 1 {
                // Best static score first (then name): the first node the allocator accepts
                // wins, because every other plugin gives all nodes the same score.
                let mut heap: std::collections::BinaryHeap<(i64, std::cmp::Reverse<usize>)> =
                    candidates
                        .iter()
                        .enumerate()
                        .map(|(i, c)| (self.static_key(p, c.node), std::cmp::Reverse(i)))
                        .collect();
                while let Some((_, std::cmp::Reverse(i))) = heap.pop() {
                    let c = &candidates[i];
                    allocator_calls += usize::from(c.needs_allocator);
                    match self.run_allocator(attempt, c, steps) {
                        Err(e) => return Decision::Error(e),
                        Ok(Err(message)) => {
                            let r = Rejected {
                                node: c.node,
                                variant: c.variant,
                                why: Rejection::Allocator(message),
                            };
                            refused.push(r);
                            rejected.push(r);
                        }
                        Ok(Ok(results)) => {
                            let score = combine_one(self.raw_score(p, attempt, c.node, &results));
                            return Decision::Scheduled {
                                feasible: Feasible {
                                    node: c.node,
                                    variant: c.variant,
                                    results,
                                },
                                placement: Box::new(Placement {
                                    score: Some(score),
                                    runner_up: None,
                                    feasible_nodes: None,
                                    allocator_calls,
                                    passed_over: Vec::new(),
                                }),
                                passed_over: refused,
                            };
                        }
                    }
                }
            } else {
                // Every candidate is filtered: on many nodes in parallel (kube-scheduler runs
                // Filter on 16 goroutines), the outcomes walked in node order afterwards.
                let outcomes = self.allocate_on(attempt, &candidates);
                for (c, (outcome, node_steps)) in candidates.iter().zip(outcomes) {
                    allocator_calls += usize::from(c.needs_allocator);
                    *steps += node_steps;
                    match outcome {
                        Err(e) => return Decision::Error(e),
                        Ok(Err(message)) => {
                            let r = Rejected {
                                node: c.node,
                                variant: c.variant,
                                why: Rejection::Allocator(message),
                            };
                            refused.push(r);
                            rejected.push(r);
                        }
                        Ok(Ok(results)) => feasible.push(Feasible {
                            node: c.node,
                            variant: c.variant,
                            results,
                        }),
                    }
                }
            }
        }
        if feasible.is_empty() {
            return Decision::Pending {
                rejected,
                unavailable,
            };
        }
        let feasible_count = feasible.len();
        // kube-scheduler skips scoring for a single feasible node; the score is still shown.
        let (winner, score, runner_up) = if self.options.node_pick == NodePick::FirstFeasible {
            (0, None, None)
        } else {
            let raw: Vec<RawScore> = feasible
                .iter()
                .map(|f| self.raw_score(p, attempt, f.node, &f.results))
                .collect();
            let scores = combine(&raw);
            let best = select_host(&scores).unwrap_or(0);
            let mut rest: Vec<NodeScore> = scores
                .iter()
                .enumerate()
                .filter(|(i, _)| *i != best)
                .map(|(_, s)| s.clone())
                .collect();
            let runner = select_host(&rest).map(|i| rest.swap_remove(i));
            (best, Some(scores[best].clone()), runner)
        };
        let chosen = feasible.swap_remove(winner);
        let passed_over = if self.options.node_pick == NodePick::FirstFeasible {
            refused
        } else {
            // Rank by the resource scores, as the best-score-first search does.
            let winner_key = (
                self.static_key(p, chosen.node),
                std::cmp::Reverse(self.rank[chosen.node.0 as usize]),
            );
            refused
                .into_iter()
                .filter(|r| {
                    (
                        self.static_key(p, r.node),
                        std::cmp::Reverse(self.rank[r.node.0 as usize]),
                    ) > winner_key
                })
                .collect()
        };
        Decision::Scheduled {
            feasible: chosen,
            placement: Box::new(Placement {
                score,
                runner_up,
                feasible_nodes: Some(feasible_count),
                allocator_calls,
                passed_over: Vec::new(),
            }),
            passed_over,
        }
    }

    fn schedule(&mut self, p: usize) {
        let mut steps = 0u64;
        // PostFilter may deallocate one idle pinned claim per attempt; the pod is retried.
        for _ in 0..8 {
            let mut attempt = match self.prepare(p) {
                Ok(a) => a,
                Err((state, message)) => {
                    let total = self.order.len();
                    let result = &mut self.results[p];
                    result.status = state;
                    if state == PodState::Error {
                        result.error = Some(message.clone());
                        result.reason = Some(message);
                    } else {
                        let text = format!("0/{total} nodes are available: {message}.");
                        result.reason = Some(text.clone());
                        result.diagnosis = Some(Diagnosis {
                            message: text,
                            nodes: Vec::new(),
                            nodes_not_shown: 0,
                            hints: Vec::new(),
                        });
                    }
                    result.steps = steps;
                    return;
                }
            };
            match self.decide(p, &mut attempt, &mut steps) {
                Decision::Error(message) => {
                    let result = &mut self.results[p];
                    result.status = PodState::Error;
                    result.error = Some(message.clone());
                    result.reason = Some(message);
                }
                Decision::Scheduled {
                    feasible,
                    mut placement,
                    passed_over,
                } => {
                    if !passed_over.is_empty() {
                        let quiet = ExplainOptions {
                            max_nodes: 3,
                            release_hints: false,
                        };
                        let shown = &passed_over[..passed_over.len().min(3)];
                        placement.passed_over = self.diagnose(p, &attempt, shown, quiet).nodes;
                    }
                    if let Err(message) = self.bind(p, &mut attempt, feasible, *placement) {
                        let result = &mut self.results[p];
                        result.status = PodState::Error;
                        result.error = Some(message.clone());
                        result.reason = Some(message);
                    }
                }
                Decision::Pending {
                    rejected,
                    unavailable,
                } => {
                    if let Some(key) = self.post_filter(p, &attempt, &unavailable) {
                        self.results[p].notes.push(format!(
                            "the scheduler deallocated claim {}/{} (allocated for a node where the pod does not fit, reserved by no other pod) and retried",
                            key.0, key.1
                        ));
                        continue;
                    }
                    self.pending(p, &attempt, &rejected);
                }
            }
            self.record_claims(p, std::mem::take(&mut attempt.claims));
            self.results[p].steps = steps;
            return;
        }
        self.results[p].reason =
            Some("still not schedulable after deallocating its claims".to_string());
        self.results[p].steps = steps;
    }

    fn record_claims(&mut self, p: usize, claims: Vec<PodClaim>) {
        let result = &mut self.results[p];
        for c in claims {
            result.claims.insert(c.pod_claim_name, c.claim_name);
        }
    }

    /// PostFilter: deallocate the first pinned claim that was unavailable on some node and that
    /// nobody else reserves (upstream picks one at random).
    fn post_filter(
        &mut self,
        p: usize,
        attempt: &Attempt,
        unavailable: &BTreeSet<usize>,
    ) -> Option<ClaimKey> {
        let uid = self.pods[p].uid.to_string();
        for &i in unavailable {
            let key = attempt.pinned.get(i)?.0.clone();
            let reserved = self.claims.reserved_for(&key.0, &key.1);
            if reserved.is_empty() || (reserved.len() == 1 && reserved[0].uid == uid) {
                let name = self.pods[p].name;
                self.claims.unreserve(&key.0, &key.1, name, &uid);
                if let Some(allocation) = self.claims.clear_allocation(&key.0, &key.1) {
                    let _ = self.devices.remove_claim(self.index, &key, &allocation);
                }
                return Some(key);
            }
        }
        None
    }

    /// Writes out what a rejection means, in the current state.
    fn failures_of(&self, p: usize, rejected: &Rejected) -> Vec<FitFailure> {
        match rejected.why {
            Rejection::Fit => {
                node_fit_failures(&self.pods[p].facts, &self.nodes[rejected.node.0 as usize])
            }
            Rejection::Devices => {
                let mut failure = dra_failure("cannot allocate all claims");
                failure.detail =
                    Some("fewer free matching devices on the node than requested".to_string());
                vec![failure]
            }
            Rejection::Unavailable => vec![dra_failure("resourceclaim not available on the node")],
            Rejection::Allocator(message) => vec![dra_failure(message)],
        }
    }

    /// The diagnosis of rejected nodes in the current state.
    fn diagnose(
        &self,
        p: usize,
        attempt: &Attempt,
        rejected: &[Rejected],
        explain: ExplainOptions,
    ) -> Diagnosis {
        let pod_ref = |q: usize| PodRef {
            pod: self.results[q].pod.clone(),
            priority: self.results[q].priority,
        };
        let (pods_by_uid, pods_by_name) = self.pod_refs.get_or_init(|| {
            let live = || self.pods.iter().enumerate().filter(|(_, e)| !e.deleted);
            (
                live()
                    .map(|(q, e)| (e.uid.to_string(), pod_ref(q)))
                    .collect(),
                live()
                    .map(|(q, e)| ((e.namespace.to_string(), e.name.to_string()), pod_ref(q)))
                    .collect(),
            )
        });
        let mut pod_claims: Vec<ClaimKey> =
            attempt.to_allocate.iter().map(|(k, _)| k.clone()).collect();
        pod_claims.extend(attempt.pinned.iter().map(|(k, _)| k.clone()));
        let claim_sets: Vec<Vec<(String, PreparedClaim)>> = (0..attempt.variants.len())
            .map(|v| self.named_claims(p, attempt, v))
            .collect();
        let verdicts: Vec<NodeVerdict> = rejected
            .iter()
            .map(|r| NodeVerdict {
                node: r.node,
                failures: self.failures_of(p, r),
                claim_set: r.variant,
            })
            .collect();
        let context = ExplainContext {
            index: self.index,
            devices: &self.devices,
            claims: &self.claims,
            pods_by_uid,
            pods_by_name,
            node_names: &self.node_names,
            pod: pod_ref(p),
            pod_claims: &pod_claims,
            claim_sets: &claim_sets,
            max_nodes: explain.max_nodes,
            release_hints: explain.release_hints,
        };
        context.diagnose(self.order.len(), &verdicts, None)
    }

    fn pending(&mut self, p: usize, attempt: &Attempt, rejected: &[Rejected]) {
        let diagnosis = self.diagnose(p, attempt, rejected, self.options.explain);
        let mut reason = diagnosis.message.clone();
        if let Some(hint) = diagnosis
            .nodes
            .iter()
            .filter_map(|n| n.would_fit_if_released.as_ref())
            .find(|h| h.lower_priority_only)
        {
            let pods: BTreeSet<String> = hint
                .claims
                .iter()
                .flat_map(|c| c.pods.iter().map(|p| format!("{} ({})", p.pod, p.priority)))
                .collect();
            reason.push_str(&format!(
                " The devices it needs on {} are held by lower-priority pods {}; the scheduler does not preempt pods for DRA devices.",
                hint.node,
                pods.into_iter().collect::<Vec<_>>().join(", ")
            ));
        } else if diagnosis.nodes.iter().any(|n| {
            n.failures
                .first()
                .is_some_and(|f| f.plugin == "NodeResourcesFit")
        }) && self.results.iter().any(|other| {
            other.status == PodState::Running && other.priority < self.results[p].priority
        }) {
            reason.push_str(" (kube-scheduler may preempt lower-priority pods for cpu, memory or pods; preemption is not simulated)");
        }
        let result = &mut self.results[p];
        result.status = PodState::Unschedulable;
        result.reason = Some(reason);
        result.diagnosis = Some(diagnosis);
    }

    /// Reserve and PreBind: write allocations, reservations and the pod's node and status.
    fn bind(
        &mut self,
        p: usize,
        attempt: &mut Attempt,
        feasible: Feasible,
        placement: Placement,
    ) -> Result<(), String> {
        let special = attempt.variants[feasible.variant].special.as_ref();
        // The pod's names are borrowed from its entry while the claim store changes.
        let PodEntry {
            namespace,
            name: pod_name,
            uid,
            ..
        } = &self.pods[p];
        // The API server limits reservedFor; PreBind fails (and the attempt with it).
        let pinned = attempt.pinned.iter().map(|(key, _)| key);
        for key in pinned.chain(attempt.to_allocate.iter().map(|(key, _)| key)) {
            let reserved = self.claims.reserved_for(&key.0, &key.1);
            if !reserved.iter().any(|r| r.uid == *uid) && reserved.len() + 1 > RESERVED_FOR_MAX {
                return Err(format!(
                    "add reservation to claim {}/{}: ResourceClaim.resource.k8s.io \"{}\" is invalid: status.reservedFor: Too many: {}: must have at most {RESERVED_FOR_MAX} items",
                    key.0,
                    key.1,
                    key.1,
                    reserved.len() + 1
                ));
            }
        }
        let mut results = feasible.results.into_iter();
        let mut allocations = ClaimAllocations::default();
        // The keys are not needed after Reserve: the device holders take them over.
        for (key, prepared) in std::mem::take(&mut attempt.to_allocate) {
            let Some(picks) = results.next() else {
                break;
            };
            let key = Arc::new(key);
            // Whole devices allocated exclusively (nearly every claim) change the device
            // state by their keys, and the allocation's object is written when it is read.
            let allocation = if picks.is_exclusive(self.index, &prepared) {
                let keys: Vec<DeviceKey> = picks
                    .devices()
                    .map(|device| self.index.device(device).key)
                    .collect();
                self.devices.add_exclusive_claim(self.index, &key, &keys);
                Allocation::from_picks(self.shared_index, feasible.node, prepared, picks)
            } else {
                let allocation = picks.build(self.index, feasible.node, &prepared);
                self.devices
                    .add_claim(self.index, &key, &allocation)
                    .map_err(|e| e.to_string())?;
                Allocation::new(allocation)
            };
            let allocation = Arc::new(allocation);
            self.claims.allocate_and_reserve(
                &key.0,
                &key.1,
                Arc::clone(&allocation),
                pod_name,
                uid,
            );
            allocations.insert(key.1.clone(), allocation);
        }
        for (key, _) in &attempt.pinned {
            self.claims.reserve(&key.0, &key.1, pod_name, uid);
        }
        let mut extended_status = None;
        if let Some(variant) = special
            && let Some(picks) = results.next()
        {
            let allocation = picks.build(self.index, feasible.node, &variant.prepared);
            let special_name = special_claim_name(pod_name);
            let key = Arc::new((namespace.to_string(), special_name.clone()));
            let mut object = self.special_claim_object(p, &variant.plan);
            object.status = Some(ResourceClaimStatus {
                allocation: Some(allocation.clone()),
                ..ResourceClaimStatus::default()
            });
            self.claims.insert_generated(object);
            self.claims.reserve(&key.0, &key.1, pod_name, uid);
            self.devices
                .add_claim(self.index, &key, &allocation)
                .map_err(|e| e.to_string())?;
            allocations.insert(special_name.clone(), Arc::new(Allocation::new(allocation)));
            extended_status = Some(PodExtendedResourceClaimStatus {
                request_mappings: variant.plan.mappings.clone(),
                resource_claim_name: special_name,
            });
        }
        let node_name = self.node_names[feasible.node.0 as usize].clone();
        let node = feasible.node.0 as usize;
        let facts = &self.pods[p].facts;
        self.nodes[node].add_pod(facts);
        if let Some(classes) = &mut self.classes {
            classes.update(feasible.node, &self.nodes[node], self.rank[node]);
        }
        let entry = &mut self.pods[p];
        let result = &mut self.results[p];
        let template_claims: Vec<PodResourceClaimStatus> = attempt
            .claims
            .iter()
            .filter(|c| c.from_template)
            .map(|c| PodResourceClaimStatus {
                name: c.pod_claim_name.clone(),
                resource_claim_name: Some(c.claim_name.clone()),
            })
            .collect();
        entry.binding = Some(Binding {
            node_name: node_name.clone(),
            template_claims,
            extended: extended_status.clone(),
        });
        result.status = PodState::Scheduled;
        result.node = Some(node_name);
        result.allocations = allocations;
        result.extended_resource_claim_status = extended_status;
        for resource in attempt.extended.keys() {
            let served = if attempt.variants[feasible.variant]
                .resources
                .contains(resource)
            {
                "DRA"
            } else {
                "device plugin"
            };
            result
                .extended_resources
                .insert(resource.clone(), served.to_string());
        }
        result.placement = Some(placement);
        Ok(())
    }

    fn finish(self) -> Simulation {
        let mut summary = Summary {
            pods: self.pods.len(),
            ..Summary::default()
        };
        for result in &self.results {
            match result.status {
                PodState::Scheduled => summary.scheduled += 1,
                PodState::Unschedulable => summary.unschedulable += 1,
                PodState::Error => summary.error += 1,
                PodState::Running => summary.running += 1,
                PodState::Evicted => summary.evicted += 1,
                PodState::Skipped => summary.skipped += 1,
            }
        }
        let mappings = self
            .input
            .classes
            .iter()
            .filter_map(|c| {
                c.spec
                    .as_ref()
                    .and_then(|s| s.extended_resource_name.clone())
            })
            .collect::<BTreeSet<String>>()
            .into_iter()
            .filter_map(|name| {
                self.mapping
                    .class_for(&name)
                    .map(|class| ExtendedResourceEntry {
                        resource_name: name.clone(),
                        device_class: class.to_string(),
                    })
            })
            .collect();
        let steps = self.results.iter().map(|r| r.steps).sum();
        let tainted_devices = self
            .taints
            .tainted_devices()
            .into_iter()
            .map(|((driver, pool, device), taints)| {
                let allocated_to = self
                    .index
                    .device_key(&driver, &pool, &device)
                    .map(|key| {
                        self.devices
                            .holders(key)
                            .map(|(ns, n)| format!("{ns}/{n}"))
                            .collect()
                    })
                    .unwrap_or_default();
                TaintedDevice {
                    device: format!("{driver}/{pool}/{device}"),
                    taints,
                    allocated_to,
                }
            })
            .collect();
        let extended_resources = ExtendedResources {
            mappings,
            duplicates: self.mapping.duplicates().to_vec(),
        };
        let Engine {
            options,
            devices,
            classes,
            claims,
            pods: entries,
            results,
            evictions,
            would_evict,
            notes,
            class_decisions,
            parallel_filters,
            ..
        } = self;
        drop((devices, classes));
        let pod_changes = entries
            .into_iter()
            .map(|entry| {
                (!entry.deleted).then_some(PodChanges {
                    derived_uid: match entry.uid {
                        Cow::Owned(uid) => Some(uid),
                        Cow::Borrowed(_) => None,
                    },
                    binding: entry.binding,
                })
            })
            .collect();
        Simulation {
            node_pick: options.node_pick.name(),
            results,
            evictions,
            would_evict,
            tainted_devices,
            extended_resources,
            notes,
            summary,
            steps,
            pod_changes,
            class_decisions,
            parallel_filters: parallel_filters.into_inner(),
            claims,
        }
    }
}

/// The DRA plugin's raw score: Σ over the allocated `firstAvailable` subrequests of
/// `8 - index`, over the claims allocated for the pod on the node (the special claim has no
/// subrequests).
/// What the allocator says on one node: `Ok(Ok(results))`, `Ok(Err(why))` when the claims do
/// not fit there, `Err(message)` for a fatal error (the scheduling attempt fails).
type AllocatorAnswer = Result<Result<Vec<ClaimPicks>, &'static str>, String>;

/// `Allocate` of `claims` on `node`, as an [`AllocatorAnswer`] with the search steps it took.
fn allocator_answer(
    index: &Index,
    state: &dra_alloc::AllocatedState,
    node: NodeId,
    claims: &[&PreparedClaim],
) -> (AllocatorAnswer, u64) {
    let (outcome, stats) = allocate_picks(index, state, node, claims);
    let answer = match outcome {
        Picked::Allocated(picks) => Ok(Ok(picks)),
        Picked::Unsatisfiable(why) => Ok(Err(why.message())),
        Picked::Fatal(e) => Err(e.message),
    };
    (answer, stats.steps)
}

fn dra_score(attempt: &Attempt, results: &[ClaimPicks]) -> i64 {
    let mut score = 0;
    for ((_, claim), picks) in attempt.to_allocate.iter().zip(results) {
        if !claim.has_first_available() {
            continue;
        }
        let allocated: BTreeSet<String> = picks
            .request_names(claim)
            .filter(|r| r.contains('/'))
            .collect();
        for request in &claim.requests {
            if let RequestBody::FirstAvailable(subs) = &request.body {
                for (i, sub) in subs.iter().enumerate() {
                    if allocated.contains(format!("{}/{}", request.name, sub.name).as_str()) {
                        score += FIRST_AVAILABLE_MAX_SIZE - i as i64;
                    }
                }
            }
        }
    }
    score
}

/// `numFeasibleNodesToFind(percentageOfNodesToScore, numAllNodes)`; `percentage` 0 is the
/// adaptive default.
pub fn num_feasible_nodes_to_find(percentage: usize, total: usize) -> usize {
    if total < MIN_FEASIBLE_NODES_TO_FIND {
        return total;
    }
    let mut percentage = percentage;
    if percentage == 0 {
        percentage = 50usize
            .saturating_sub(total / 125)
            .max(MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND);
    }
    let found = total * percentage / 100;
    found.max(MIN_FEASIBLE_NODES_TO_FIND)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn feasible_nodes_to_find() {
        assert_eq!(num_feasible_nodes_to_find(0, 50), 50);
        assert_eq!(num_feasible_nodes_to_find(0, 100), 100);
        assert_eq!(num_feasible_nodes_to_find(0, 500), 230);
        assert_eq!(num_feasible_nodes_to_find(0, 1000), 420);
        assert_eq!(num_feasible_nodes_to_find(0, 5000), 500);
        assert_eq!(num_feasible_nodes_to_find(0, 10_000), 500);
        assert_eq!(num_feasible_nodes_to_find(10, 500), 100);
        assert_eq!(num_feasible_nodes_to_find(100, 500), 500);
    }
}
