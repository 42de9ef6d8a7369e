//! The generator's input: what cluster and which workloads to build.
//!
//! Everything is plain data with serde support, so a spec can be written by hand in YAML
//! (`GenSpec::from_yaml_str`), taken from a [`crate::preset`], or built in code.

use serde::{Deserialize, Serialize};

use crate::GenError;

/// A whole generated scenario: node pools, device classes, priorities, workloads and an
/// optional pre-allocated fill level.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GenSpec {
    /// Seed of every random choice (UUIDs, which devices the fill takes, shuffled pod
    /// order). Same seed and spec, byte-identical output.
    #[serde(default)]
    pub seed: u64,
    /// Namespace of all claims, templates and pods (emitted as a Namespace object).
    #[serde(default = "default_namespace")]
    pub namespace: String,
    /// Node pools, generated in this order.
    #[serde(default)]
    pub nodes: Vec<NodePoolSpec>,
    /// Optional device-class features.
    #[serde(default)]
    pub classes: ClassOptions,
    /// PriorityClass objects that workloads may reference.
    #[serde(default)]
    pub priority_classes: Vec<PriorityClassSpec>,
    /// Pending pods to create.
    #[serde(default)]
    pub workloads: Vec<WorkloadSpec>,
    /// How the pods of different workloads follow each other in the output.
    #[serde(default)]
    pub pod_order: PodOrder,
    /// Devices already allocated to bound pods before the workloads arrive.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preallocate: Option<Fill>,
}

fn default_namespace() -> String {
    "dra-gen".to_owned()
}

impl Default for GenSpec {
    fn default() -> GenSpec {
        GenSpec {
            seed: 0,
            namespace: default_namespace(),
            nodes: Vec::new(),
            classes: ClassOptions::default(),
            priority_classes: Vec::new(),
            workloads: Vec::new(),
            pod_order: PodOrder::default(),
            preallocate: None,
        }
    }
}

impl GenSpec {
    /// Reads a spec from YAML (the serde form of these types, camelCase field names).
    pub fn from_yaml_str(yaml: &str) -> Result<GenSpec, GenError> {
        serde_saphyr::from_str(yaml).map_err(|err| GenError::SpecYaml {
            message: err.to_string(),
        })
    }

    /// Renders the spec as YAML (handy for `dra gen --print-spec`-style tooling).
    pub fn to_yaml_string(&self) -> Result<String, GenError> {
        Ok(serde_saphyr::to_string(self)?)
    }
}

/// `count` nodes of one shape.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NodePoolSpec {
    pub shape: NodeShape,
    pub count: u32,
    /// Node names are `<prefix>-<index>` with the index zero-padded to at least four
    /// digits (so names sort in generation order). Defaults per shape, e.g. `hgx-h100`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name_prefix: Option<String>,
}

/// The hardware shape of the nodes of a pool; see the crate documentation for details.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase", deny_unknown_fields)]
pub enum NodeShape {
    /// HGX-class node: 8 GPUs (driver `gpu.example.com`) on two NUMA nodes and four PCIe
    /// roots, one shared NIC per root (driver `nic.example.com`).
    Hgx { variant: GpuVariant },
    /// 8 MIG-capable A100 80GB GPUs published as partitionable devices with counters.
    Mig,
    /// upstream scheduler_perf's test-driver node: `devices_per_node` identical devices.
    #[serde(rename_all = "camelCase")]
    TestDriver { devices_per_node: u32 },
    /// A node with a classic device plugin: `example.com/gpu` in `status.allocatable`,
    /// no ResourceSlices.
    #[serde(rename_all = "camelCase")]
    Legacy { gpus_per_node: u32 },
}

/// GPU generation of an HGX node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GpuVariant {
    H100,
    H200,
    B200,
}

/// Optional features of the generated DeviceClasses.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClassOptions {
    /// `spec.extendedResourceName` of the `gpu.example.com` class (e.g.
    /// `example.com/gpu`), so pods asking for that extended resource get DRA GPUs on
    /// nodes without a device plugin (KEP-5004).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_extended_resource_name: Option<String>,
    /// Extra classes `test-class-<i>` (selecting test-driver devices) with extended
    /// resource `example.com/gpu-<i>`: upstream's "many classes with extended resources"
    /// benchmark shape.
    #[serde(default)]
    pub extended_resource_classes: u32,
    /// Always emit every class family (GPU, NIC, MIG, test driver), even those no node
    /// pool or workload needs.
    #[serde(default)]
    pub all_families: bool,
}

/// A PriorityClass to create.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PriorityClassSpec {
    pub name: String,
    pub value: i32,
}

/// `count` pending pods of one shape, all using one ResourceClaimTemplate (or extended
/// resources, for the legacy shapes).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WorkloadSpec {
    pub shape: WorkloadShape,
    pub count: u32,
    /// Name of the workload: prefix of its pods and name of its claim template.
    /// Defaults to a name derived from the shape (e.g. `gpus-2`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Name of one of [`GenSpec::priority_classes`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority_class: Option<String>,
}

impl WorkloadSpec {
    /// A workload without name or priority override.
    pub fn new(shape: WorkloadShape, count: u32) -> WorkloadSpec {
        WorkloadSpec {
            shape,
            count,
            name: None,
            priority_class: None,
        }
    }

    /// The same workload at the given priority class.
    pub fn with_priority(mut self, class: &str) -> WorkloadSpec {
        self.priority_class = Some(class.to_owned());
        self
    }

    /// The same workload under an explicit name.
    pub fn named(mut self, name: &str) -> WorkloadSpec {
        self.name = Some(name.to_owned());
        self
    }
}

/// What one pod of a workload asks for; see the crate documentation for the exact claims.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase", deny_unknown_fields)]
pub enum WorkloadShape {
    /// `count` GPUs of class `gpu.example.com`, optionally narrowed by a selector.
    Gpus {
        count: u32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        selector: Option<GpuSelector>,
    },
    /// `gpus` GPUs and one NIC behind the same PCIe root
    /// (`matchAttribute: resource.kubernetes.io/pcieRoot`).
    #[serde(rename_all = "camelCase")]
    GpuNic {
        gpus: u32,
        /// Bandwidth the NIC request consumes (`capacity.requests.bandwidth`); the NIC's
        /// default share (10G) when absent.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        nic_bandwidth: Option<String>,
    },
    /// `gpus` GPUs (and optionally one NIC) on one NUMA node
    /// (`matchAttribute: resource.kubernetes.io/numaNode`).
    NumaAligned {
        gpus: u32,
        #[serde(default)]
        nic: bool,
    },
    /// One MIG device of the given profile (selector on the `profile` attribute).
    Mig { profile: MigProfile },
    /// `firstAvailable` over GPU counts, e.g. `[8, 4, 2]`: eight GPUs, else four, else two.
    FirstAvailable { counts: Vec<u32> },
    /// A classic extended-resource pod: `resources.limits: {<resource>: <quantity>}`, no
    /// claims. Served by device plugins or by a class with `extendedResourceName`.
    ExtendedResource {
        #[serde(default = "default_extended_resource")]
        resource: String,
        quantity: u32,
    },
    /// Pod `i` asks for one `example.com/gpu-<i mod N>` where N is
    /// [`ClassOptions::extended_resource_classes`] (upstream's 2,500-class shape).
    ExtendedResourceClasses,
    /// upstream scheduler_perf's pod: a template with `requests` requests `req-<i>` of
    /// class `test-class`, one device each.
    TestDriver {
        #[serde(default = "one")]
        requests: u32,
    },
    /// One NIC share of the given bandwidth (consumable capacity).
    NicShare { bandwidth: String },
    /// Adversarial: `requests` single-device requests of `test-class` where the first and
    /// the last must match on `dra.example.com/numa`, which every test-driver device has
    /// with a distinct value. No solution exists, and a depth-first search without
    /// pruning visits every ordered choice of devices for the requests in between
    /// (13·12·…·7 ≈ 8.6 million partial allocations for 8 requests on 13 devices).
    AdversarialMatchAttribute {
        #[serde(default = "eight")]
        requests: u32,
    },
    /// Adversarial: `requests` requests, each `firstAvailable` over test-class device
    /// counts (`counts`, e.g. `[8, 6, 4, 2]`); with five requests the first combination
    /// that fits the 32-results-per-claim limit is 8+8+8+6+2 = 32.
    FirstAvailableNearLimit { requests: u32, counts: Vec<u32> },
}

fn default_extended_resource() -> String {
    crate::well_known::LEGACY_GPU_RESOURCE.to_owned()
}
fn one() -> u32 {
    1
}
fn eight() -> u32 {
    8
}

/// Narrows a GPU request with a CEL selector.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub enum GpuSelector {
    /// `device.attributes['gpu.example.com'].productName == '<name>'`.
    ProductName(String),
    /// `device.capacity['gpu.example.com'].memory.compareTo(quantity('<q>')) >= 0`.
    MinMemory(String),
    /// A CEL expression used verbatim.
    Cel(String),
}

/// A MIG profile of the A100 80GB (the `profile` attribute value).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum MigProfile {
    #[serde(rename = "1g.10gb")]
    G1Gb10,
    #[serde(rename = "2g.20gb")]
    G2Gb20,
    #[serde(rename = "3g.40gb")]
    G3Gb40,
    #[serde(rename = "4g.40gb")]
    G4Gb40,
    #[serde(rename = "7g.80gb")]
    G7Gb80,
}

/// Order of the pending pods in the output (and so in a simulator's queue).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum PodOrder {
    /// Workloads mixed in proportion to their counts (smooth weighted round robin), so
    /// any prefix of the pod list has about the same mix as the whole.
    #[default]
    Interleaved,
    /// All pods of the first workload, then the second, ...
    Sequential,
    /// A seeded random permutation.
    Shuffled,
}

/// Pre-allocated state: in every node pool, about `fraction` of the allocatable units
/// (GPUs, MIG 1g slices, test devices, device-plugin GPUs) are already in use by bound
/// pods with allocated claims.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Fill {
    /// 0.0 to 1.0; the number of used units per pool is `round(fraction × units)`.
    pub fraction: f64,
}
