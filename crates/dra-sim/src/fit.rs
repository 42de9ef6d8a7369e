//! Node fit besides DRA: the filter plugins of kube-scheduler's default profile that decide
//! whether a pod may go to a node before `DynamicResources` looks at devices.
//!
//! Modelled, in the profile's order: `NodeUnschedulable` (`spec.unschedulable` unless the pod
//! tolerates `node.kubernetes.io/unschedulable:NoSchedule`), `TaintToleration` (NoSchedule and
//! NoExecute node taints), `NodeAffinity` (`spec.nodeSelector` and required node affinity) and
//! `NodeResourcesFit` (pod count, cpu, memory, ephemeral storage and extended resources against
//! allocatable minus the requests of the pods already on the node; an extended resource that a
//! DeviceClass maps and the node does not offer is left to DRA). Not modelled: `NodePorts`,
//! volume plugins, `PodTopologySpread`, `InterPodAffinity`.

use std::borrow::Cow;
use std::collections::BTreeMap;

use dra_alloc::node_selector::{NodeFacts, node_selector_matches};
use k8s_openapi::api::core::v1::{
    Node, NodeSelector, NodeSelectorTerm, Pod, PreferredSchedulingTerm, Taint, Toleration,
};
use serde::Serialize;

use crate::extended::ExtendedResourceMapping;
use crate::resources::{
    NodeAllocatable, PodRequestOptions, Resources, pod_requests, pod_scoring_requests,
};

/// `spec.nodeName` (equal name) and `spec.nodeSelector` (every label present and equal): the
/// filters of the reference loop.
pub fn pod_node_name_and_selector_fit(pod: &Pod, node: &NodeFacts) -> bool {
    let Some(spec) = &pod.spec else {
        return true;
    };
    if let Some(name) = spec.node_name.as_deref()
        && !name.is_empty()
        && name != node.name
    {
        return false;
    }
    spec.node_selector
        .iter()
        .flatten()
        .all(|(key, value)| node.labels.get(key) == Some(value))
}

/// The taint the node controller puts on cordoned nodes; tolerating it lets a pod onto an
/// unschedulable node.
pub const UNSCHEDULABLE_TAINT_KEY: &str = "node.kubernetes.io/unschedulable";

/// `v1.Toleration.ToleratesTaint`.
pub fn toleration_tolerates(toleration: &Toleration, taint: &Taint) -> bool {
    if let Some(effect) = toleration.effect.as_deref().filter(|e| !e.is_empty())
        && effect != taint.effect
    {
        return false;
    }
    if let Some(key) = toleration.key.as_deref().filter(|k| !k.is_empty())
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

/// A filter plugin that rejected a node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FitFailure {
    /// The kube-scheduler plugin (`NodeResourcesFit`, `TaintToleration`, ...).
    pub plugin: &'static str,
    /// The plugin's reason, as kube-scheduler words it.
    pub reason: String,
    /// Numbers behind the reason (requested, used, allocatable), when there are any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

impl FitFailure {
    fn new(plugin: &'static str, reason: impl Into<String>) -> FitFailure {
        FitFailure {
            plugin,
            reason: reason.into(),
            detail: None,
        }
    }
}

/// A node as the scheduler's cache sees it: its facts plus the requests of its pods.
#[derive(Debug, Clone)]
pub struct SimNode<'a> {
    /// Borrowed from the snapshot's index, which has them already (a copy of every node's
    /// labels was 110,000 allocations at 10,000 nodes).
    pub facts: Cow<'a, NodeFacts>,
    pub taints: Vec<Taint>,
    pub unschedulable: bool,
    pub allocatable: NodeAllocatable,
    /// Sum of the pods' requests (`NodeInfo.Requested`).
    pub requested: Resources,
    /// Sum of the pods' cpu and memory with scoring defaults (`NodeInfo.NonZeroRequested`).
    pub non_zero_milli_cpu: i64,
    pub non_zero_memory: i64,
    pub pods: i64,
}

impl<'a> SimNode<'a> {
    pub fn new(facts: Cow<'a, NodeFacts>, node: Option<&Node>) -> SimNode<'a> {
        let spec = node.and_then(|n| n.spec.as_ref());
        SimNode {
            facts,
            taints: spec.and_then(|s| s.taints.clone()).unwrap_or_default(),
            unschedulable: spec.and_then(|s| s.unschedulable).unwrap_or(false),
            allocatable: node.map(NodeAllocatable::of).unwrap_or_default(),
            requested: Resources::default(),
            non_zero_milli_cpu: 0,
            non_zero_memory: 0,
            pods: 0,
        }
    }

    /// Accounts a pod placed on (or already running on) the node.
    pub fn add_pod(&mut self, pod: &PodFacts) {
        self.requested.add(&pod.requests);
        self.non_zero_milli_cpu = self
            .non_zero_milli_cpu
            .saturating_add(pod.non_zero_milli_cpu);
        self.non_zero_memory = self.non_zero_memory.saturating_add(pod.non_zero_memory);
        self.pods += 1;
    }

    /// Forgets a pod that left the node (evicted).
    pub fn remove_pod(&mut self, pod: &PodFacts) {
        self.requested.subtract(&pod.requests);
        self.non_zero_milli_cpu = self
            .non_zero_milli_cpu
            .saturating_sub(pod.non_zero_milli_cpu);
        self.non_zero_memory = self.non_zero_memory.saturating_sub(pod.non_zero_memory);
        self.pods -= 1;
    }
}

/// What the node filters and scores need from a pod, computed once.
#[derive(Debug, Clone, Default)]
pub struct PodFacts {
    /// `PodRequests` (the filter's view).
    pub requests: Resources,
    /// cpu and memory with the scoring defaults for containers that request none.
    pub non_zero_milli_cpu: i64,
    pub non_zero_memory: i64,
    pub tolerations: Vec<Toleration>,
    pub node_selector: BTreeMap<String, String>,
    pub required_affinity: Option<NodeSelector>,
    pub preferred_affinity: Vec<PreferredSchedulingTerm>,
    /// For each of `requests.scalar`'s resources, in its order: whether a DeviceClass names
    /// it as its extended resource (so that DRA serves it where the node does not offer it).
    /// Resolved once per pod: the filters ask for every node.
    pub scalar_has_class: Vec<bool>,
}

impl PodFacts {
    /// The facts of `pod`, with its extended resources looked up in `mapping`.
    pub fn of(pod: &Pod, mapping: &ExtendedResourceMapping) -> PodFacts {
        let requests = Resources::from_list(&pod_requests(pod, PodRequestOptions::default()));
        let (non_zero_milli_cpu, non_zero_memory) = pod_scoring_requests(pod);
        let spec = pod.spec.as_ref();
        let node_affinity = spec
            .and_then(|s| s.affinity.as_ref())
            .and_then(|a| a.node_affinity.as_ref());
        let scalar_has_class = requests
            .scalar
            .keys()
            .map(|name| mapping.class_for(name).is_some())
            .collect();
        PodFacts {
            requests,
            scalar_has_class,
            non_zero_milli_cpu,
            non_zero_memory,
            tolerations: spec.and_then(|s| s.tolerations.clone()).unwrap_or_default(),
            node_selector: spec
                .and_then(|s| s.node_selector.clone())
                .unwrap_or_default(),
            required_affinity: node_affinity.and_then(|a| {
                a.required_during_scheduling_ignored_during_execution
                    .clone()
            }),
            preferred_affinity: node_affinity
                .and_then(|a| {
                    a.preferred_during_scheduling_ignored_during_execution
                        .clone()
                })
                .unwrap_or_default(),
        }
    }
}

/// The non-DRA filters in the default profile's order. kube-scheduler stops at the first
/// failing plugin; all failures are returned here (the first one is what kube-scheduler
/// reports), because an explanation is more useful with all of them.
pub fn node_fit_failures(pod: &PodFacts, node: &SimNode) -> Vec<FitFailure> {
    let mut failures = Vec::new();
    if node.unschedulable {
        let cordon = Taint {
            key: UNSCHEDULABLE_TAINT_KEY.to_string(),
            effect: "NoSchedule".to_string(),
            ..Taint::default()
        };
        if !pod
            .tolerations
            .iter()
            .any(|t| toleration_tolerates(t, &cordon))
        {
            failures.push(FitFailure::new(
                "NodeUnschedulable",
                "node(s) were unschedulable",
            ));
        }
    }
    if let Some(taint) = node.taints.iter().find(|taint| {
        matches!(taint.effect.as_str(), "NoSchedule" | "NoExecute")
            && !pod
                .tolerations
                .iter()
                .any(|t| toleration_tolerates(t, taint))
    }) {
        let mut failure = FitFailure::new(
            "TaintToleration",
            format!(
                "node(s) had untolerated taint {{{}: {}}}",
                taint.key,
                taint.value.as_deref().unwrap_or_default()
            ),
        );
        failure.detail = Some(format!("effect {}", taint.effect));
        failures.push(failure);
    }
    if !node_affinity_matches(pod, &node.facts) {
        failures.push(FitFailure::new(
            "NodeAffinity",
            "node(s) didn't match Pod's node affinity/selector",
        ));
    }
    failures.extend(resource_fit_failures(pod, node));
    failures
}

/// Whether all the filters of [`node_fit_failures`] pass, without writing any reason (the hot
/// path: every pod is checked against every node).
pub fn node_fits(pod: &PodFacts, node: &SimNode) -> bool {
    node_fits_except_affinity(pod, node) && node_affinity_matches(pod, &node.facts)
}

/// The filters of [`node_fits`] that do not read the node's name and labels: the same answer
/// for nodes with equal taints, `spec.unschedulable`, allocatable, requests and pod count.
pub fn node_fits_except_affinity(pod: &PodFacts, node: &SimNode) -> bool {
    if node.unschedulable
        && !pod
            .tolerations
            .iter()
            .any(|t| toleration_tolerates(t, &cordon_taint()))
    {
        return false;
    }
    if node.taints.iter().any(|taint| {
        matches!(taint.effect.as_str(), "NoSchedule" | "NoExecute")
            && !pod
                .tolerations
                .iter()
                .any(|t| toleration_tolerates(t, taint))
    }) {
        return false;
    }
    let allocatable = &node.allocatable;
    if node.pods.saturating_add(1) > allocatable.pods {
        return false;
    }
    let request = &pod.requests;
    let free = |capacity: i64, used: i64| capacity.saturating_sub(used);
    if (request.milli_cpu > 0
        && request.milli_cpu > free(allocatable.resources.milli_cpu, node.requested.milli_cpu))
        || (request.memory > 0
            && request.memory > free(allocatable.resources.memory, node.requested.memory))
        || (request.ephemeral_storage > 0
            && request.ephemeral_storage
                > free(
                    allocatable.resources.ephemeral_storage,
                    node.requested.ephemeral_storage,
                ))
    {
        return false;
    }
    request
        .scalar
        .iter()
        .zip(&pod.scalar_has_class)
        .all(|((name, quantity), has_class)| {
            let capacity = allocatable.scalar(name);
            *quantity == 0
                || (capacity <= 0 && *has_class)
                || *quantity
                    <= free(
                        capacity,
                        node.requested.scalar.get(name).copied().unwrap_or(0),
                    )
        })
}

fn cordon_taint() -> Taint {
    Taint {
        key: UNSCHEDULABLE_TAINT_KEY.to_string(),
        effect: "NoSchedule".to_string(),
        ..Taint::default()
    }
}

/// `spec.nodeSelector` and required node affinity (`GetRequiredNodeAffinity(pod).Match`).
pub fn node_affinity_matches(pod: &PodFacts, node: &NodeFacts) -> bool {
    if !pod
        .node_selector
        .iter()
        .all(|(key, value)| node.labels.get(key) == Some(value))
    {
        return false;
    }
    match &pod.required_affinity {
        None => true,
        // A selector the API server would reject matches nothing.
        Some(selector) => node_selector_matches(selector, node).unwrap_or(false),
    }
}

fn insufficient(
    name: &str,
    requested: i64,
    used: i64,
    capacity: i64,
    unit: fn(i64) -> String,
) -> FitFailure {
    let mut failure = FitFailure::new("NodeResourcesFit", format!("Insufficient {name}"));
    failure.detail = Some(format!(
        "requested {}, already requested by pods on the node {}, allocatable {}",
        unit(requested),
        unit(used),
        unit(capacity)
    ));
    failure
}

fn milli(v: i64) -> String {
    if v % 1000 == 0 {
        (v / 1000).to_string()
    } else {
        format!("{v}m")
    }
}

fn bytes(v: i64) -> String {
    const UNITS: [(&str, i64); 4] = [
        ("Ti", 1 << 40),
        ("Gi", 1 << 30),
        ("Mi", 1 << 20),
        ("Ki", 1 << 10),
    ];
    for (suffix, size) in UNITS {
        if v != 0 && v % size == 0 {
            return format!("{}{suffix}", v / size);
        }
    }
    v.to_string()
}

fn plain(v: i64) -> String {
    v.to_string()
}

/// `NodeResourcesFit` filter (`fitsRequest`).
pub fn resource_fit_failures(pod: &PodFacts, node: &SimNode) -> Vec<FitFailure> {
    let mut failures = Vec::new();
    let allocatable = &node.allocatable;
    if node.pods.saturating_add(1) > allocatable.pods {
        let mut failure = FitFailure::new("NodeResourcesFit", "Too many pods");
        failure.detail = Some(format!(
            "{} pods on the node, {} allowed",
            node.pods, allocatable.pods
        ));
        failures.push(failure);
    }
    let request = &pod.requests;
    if request.is_zero() {
        return failures;
    }
    let free = |capacity: i64, used: i64| capacity.saturating_sub(used);
    if request.milli_cpu > 0
        && request.milli_cpu > free(allocatable.resources.milli_cpu, node.requested.milli_cpu)
    {
        failures.push(insufficient(
            "cpu",
            request.milli_cpu,
            node.requested.milli_cpu,
            allocatable.resources.milli_cpu,
            milli,
        ));
    }
    if request.memory > 0
        && request.memory > free(allocatable.resources.memory, node.requested.memory)
    {
        failures.push(insufficient(
            "memory",
            request.memory,
            node.requested.memory,
            allocatable.resources.memory,
            bytes,
        ));
    }
    if request.ephemeral_storage > 0
        && request.ephemeral_storage
            > free(
                allocatable.resources.ephemeral_storage,
                node.requested.ephemeral_storage,
            )
    {
        failures.push(insufficient(
            "ephemeral-storage",
            request.ephemeral_storage,
            node.requested.ephemeral_storage,
            allocatable.resources.ephemeral_storage,
            bytes,
        ));
    }
    for ((name, quantity), has_class) in request.scalar.iter().zip(&pod.scalar_has_class) {
        if *quantity == 0 {
            continue;
        }
        let capacity = allocatable.scalar(name);
        // `shouldDelegateResourceToDRA`: the node does not offer it and a class maps it.
        if capacity <= 0 && *has_class {
            continue;
        }
        let used = node.requested.scalar.get(name).copied().unwrap_or(0);
        if *quantity > free(capacity, used) {
            failures.push(insufficient(name, *quantity, used, capacity, plain));
        }
    }
    failures
}

/// `TaintToleration` score: node taints with effect PreferNoSchedule that the pod's
/// PreferNoSchedule (or effect-less) tolerations do not tolerate.
pub fn intolerable_prefer_no_schedule_taints(pod: &PodFacts, node: &SimNode) -> i64 {
    let tolerates = |taint: &Taint| {
        pod.tolerations
            .iter()
            .filter(|t| {
                matches!(
                    t.effect.as_deref(),
                    None | Some("") | Some("PreferNoSchedule")
                )
            })
            .any(|t| toleration_tolerates(t, taint))
    };
    node.taints
        .iter()
        .filter(|taint| taint.effect == "PreferNoSchedule" && !tolerates(taint))
        .count() as i64
}

/// `NodeAffinity` score: the sum of the weights of the preferred terms the node matches;
/// `None` when the pod has no preferred terms (the plugin skips scoring).
pub fn preferred_affinity_score(pod: &PodFacts, node: &NodeFacts) -> Option<i64> {
    if pod.preferred_affinity.is_empty() {
        return None;
    }
    Some(
        pod.preferred_affinity
            .iter()
            .filter(|term| term.weight != 0)
            .filter(|term| term_matches(&term.preference, node))
            .map(|term| i64::from(term.weight))
            .sum(),
    )
}

fn term_matches(term: &NodeSelectorTerm, node: &NodeFacts) -> bool {
    let selector = NodeSelector {
        node_selector_terms: vec![term.clone()],
    };
    node_selector_matches(&selector, node).unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cluster(yaml: &str) -> dra_api::Cluster {
        let loaded = dra_api::load_str("t.yaml", yaml);
        assert!(loaded.diagnostics.is_empty(), "{:?}", loaded.diagnostics);
        loaded.cluster
    }

    fn sim_node(node: &Node) -> SimNode<'static> {
        SimNode::new(
            Cow::Owned(NodeFacts {
                name: node.metadata.name.clone().unwrap_or_default(),
                labels: node.metadata.labels.clone().unwrap_or_default(),
            }),
            Some(node),
        )
    }

    #[test]
    fn filters_report_every_failure_in_profile_order() {
        let c = cluster(
            "apiVersion: v1\nkind: Node\nmetadata: {name: node-1, labels: {zone: a}}\nspec:\n  unschedulable: true\n  taints: [{key: gpu, value: 'yes', effect: NoSchedule}, {key: soft, effect: PreferNoSchedule}]\n\
             status: {allocatable: {cpu: '4', memory: 8Gi, pods: '1', example.com/gpu: '1'}}\n---\n\
             apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  nodeSelector: {zone: b}\n  containers:\n  - {name: c, resources: {requests: {cpu: '6', memory: 1Gi}, limits: {example.com/gpu: '2', example.com/fpga: '1'}}}\n",
        );
        let mut node = sim_node(&c.nodes[0].object);
        node.pods = 1;
        let pod = PodFacts::of(&c.pods[0].object, &ExtendedResourceMapping::default());
        let reasons: Vec<String> = node_fit_failures(&pod, &node)
            .into_iter()
            .map(|f| f.reason)
            .collect();
        assert_eq!(
            reasons,
            vec![
                "node(s) were unschedulable",
                "node(s) had untolerated taint {gpu: yes}",
                "node(s) didn't match Pod's node affinity/selector",
                "Too many pods",
                "Insufficient cpu",
                "Insufficient example.com/fpga",
                "Insufficient example.com/gpu",
            ]
        );
        assert_eq!(intolerable_prefer_no_schedule_taints(&pod, &node), 1);
    }

    #[test]
    fn tolerations_and_dra_delegation() {
        let c = cluster(
            "apiVersion: v1\nkind: Node\nmetadata: {name: node-1}\nspec:\n  unschedulable: true\n  taints: [{key: gpu, value: 'yes', effect: NoExecute}]\n\
             status: {allocatable: {cpu: '4', memory: 8Gi, pods: '10'}}\n---\n\
             apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata: {name: gpu}\nspec: {extendedResourceName: example.com/gpu}\n---\n\
             apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  tolerations: [{key: node.kubernetes.io/unschedulable, operator: Exists}, {key: gpu, operator: Equal, value: 'yes'}]\n  containers:\n  - {name: c, resources: {limits: {example.com/gpu: '2'}}}\n",
        );
        let node = sim_node(&c.nodes[0].object);
        let classes: Vec<_> = c.device_classes.iter().map(|d| &*d.object).collect();
        let pod = PodFacts::of(&c.pods[0].object, &ExtendedResourceMapping::build(&classes));
        assert_eq!(pod.scalar_has_class, vec![true]);
        assert_eq!(node_fit_failures(&pod, &node), vec![]);
        assert!(node_fits(&pod, &node));
        // Without the class, the resource is simply missing on the node.
        let pod = PodFacts::of(&c.pods[0].object, &ExtendedResourceMapping::default());
        assert_eq!(pod.scalar_has_class, vec![false]);
        assert!(!node_fits(&pod, &node));
        let failures = node_fit_failures(&pod, &node);
        assert_eq!(failures.len(), 1);
        assert_eq!(failures[0].reason, "Insufficient example.com/gpu");
    }

    #[test]
    fn nodes_without_allocatable_are_not_limited() {
        let c = cluster(
            "apiVersion: v1\nkind: Node\nmetadata: {name: node-1}\n---\n\
             apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - {name: c, resources: {requests: {cpu: '600', memory: 1Ti}}}\n",
        );
        let node = sim_node(&c.nodes[0].object);
        assert!(!node.allocatable.declared);
        let pod = PodFacts::of(&c.pods[0].object, &ExtendedResourceMapping::default());
        assert_eq!(node_fit_failures(&pod, &node), vec![]);
    }

    #[test]
    fn preferred_affinity_weights() {
        let c = cluster(
            "apiVersion: v1\nkind: Node\nmetadata: {name: node-1, labels: {zone: a, disk: ssd}}\n---\n\
             apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  affinity:\n    nodeAffinity:\n      preferredDuringSchedulingIgnoredDuringExecution:\n      - {weight: 5, preference: {matchExpressions: [{key: zone, operator: In, values: [a]}]}}\n      - {weight: 7, preference: {matchExpressions: [{key: disk, operator: In, values: [hdd]}]}}\n      - {weight: 11, preference: {matchExpressions: [{key: disk, operator: Exists}]}}\n  containers: [{name: c}]\n",
        );
        let node = sim_node(&c.nodes[0].object);
        let pod = PodFacts::of(&c.pods[0].object, &ExtendedResourceMapping::default());
        assert_eq!(preferred_affinity_score(&pod, &node.facts), Some(16));
    }
}
