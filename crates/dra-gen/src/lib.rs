//! Deterministic generators of whole DRA clusters and workloads, as typed
//! k8s-openapi objects and as multi-document YAML.
//!
//! `dra gen`, the benchmark suite and tests use this crate to build realistic inputs at
//! any size from 10 to 10,000 nodes: HGX GPU nodes with NUMA and PCIe topology, NICs
//! with consumable bandwidth, MIG-style partitionable GPUs, upstream scheduler_perf's
//! test-driver nodes and classic device-plugin nodes, plus the pods that ask for them.
//!
//! # Principal types
//!
//! * [`GenSpec`]: the input, plain serde data: node pools ([`NodePoolSpec`] with a
//!   [`NodeShape`]), class options, priority classes, workloads ([`WorkloadSpec`] with a
//!   [`WorkloadShape`]), the pod order and an optional pre-allocated [`Fill`].
//! * [`generate`] turns a spec into a [`Cluster`]: `Vec`s of `Namespace`,
//!   `PriorityClass`, `DeviceClass`, `Node`, `ResourceSlice`, `ResourceClaim`,
//!   `ResourceClaimTemplate` and `Pod`.
//! * [`Cluster::to_yaml`] / [`Cluster::write_yaml`] render it, in exactly that order
//!   (namespaces, priority classes, device classes, nodes, slices, claims, templates,
//!   pods), one document per object, fields in k8s-openapi's fixed order and map keys
//!   sorted.
//! * [`generate_yaml`] streams the same bytes straight from a spec, and
//!   [`generate_each`] hands each [`Object`] to a callback, so big clusters never have to
//!   be held in memory (see Scale below).
//! * [`preset`] / [`PRESETS`]: named specs the benchmark suite uses (table below).
//!
//! # Key design decision: determinism by addressed random streams
//!
//! All randomness comes from a tiny in-crate SplitMix64 generator, and every entity
//! draws from its own stream addressed by `(seed, purpose, pool, node)`. The same spec
//! and seed therefore give byte-identical YAML on every machine; a different seed
//! changes UUIDs, which GPUs the fill takes and the shuffled pod order; and adding a
//! workload or growing one pool never changes the devices of another. Nothing iterates
//! a hash map.
//!
//! # Node shapes
//!
//! Every node is `Ready`, labelled with `kubernetes.io/hostname`,
//! `topology.kubernetes.io/zone` (`zone-a`/`-b`/`-c` round robin),
//! `node.kubernetes.io/instance-type`, os and arch, and has `cpu`, `memory` and `pods`
//! in `status.capacity` and `status.allocatable`. Names are `<prefix>-<index>`, the index
//! zero-padded to at least four digits. Every driver pool is named after its node, has
//! generation 1 and the correct `resourceSliceCount`; every slice sets `nodeName` only.
//!
//! * **HGX** (`hgx-h100`, `hgx-h200`, `hgx-b200`): 224 CPUs, 2Ti memory.
//!   * Slice `<node>-gpu` (driver `gpu.example.com`): devices `gpu-0`…`gpu-7` with
//!     attributes `type` = "gpu", `uuid` (`GPU-<uuid>`, from the seed), `index`, `minor`,
//!     `productName` ("NVIDIA H100 80GB HBM3", "NVIDIA H200", "NVIDIA B200"), `brand`,
//!     `architecture` ("Hopper"/"Blackwell"), versions `cudaComputeCapability` (9.0.0 /
//!     10.0.0), `driverVersion` and `cudaDriverVersion`, and the standard
//!     `resource.kubernetes.io/pciBusID`, `resource.kubernetes.io/pcieRoot` and
//!     `resource.kubernetes.io/numaNode`; capacity `memory` 80Gi / 141Gi / 180Gi.
//!   * Topology: NUMA node 0 holds GPUs 0–3, NUMA node 1 GPUs 4–7; four PCIe roots
//!     (`pci0000:15`, `pci0000:37`, `pci0000:97`, `pci0000:b7`) with two GPUs each.
//!   * Slice `<node>-nic` (driver `nic.example.com`): `nic-0`…`nic-3`, one per PCIe
//!     root, with `type`, `index`, `model`, `linkType`, `rdma`, version
//!     `firmwareVersion`, the three standard attributes, `allowMultipleAllocations: true`
//!     and consumable capacity `bandwidth` 400G (request policy: default 10G, valid range
//!     from 1G in steps of 1G).
//! * **MIG** (`mig-a100`): eight A100 80GB GPUs with the same topology attributes.
//!   * Slice `<node>-gpu-counters` holds only `sharedCounters`: one counter set
//!     `gpu-<g>-counters` per GPU with `multiprocessors` (98), `memory` (80Gi) and
//!     `memory-slice-0`…`memory-slice-7` (1 each).
//!   * Slices `<node>-gpu-0` and `<node>-gpu-1` hold four GPUs each (60 devices, under the
//!     64-device limit for counter-consuming slices): per GPU the whole-GPU device
//!     `gpu-<g>` (`type` "gpu", consuming the whole counter set) and one device per
//!     MIG placement, `gpu-<g>-mig-<profile>-<start>` (`type` "mig", `profile`,
//!     `parentUUID`, `placementStart`, `placementSize`): 1g.10gb ×7, 2g.20gb ×3,
//!     3g.40gb ×2, 4g.40gb ×1, 7g.80gb ×1, each consuming its multiprocessors, memory
//!     and the memory slices of its placement.
//! * **Test driver** (`scheduler-perf-dra`): upstream scheduler_perf's node (4 CPUs,
//!   32Gi) and slice, named after the node, of driver `test-driver.cdi.k8s.io` with
//!   devices `instance-<i>`: `model` "A100", `family` "GPU", version `driverVersion`
//!   1.2.3, `dra.example.com/numa` = i, capacity `memory` 1Gi. More than 128 devices
//!   are split over several slices.
//! * **Legacy** (`legacy-gpu`): a device-plugin node, `example.com/gpu` in
//!   `status.allocatable`, no slices.
//!
//! # Device classes
//!
//! Emitted for the families the node pools and workloads need (or all, with
//! [`ClassOptions::all_families`]): `gpu.example.com` (driver and `type == 'gpu'`,
//! optional `extendedResourceName`), `nic.example.com`, `mig.gpu.example.com`
//! (`type == 'mig'`) and one class per profile (`mig-1g.10gb.gpu.example.com`, …),
//! `test-class` (upstream's), and [`ClassOptions::extended_resource_classes`] extra
//! classes `test-class-<i>` with `extendedResourceName: example.com/gpu-<i>`.
//!
//! # Workloads
//!
//! Each [`WorkloadSpec`] yields one ResourceClaimTemplate named after the workload and
//! `count` pods `<workload>-<index>` (with seeded UIDs and an `app: <workload>` label)
//! whose pod-level claim `resource` uses it (the
//! extended-resource shapes use `resources.limits` instead). See [`WorkloadShape`] for
//! the claims: 1/2/4/8 GPUs with optional CEL selectors, GPUs plus a NIC on one PCIe
//! root, NUMA-aligned GPUs, MIG profiles, firstAvailable fallbacks, legacy extended
//! resources, upstream's test-driver template, NIC bandwidth shares, and two adversarial
//! claims for backtracking. Pods referencing a [`PriorityClassSpec`] get both
//! `priorityClassName` and `priority`. Pods of different workloads are interleaved in
//! proportion to their counts unless [`PodOrder`] says otherwise.
//!
//! # Pre-allocated state
//!
//! With [`Fill`], every pool has `round(fraction × units)` units in use, spread evenly
//! over its nodes: HGX GPUs (a seeded random subset per node, one claim per node),
//! MIG 1g.10gb instances (one claim per GPU), test-driver devices (one single-device
//! claim each, as upstream's steady-state benchmarks) and device-plugin GPUs (a bound
//! pod with `example.com/gpu` limits). Each claim is named `fill-…`, carries the
//! `resource.kubernetes.io/delete-protection` finalizer and a `status.allocation` naming
//! real devices with a node selector for its node, and is reserved for a bound, running
//! pod of the same name (`spec.nodeName` set).
//!
//! # Presets
//!
//! `size` counts nodes (per node shape for `mixed`). The seed is 0 unless set.
//!
//! | preset | cluster | pods |
//! |---|---|---|
//! | `hgx` | HGX H100 | 8 per node, one GPU each (fills every GPU) |
//! | `gpu-selector` | HGX H100 | 4 per node, 2 GPUs by a CEL selector on `productName` |
//! | `gpu-nic` | HGX H100 | 4 per node, 2 GPUs + a NIC on one PCIe root |
//! | `hgx-mixed` | H100/H200/B200 in thirds | 1/2/4/8 GPUs, GPU+NIC (100G), NUMA-aligned 4 GPUs + NIC, firstAvailable 8/4/2, ≥141Gi selector; two priorities; ≈5.5 GPUs asked per node |
//! | `hgx-half`, `hgx-full` | `hgx-mixed` with 50% / 90% of GPUs pre-allocated | as `hgx-mixed` |
//! | `partitionable` | MIG A100 | 16 × 1g.10gb, 8 × 2g.20gb, 4 × 3g.40gb and 1 whole GPU per node |
//! | `consumable-capacity` | HGX H100 | 32 per node, a 50G share of a 400G NIC each (fills every NIC) |
//! | `scheduler-perf` | test driver, 10 devices | 10 per node, upstream's SchedulingWithResourceClaimTemplate |
//! | `steady-state-empty`, `steady-state-half`, `steady-state-full` | test driver, 10 devices, 0% / 50% / all but 10 devices allocated | 10 |
//! | `extended-resource` | test driver, 10 devices; 5 classes per node with `example.com/gpu-<i>` | 10 per node, pod `i` asks for `example.com/gpu-<i mod classes>` |
//! | `legacy-mixed` | half device-plugin, half HGX H100 (GPU class serves `example.com/gpu`) | 4 legacy + 2 DRA single-GPU per node |
//! | `adversarial-match` | test driver, 13 devices | 1: eight requests, first and last must match an attribute no two devices share |
//! | `adversarial-first-available` | test driver, 24 devices | 1: five firstAvailable requests over 8/6/4/2 devices |
//! | `mixed` | every node shape | every non-adversarial workload shape, priorities, 30% pre-allocated |
//!
//! # Scale
//!
//! `hgx` at 10,000 nodes (80,000 GPUs, 40,000 NICs, 80,000 pods; 110,004 objects)
//! streams 120 MB of YAML through [`generate_yaml`] in about 1.3 s of CPU time with a
//! 17 MiB peak (release build, 2-core development machine; 1.2 s wall when idle).
//! [`generate`] followed by [`Cluster::write_yaml`] gives the same bytes but holds
//! about 1.4 GiB of typed objects, and takes 5–9 s there, mostly in page faults.
//!
//! # Example
//!
//! ```
//! let mut spec = dra_gen::preset("gpu-nic", 2)?;
//! spec.seed = 42;
//! let cluster = dra_gen::generate(&spec)?;
//! assert_eq!(cluster.nodes.len(), 2);
//! assert_eq!(cluster.pods.len(), 8);
//! let yaml = cluster.to_yaml()?;
//! assert!(yaml.starts_with("apiVersion: v1\nkind: Namespace\n"));
//! # Ok::<(), dra_gen::GenError>(())
//! ```

mod classes;
mod fill;
mod generate;
mod nodes;
mod objects;
mod presets;
mod render;
mod rng;
mod spec;
pub mod well_known;
mod workloads;

use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use k8s_openapi::api::resource::v1::{
    DeviceClass, ResourceClaim, ResourceClaimTemplate, ResourceSlice,
};
use k8s_openapi::api::scheduling::v1::PriorityClass;

pub use classes::mig_profile_class;
pub use generate::{Object, generate, generate_each, generate_json_lines, generate_yaml};
pub use presets::{PRESETS, PresetInfo, preset, presets};
pub use render::header_comment;
pub use spec::{
    ClassOptions, Fill, GenSpec, GpuSelector, GpuVariant, MigProfile, NodePoolSpec, NodeShape,
    PodOrder, PriorityClassSpec, WorkloadShape, WorkloadSpec,
};

/// Why a spec could not be generated or rendered.
#[derive(Debug, thiserror::Error)]
pub enum GenError {
    /// A node pool's prefix or shape parameters are unusable.
    #[error("node pool {pool}: {message}")]
    InvalidNodePool { pool: String, message: String },
    /// A workload's parameters break an API limit or are malformed.
    #[error("workload {workload}: {message}")]
    InvalidWorkload { workload: String, message: String },
    /// A workload names a priority class the spec does not define.
    #[error("workload {workload}: unknown priority class {class:?}")]
    UnknownPriorityClass { workload: String, class: String },
    /// A priority class is malformed.
    #[error("priority class {name:?}: {message}")]
    InvalidPriorityClass { name: String, message: String },
    /// The namespace is not a DNS label.
    #[error("namespace {namespace:?} is not a DNS label")]
    InvalidNamespace { namespace: String },
    /// An extended resource name in the class options is malformed.
    #[error(
        "classes.gpuExtendedResourceName {name:?} is not an extended resource name (<domain>/<name>)"
    )]
    InvalidExtendedResourceName { name: String },
    /// The fill fraction is outside 0..=1.
    #[error("preallocate.fraction must be between 0 and 1, got {fraction}")]
    InvalidFill { fraction: f64 },
    /// Two generated objects of one kind would have the same name.
    #[error("two {kind} objects would be named {name:?}")]
    DuplicateName { kind: &'static str, name: String },
    /// [`preset`] was asked for a name it does not know.
    #[error("unknown preset {name:?} (known: {known})")]
    UnknownPreset { name: String, known: String },
    /// A YAML spec could not be read.
    #[error("invalid generator spec: {message}")]
    SpecYaml { message: String },
    /// Serializing an object failed.
    #[error("rendering yaml: {0}")]
    Yaml(#[from] serde_saphyr::SerializeError),
    /// Writing the output failed.
    #[error("writing yaml: {0}")]
    Io(#[from] std::io::Error),
}

/// A generated cluster: every object, grouped by kind, in output order.
#[derive(Debug, Clone, Default)]
pub struct Cluster {
    pub namespaces: Vec<Namespace>,
    pub priority_classes: Vec<PriorityClass>,
    pub device_classes: Vec<DeviceClass>,
    pub nodes: Vec<Node>,
    pub resource_slices: Vec<ResourceSlice>,
    /// Pre-allocated claims (the pending pods use templates).
    pub resource_claims: Vec<ResourceClaim>,
    pub resource_claim_templates: Vec<ResourceClaimTemplate>,
    /// Bound fill pods first, then the pending pods in [`GenSpec::pod_order`].
    pub pods: Vec<Pod>,
}

impl Cluster {
    /// Number of objects of all kinds.
    pub fn object_count(&self) -> usize {
        self.namespaces.len()
            + self.priority_classes.len()
            + self.device_classes.len()
            + self.nodes.len()
            + self.resource_slices.len()
            + self.resource_claims.len()
            + self.resource_claim_templates.len()
            + self.pods.len()
    }

    /// Number of devices over all slices.
    pub fn device_count(&self) -> usize {
        self.resource_slices
            .iter()
            .map(|s| s.spec.devices.as_ref().map_or(0, Vec::len))
            .sum()
    }

    /// The whole cluster as one multi-document YAML string.
    pub fn to_yaml(&self) -> Result<String, GenError> {
        let mut out = String::new();
        render::render(self, |chunk| {
            out.push_str(chunk);
            Ok(())
        })?;
        Ok(out)
    }

    /// Streams the YAML of [`Cluster::to_yaml`] to `writer` in chunks of about 64 KiB.
    pub fn write_yaml<W: std::io::Write>(&self, mut writer: W) -> Result<(), GenError> {
        render::render(self, |chunk| Ok(writer.write_all(chunk.as_bytes())?))?;
        writer.flush()?;
        Ok(())
    }
}
