//! Pod requests and node capacity in the scheduler's units (`component-helpers/resource`
//! `PodRequests` and the scheduler framework's `Resource`).
//!
//! A pod's effective request follows the sidecar formula of KEP-753: regular containers and
//! restartable (sidecar) init containers add up, each ordinary init container needs its own
//! request plus the sidecars started before it, and the pod needs the maximum of the two;
//! pod-level `spec.resources.requests` replace the container sum for cpu, memory and hugepages;
//! `spec.overhead` is added. Requests default to limits where only a limit is given, as the API
//! server's defaulting does.

use std::collections::BTreeMap;

use dra_types::Quantity;
use k8s_openapi::api::core::v1::{Container, Node, Pod};

/// A resource list with exact quantities (Go's `v1.ResourceList`).
pub type ResourceList = BTreeMap<String, Quantity>;

/// `DefaultMilliCPURequest`: the cpu a container without a cpu request counts as for scoring.
pub const DEFAULT_MILLI_CPU_REQUEST: i64 = 100;
/// `DefaultMemoryRequest`: the memory a container without a memory request counts as for scoring.
pub const DEFAULT_MEMORY_REQUEST: i64 = 200 * 1024 * 1024;

/// Options of [`pod_requests`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PodRequestOptions {
    /// Count a container without a cpu or memory request as requesting the scheduler's
    /// defaults (100m, 200Mi), as the scoring plugins do (`NonMissingContainerRequests`).
    pub non_missing_defaults: bool,
}

/// The requests of one container after the API server's defaulting (a limit without a request
/// is also the request).
pub fn container_requests(container: &Container) -> ResourceList {
    let mut list = ResourceList::new();
    let Some(resources) = &container.resources else {
        return list;
    };
    for (name, q) in resources.requests.iter().flatten() {
        if let Ok(q) = Quantity::parse(&q.0) {
            list.insert(name.clone(), q);
        }
    }
    for (name, q) in resources.limits.iter().flatten() {
        if list.contains_key(name) {
            continue;
        }
        if let Ok(q) = Quantity::parse(&q.0) {
            list.insert(name.clone(), q);
        }
    }
    list
}

fn add_into(into: &mut ResourceList, other: &ResourceList) {
    for (name, q) in other {
        match into.get_mut(name) {
            Some(total) => sum_into(total, q),
            None => {
                into.insert(name.clone(), q.clone());
            }
        }
    }
}

fn max_into(into: &mut ResourceList, other: &ResourceList) {
    for (name, q) in other {
        match into.get(name) {
            Some(current) if current.cmp_value(q) != std::cmp::Ordering::Less => {}
            _ => {
                into.insert(name.clone(), q.clone());
            }
        }
    }
}

fn default_cpu_request() -> Quantity {
    Quantity::from_milli(DEFAULT_MILLI_CPU_REQUEST, dra_types::Format::DecimalSI)
}

fn default_memory_request() -> Quantity {
    Quantity::from_i64(DEFAULT_MEMORY_REQUEST, dra_types::Format::DecimalSI)
}

fn apply_non_missing(list: &mut ResourceList) {
    list.entry("cpu".to_string())
        .or_insert_with(default_cpu_request);
    list.entry("memory".to_string())
        .or_insert_with(default_memory_request);
}

/// Whether a resource may be set at pod level (`IsSupportedPodLevelResource`).
fn is_pod_level_resource(name: &str) -> bool {
    name == "cpu" || name == "memory" || name.starts_with("hugepages-")
}

/// `resourcehelper.PodRequests`: the pod's effective requests.
pub fn pod_requests(pod: &Pod, options: PodRequestOptions) -> ResourceList {
    requests_by_formula(pod, options)
}

/// The pod's cpu (in millicores) and memory (in bytes) as the scoring plugins count them
/// (`NonMissingContainerRequests`): what [`Resources::from_list`] of [`pod_requests`] with
/// `non_missing_defaults` has in `milli_cpu` and `memory`, by the same arithmetic, without
/// building a resource list (each pod's facts need it once, and a list of two entries cost
/// a dozen allocations).
pub fn pod_scoring_requests(pod: &Pod) -> (i64, i64) {
    let total: CpuAndMemory = requests_by_formula(
        pod,
        PodRequestOptions {
            non_missing_defaults: true,
        },
    );
    (
        total.cpu.as_ref().map_or(0, Quantity::milli_value),
        total.memory.as_ref().map_or(0, Quantity::value),
    )
}

/// What the request formula adds up: every resource, or only cpu and memory. Resources are
/// independent of each other in every step, so the second is the first with the other
/// entries left out.
trait Requests: Default + Clone {
    /// A container's requests ([`container_requests`]), with the scoring defaults for a
    /// missing cpu or memory when `defaults`.
    fn of_container(container: &Container, defaults: bool) -> Self;
    fn add(&mut self, other: &Self);
    fn max(&mut self, other: &Self);
    /// A pod-level request: replaces the sum.
    fn replace(&mut self, name: &str, quantity: Quantity);
    /// An overhead: added to the sum.
    fn add_one(&mut self, name: &str, quantity: &Quantity);
}

impl Requests for ResourceList {
    fn of_container(container: &Container, defaults: bool) -> Self {
        let mut list = container_requests(container);
        if defaults {
            apply_non_missing(&mut list);
        }
        list
    }

    fn add(&mut self, other: &Self) {
        add_into(self, other);
    }

    fn max(&mut self, other: &Self) {
        max_into(self, other);
    }

    fn replace(&mut self, name: &str, quantity: Quantity) {
        self.insert(name.to_string(), quantity);
    }

    fn add_one(&mut self, name: &str, quantity: &Quantity) {
        match self.get_mut(name) {
            Some(total) => sum_into(total, quantity),
            None => {
                self.insert(name.to_string(), quantity.clone());
            }
        }
    }
}

/// Only the cpu and memory of a resource list (`None`: no entry).
#[derive(Debug, Clone, Default)]
struct CpuAndMemory {
    cpu: Option<Quantity>,
    memory: Option<Quantity>,
}

impl CpuAndMemory {
    /// Applies `step` to each resource that `other` has.
    fn combine(&mut self, other: &Self, step: fn(&mut Option<Quantity>, &Quantity)) {
        for (into, other) in [
            (&mut self.cpu, &other.cpu),
            (&mut self.memory, &other.memory),
        ] {
            if let Some(quantity) = other {
                step(into, quantity);
            }
        }
    }

    fn slot(&mut self, name: &str) -> Option<&mut Option<Quantity>> {
        match name {
            "cpu" => Some(&mut self.cpu),
            "memory" => Some(&mut self.memory),
            _ => None,
        }
    }
}

impl Requests for CpuAndMemory {
    fn of_container(container: &Container, defaults: bool) -> Self {
        // As `container_requests`: a request that parses, else a limit that parses.
        let resources = container.resources.as_ref();
        let find = |name: &str| {
            let parsed = |list: Option<&BTreeMap<String, _>>| {
                list.and_then(|l| l.get(name)).and_then(
                    |q: &k8s_openapi::apimachinery::pkg::api::resource::Quantity| {
                        Quantity::parse(&q.0).ok()
                    },
                )
            };
            parsed(resources.and_then(|r| r.requests.as_ref()))
                .or_else(|| parsed(resources.and_then(|r| r.limits.as_ref())))
        };
        let mut requests = CpuAndMemory {
            cpu: find("cpu"),
            memory: find("memory"),
        };
        if defaults {
            requests.cpu.get_or_insert_with(default_cpu_request);
            requests.memory.get_or_insert_with(default_memory_request);
        }
        requests
    }

    fn add(&mut self, other: &Self) {
        self.combine(other, add_quantity);
    }

    fn max(&mut self, other: &Self) {
        self.combine(other, max_quantity);
    }

    fn replace(&mut self, name: &str, quantity: Quantity) {
        if let Some(slot) = self.slot(name) {
            *slot = Some(quantity);
        }
    }

    fn add_one(&mut self, name: &str, quantity: &Quantity) {
        if let Some(slot) = self.slot(name) {
            add_quantity(slot, quantity);
        }
    }
}

/// Adds `quantity` to `total`, which stays as it was when the sum overflows.
fn sum_into(total: &mut Quantity, quantity: &Quantity) {
    if let Some(sum) = total.checked_add(quantity) {
        *total = sum;
    }
}

/// Adds `quantity` to a total that may be absent.
fn add_quantity(total: &mut Option<Quantity>, quantity: &Quantity) {
    match total {
        Some(total) => sum_into(total, quantity),
        None => *total = Some(quantity.clone()),
    }
}

/// Raises `current` to `quantity` when it is absent or smaller.
fn max_quantity(current: &mut Option<Quantity>, quantity: &Quantity) {
    match current {
        Some(current) if current.cmp_value(quantity) != std::cmp::Ordering::Less => {}
        _ => *current = Some(quantity.clone()),
    }
}

/// The formula of the module documentation.
fn requests_by_formula<R: Requests>(pod: &Pod, options: PodRequestOptions) -> R {
    let mut total = R::default();
    let Some(spec) = &pod.spec else {
        return total;
    };
    let defaults = options.non_missing_defaults;
    for container in &spec.containers {
        total.add(&R::of_container(container, defaults));
    }
    let mut sidecars = R::default();
    let mut init_peak = R::default();
    for container in spec.init_containers.iter().flatten() {
        let requests = R::of_container(container, defaults);
        let during = if is_sidecar(container) {
            total.add(&requests);
            sidecars.add(&requests);
            sidecars.clone()
        } else {
            let mut combined = requests;
            combined.add(&sidecars);
            combined
        };
        init_peak.max(&during);
    }
    total.max(&init_peak);
    if let Some(pod_level) = spec.resources.as_ref().and_then(|r| r.requests.as_ref()) {
        for (name, q) in pod_level {
            if is_pod_level_resource(name)
                && let Ok(q) = Quantity::parse(&q.0)
            {
                total.replace(name, q);
            }
        }
    }
    for (name, q) in spec.overhead.iter().flatten() {
        if let Ok(q) = Quantity::parse(&q.0) {
            total.add_one(name, &q);
        }
    }
    total
}

/// A restartable init container (`restartPolicy: Always`), i.e. a sidecar.
pub fn is_sidecar(container: &Container) -> bool {
    container.restart_policy.as_deref() == Some("Always")
}

/// Amounts in the units the scheduler compares: milli-cpu, bytes, counts.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Resources {
    pub milli_cpu: i64,
    pub memory: i64,
    pub ephemeral_storage: i64,
    /// Extended resources, hugepages and other scalar resources, in whole units.
    pub scalar: BTreeMap<String, i64>,
}

impl Resources {
    /// `framework.NewResource(list)`.
    pub fn from_list(list: &ResourceList) -> Resources {
        let mut r = Resources::default();
        for (name, q) in list {
            match name.as_str() {
                "cpu" => r.milli_cpu = r.milli_cpu.saturating_add(q.milli_value()),
                "memory" => r.memory = r.memory.saturating_add(q.value()),
                "ephemeral-storage" => {
                    r.ephemeral_storage = r.ephemeral_storage.saturating_add(q.value())
                }
                "pods" => {}
                _ => {
                    let entry = r.scalar.entry(name.clone()).or_default();
                    *entry = entry.saturating_add(q.value());
                }
            }
        }
        r
    }

    pub fn add(&mut self, other: &Resources) {
        self.milli_cpu = self.milli_cpu.saturating_add(other.milli_cpu);
        self.memory = self.memory.saturating_add(other.memory);
        self.ephemeral_storage = self
            .ephemeral_storage
            .saturating_add(other.ephemeral_storage);
        for (name, v) in &other.scalar {
            let entry = self.scalar.entry(name.clone()).or_default();
            *entry = entry.saturating_add(*v);
        }
    }

    pub fn subtract(&mut self, other: &Resources) {
        self.milli_cpu = self.milli_cpu.saturating_sub(other.milli_cpu);
        self.memory = self.memory.saturating_sub(other.memory);
        self.ephemeral_storage = self
            .ephemeral_storage
            .saturating_sub(other.ephemeral_storage);
        for (name, v) in &other.scalar {
            let entry = self.scalar.entry(name.clone()).or_default();
            *entry = entry.saturating_sub(*v);
        }
    }

    pub fn is_zero(&self) -> bool {
        self.milli_cpu == 0
            && self.memory == 0
            && self.ephemeral_storage == 0
            && self.scalar.values().all(|v| *v == 0)
    }
}

/// What a node offers: `status.allocatable`, or "unlimited" for a node that has none (a
/// hand-written node; real nodes always report allocatable).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct NodeAllocatable {
    pub resources: Resources,
    pub pods: i64,
    /// `false` when the node has no `status.allocatable` at all: cpu, memory, ephemeral
    /// storage and the pod count are then not limited, and it has no extended resources.
    pub declared: bool,
}

impl NodeAllocatable {
    pub fn of(node: &Node) -> NodeAllocatable {
        let Some(allocatable) = node.status.as_ref().and_then(|s| s.allocatable.as_ref()) else {
            return NodeAllocatable {
                resources: Resources {
                    milli_cpu: i64::MAX,
                    memory: i64::MAX,
                    ephemeral_storage: i64::MAX,
                    scalar: BTreeMap::new(),
                },
                pods: i64::MAX,
                declared: false,
            };
        };
        let list: ResourceList = allocatable
            .iter()
            .filter_map(|(name, q)| Quantity::parse(&q.0).ok().map(|q| (name.clone(), q)))
            .collect();
        NodeAllocatable {
            resources: Resources::from_list(&list),
            pods: list.get("pods").map(Quantity::value).unwrap_or(0),
            declared: true,
        }
    }

    /// Allocatable amount of a scalar resource, 0 when absent.
    pub fn scalar(&self, name: &str) -> i64 {
        self.resources.scalar.get(name).copied().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(yaml: &str) -> Pod {
        let loaded = dra_api::load_str("pod.yaml", yaml);
        assert!(loaded.diagnostics.is_empty(), "{:?}", loaded.diagnostics);
        (*loaded.cluster.pods[0].object).clone()
    }

    fn get(list: &ResourceList, name: &str) -> String {
        list.get(name)
            .map(Quantity::to_canonical_string)
            .unwrap_or_default()
    }

    #[test]
    fn sidecars_and_init_containers_follow_the_kep_formula() {
        // The example of kubernetes/kubernetes#134880: ic1 1, sidecar 1, ic2 2, c1 1 → 3.
        let p = pod(
            "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  initContainers:\n  - {name: ic1, resources: {limits: {example.com/gpu: 1}}}\n  - {name: side, restartPolicy: Always, resources: {limits: {example.com/gpu: 1}}}\n  - {name: ic2, resources: {limits: {example.com/gpu: 2}}}\n  containers:\n  - {name: c1, resources: {limits: {example.com/gpu: 1}}}\n",
        );
        let requests = pod_requests(&p, PodRequestOptions::default());
        assert_eq!(get(&requests, "example.com/gpu"), "3");
    }

    #[test]
    fn init_containers_take_the_maximum_and_overhead_adds() {
        let p = pod(
            "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  overhead: {cpu: 250m}\n  initContainers:\n  - {name: i1, resources: {requests: {cpu: '2', memory: 1G}}}\n  - {name: i2, resources: {requests: {cpu: '2', memory: 3G}}}\n  containers:\n  - {name: c1, resources: {requests: {cpu: '2', memory: 1G}}}\n  - {name: c2, resources: {requests: {cpu: '1', memory: 1G}}}\n",
        );
        let r = Resources::from_list(&pod_requests(&p, PodRequestOptions::default()));
        assert_eq!((r.milli_cpu, r.memory), (3250, 3_000_000_000));
    }

    #[test]
    fn pod_level_requests_replace_the_container_sum() {
        let p = pod(
            "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  resources: {requests: {cpu: '4'}}\n  containers:\n  - {name: c1, resources: {requests: {cpu: '1', memory: 1Gi}}}\n",
        );
        let r = Resources::from_list(&pod_requests(&p, PodRequestOptions::default()));
        assert_eq!((r.milli_cpu, r.memory), (4000, 1 << 30));
    }

    #[test]
    fn scoring_defaults_apply_to_missing_requests_only() {
        let p = pod(
            "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - {name: a, resources: {requests: {cpu: 500m}}}\n  - {name: b}\n",
        );
        let plain = Resources::from_list(&pod_requests(&p, PodRequestOptions::default()));
        assert_eq!((plain.milli_cpu, plain.memory), (500, 0));
        let scoring = Resources::from_list(&pod_requests(
            &p,
            PodRequestOptions {
                non_missing_defaults: true,
            },
        ));
        assert_eq!(
            (scoring.milli_cpu, scoring.memory),
            (600, 2 * DEFAULT_MEMORY_REQUEST)
        );
    }

    /// The scoring view's cpu and memory, computed without a resource list, equal the list's
    /// on pods with every part of the formula: sidecars, init containers, limits standing in
    /// for requests, texts that do not parse, pod-level requests, overhead, and amounts whose
    /// millicores round up only when summed first.
    #[test]
    fn scoring_cpu_and_memory_match_the_resource_list() {
        let pods = [
            "containers: [{name: a}]",
            "containers: [{name: a, resources: {requests: {cpu: 500m}}}, {name: b}]",
            "containers: [{name: a, resources: {limits: {cpu: '2', memory: 1Gi}, requests: {memory: 3M}}}]",
            "containers: [{name: a, resources: {requests: {cpu: 0.5m}}}, {name: b, resources: {requests: {cpu: 0.5m, memory: 1.5}}}]",
            "containers: [{name: a, resources: {requests: {cpu: bad}, limits: {cpu: 300m, example.com/gpu: 1}}}]",
            "initContainers: [{name: i, resources: {requests: {cpu: '3'}}}, {name: s, restartPolicy: Always, resources: {requests: {memory: 1G}}}, {name: j}]\n  containers: [{name: c, resources: {requests: {cpu: '1'}}}]",
            "initContainers: [{name: s, restartPolicy: Always}, {name: i, resources: {requests: {cpu: 50m, memory: 10Mi}}}]\n  containers: [{name: c}]",
            "resources: {requests: {cpu: '4', hugepages-2Mi: 1Gi}}\n  containers: [{name: c, resources: {requests: {memory: 1Gi}}}]",
            "overhead: {cpu: 250m, memory: 120Mi, example.com/x: '1'}\n  containers: [{name: c, resources: {requests: {cpu: 1.1m}}}]",
        ];
        for spec in pods {
            let p = pod(&format!(
                "apiVersion: v1\nkind: Pod\nmetadata: {{name: p}}\nspec:\n  {spec}\n"
            ));
            let list = Resources::from_list(&pod_requests(
                &p,
                PodRequestOptions {
                    non_missing_defaults: true,
                },
            ));
            assert_eq!(
                pod_scoring_requests(&p),
                (list.milli_cpu, list.memory),
                "{spec}"
            );
        }
    }
}
