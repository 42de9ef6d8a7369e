//! The generation pipeline: validate the spec, then produce objects one at a time in
//! output order.
//!
//! Objects are produced in passes (all nodes, then all slices, ...) rather than node by
//! node; because every node draws from its own random stream, a later pass re-derives
//! exactly what an earlier one would have seen. So the YAML can be streamed with
//! constant memory, and collecting into a [`Cluster`] is just one more sink.

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use k8s_openapi::api::resource::v1::{
    DeviceClass, ResourceClaim, ResourceClaimTemplate, ResourceSlice,
};
use k8s_openapi::api::scheduling::v1::PriorityClass;
use serde::{Serialize, Serializer};

use crate::classes::{self, Families};
use crate::fill;
use crate::nodes::{self, PoolPlan};
use crate::objects::{cluster_meta, is_dns_label, is_dns_subdomain, is_extended_resource_name};
use crate::render::DocumentWriter;
use crate::spec::{GenSpec, NodeShape};
use crate::workloads::{self, WorkloadPlan};
use crate::{Cluster, GenError};

/// One generated object, as handed to the sink of [`generate_each`].
#[derive(Debug, Clone)]
pub enum Object {
    Namespace(Box<Namespace>),
    PriorityClass(Box<PriorityClass>),
    DeviceClass(Box<DeviceClass>),
    Node(Box<Node>),
    ResourceSlice(Box<ResourceSlice>),
    ResourceClaim(Box<ResourceClaim>),
    ResourceClaimTemplate(Box<ResourceClaimTemplate>),
    Pod(Box<Pod>),
}

impl Object {
    /// The Kubernetes kind.
    pub fn kind(&self) -> &'static str {
        match self {
            Object::Namespace(_) => "Namespace",
            Object::PriorityClass(_) => "PriorityClass",
            Object::DeviceClass(_) => "DeviceClass",
            Object::Node(_) => "Node",
            Object::ResourceSlice(_) => "ResourceSlice",
            Object::ResourceClaim(_) => "ResourceClaim",
            Object::ResourceClaimTemplate(_) => "ResourceClaimTemplate",
            Object::Pod(_) => "Pod",
        }
    }

    /// `metadata.name` (always set on generated objects).
    pub fn name(&self) -> &str {
        let metadata = match self {
            Object::Namespace(o) => &o.metadata,
            Object::PriorityClass(o) => &o.metadata,
            Object::DeviceClass(o) => &o.metadata,
            Object::Node(o) => &o.metadata,
            Object::ResourceSlice(o) => &o.metadata,
            Object::ResourceClaim(o) => &o.metadata,
            Object::ResourceClaimTemplate(o) => &o.metadata,
            Object::Pod(o) => &o.metadata,
        };
        metadata.name.as_deref().unwrap_or_default()
    }
}

impl Serialize for Object {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Object::Namespace(o) => o.serialize(serializer),
            Object::PriorityClass(o) => o.serialize(serializer),
            Object::DeviceClass(o) => o.serialize(serializer),
            Object::Node(o) => o.serialize(serializer),
            Object::ResourceSlice(o) => o.serialize(serializer),
            Object::ResourceClaim(o) => o.serialize(serializer),
            Object::ResourceClaimTemplate(o) => o.serialize(serializer),
            Object::Pod(o) => o.serialize(serializer),
        }
    }
}

/// Longest node-name prefix: node names are label values (`kubernetes.io/hostname`,
/// at most 63 characters) and get `-<index>`, slice and claim suffixes appended.
const MAX_PREFIX_LEN: usize = 40;
/// Largest device count of a test-driver node accepted (keeps the output sane).
const MAX_TEST_DEVICES: u32 = 10_000;
/// Largest device-plugin GPU count of a legacy node accepted.
const MAX_LEGACY_GPUS: u32 = 1_000;

/// A validated spec with resolved names.
struct Plan<'a> {
    spec: &'a GenSpec,
    pools: Vec<PoolPlan>,
    workloads: Vec<WorkloadPlan>,
    families: Families,
}

fn pool_families(shape: &NodeShape) -> Families {
    let mut f = Families::default();
    match shape {
        NodeShape::Hgx { .. } => {
            f.gpu = true;
            f.nic = true;
        }
        NodeShape::Mig => {
            f.gpu = true;
            f.mig = true;
        }
        NodeShape::TestDriver { .. } => f.test = true,
        NodeShape::Legacy { .. } => {}
    }
    f
}

fn check_pool(plan: &PoolPlan) -> Result<(), GenError> {
    let error = |message: String| GenError::InvalidNodePool {
        pool: plan.prefix.clone(),
        message,
    };
    if !is_dns_label(&plan.prefix) || plan.prefix.len() > MAX_PREFIX_LEN {
        return Err(error(format!(
            "name prefix must be a DNS label of at most {MAX_PREFIX_LEN} characters"
        )));
    }
    if plan.prefix.starts_with("fill-") {
        return Err(error(
            "name prefix must not start with \"fill-\" (reserved for pre-allocated objects)"
                .to_owned(),
        ));
    }
    match plan.shape {
        NodeShape::TestDriver { devices_per_node } if devices_per_node > MAX_TEST_DEVICES => {
            Err(error(format!(
                "devicesPerNode must be at most {MAX_TEST_DEVICES}, got {devices_per_node}"
            )))
        }
        NodeShape::Legacy { gpus_per_node } if gpus_per_node > MAX_LEGACY_GPUS => Err(error(
            format!("gpusPerNode must be at most {MAX_LEGACY_GPUS}, got {gpus_per_node}"),
        )),
        _ => Ok(()),
    }
}

fn plan(spec: &GenSpec) -> Result<Plan<'_>, GenError> {
    if !is_dns_label(&spec.namespace) {
        return Err(GenError::InvalidNamespace {
            namespace: spec.namespace.clone(),
        });
    }
    if let Some(name) = &spec.classes.gpu_extended_resource_name
        && !is_extended_resource_name(name)
    {
        return Err(GenError::InvalidExtendedResourceName { name: name.clone() });
    }
    let mut priority_names = BTreeSet::new();
    for class in &spec.priority_classes {
        let error = |message: String| GenError::InvalidPriorityClass {
            name: class.name.clone(),
            message,
        };
        if !is_dns_subdomain(&class.name) {
            return Err(error("name must be a DNS subdomain".to_owned()));
        }
        // Values above one billion are reserved for the system classes.
        if class.value > 1_000_000_000 {
            return Err(error(format!("value {} exceeds 1000000000", class.value)));
        }
        if !priority_names.insert(class.name.as_str()) {
            return Err(GenError::DuplicateName {
                kind: "PriorityClass",
                name: class.name.clone(),
            });
        }
    }
    if let Some(f) = spec.preallocate {
        fill::check_fill(f)?;
    }

    let pools: Vec<PoolPlan> = spec
        .nodes
        .iter()
        .enumerate()
        .map(|(i, p)| PoolPlan::new(i as u32, p))
        .collect();
    let mut prefixes = BTreeSet::new();
    for pool in &pools {
        check_pool(pool)?;
        if !prefixes.insert(pool.prefix.as_str()) {
            return Err(GenError::InvalidNodePool {
                pool: pool.prefix.clone(),
                message: "two node pools use this name prefix".to_owned(),
            });
        }
    }
    let workloads = workloads::plan_workloads(spec)?;

    let mut families = if spec.classes.all_families {
        Families::all()
    } else {
        Families::default()
    };
    let mut add = |f: Families| {
        families.gpu |= f.gpu;
        families.nic |= f.nic;
        families.mig |= f.mig;
        families.test |= f.test;
    };
    pools.iter().for_each(|p| add(pool_families(&p.shape)));
    workloads
        .iter()
        .for_each(|w| add(workloads::families_of(&w.shape)));
    if spec.classes.gpu_extended_resource_name.is_some() {
        add(Families {
            gpu: true,
            ..Families::default()
        });
    }
    Ok(Plan {
        spec,
        pools,
        workloads,
        families,
    })
}

/// Fails on the second object of a kind with a name already seen. Names of nodes and
/// workloads are checked up front; this catches the rest (for example a slice or fill
/// claim whose derived name meets another pool's).
#[derive(Default)]
struct UniqueNames {
    seen: BTreeSet<(&'static str, String)>,
}

impl UniqueNames {
    fn check(&mut self, object: &Object) -> Result<(), GenError> {
        // Templates, classes and namespaces come from validated spec names only.
        let kind = object.kind();
        if matches!(kind, "Node" | "ResourceSlice" | "ResourceClaim" | "Pod")
            && !self.seen.insert((kind, object.name().to_owned()))
        {
            return Err(GenError::DuplicateName {
                kind,
                name: object.name().to_owned(),
            });
        }
        Ok(())
    }
}

/// Generates every object of `spec` in output order (namespaces, priority classes,
/// device classes, nodes, slices, claims, templates, pods) and hands each to `sink`.
/// Memory use does not grow with the cluster beyond a set of object names.
pub fn generate_each(
    spec: &GenSpec,
    mut sink: impl FnMut(Object) -> Result<(), GenError>,
) -> Result<(), GenError> {
    let plan = plan(spec)?;
    let mut names = UniqueNames::default();
    let mut emit = |object: Object| -> Result<(), GenError> {
        names.check(&object)?;
        sink(object)
    };

    emit(Object::Namespace(Box::new(Namespace {
        metadata: cluster_meta(spec.namespace.clone()),
        ..Namespace::default()
    })))?;
    for p in &spec.priority_classes {
        emit(Object::PriorityClass(Box::new(PriorityClass {
            metadata: cluster_meta(p.name.clone()),
            value: Some(p.value),
            ..PriorityClass::default()
        })))?;
    }
    for class in classes::device_classes(plan.families, &spec.classes) {
        emit(Object::DeviceClass(Box::new(class)))?;
    }
    for pool in &plan.pools {
        for i in 0..pool.count {
            emit(Object::Node(Box::new(nodes::pool_node(pool, i))))?;
        }
    }
    for pool in &plan.pools {
        for i in 0..pool.count {
            for slice in nodes::pool_slices(pool, i, spec.seed) {
                emit(Object::ResourceSlice(Box::new(slice)))?;
            }
        }
    }
    // The fill is produced twice (claims now, pods after the templates); both passes
    // derive the same items from the same random streams.
    for_each_fill_item(&plan, |item| match item.claim {
        Some(claim) => emit(Object::ResourceClaim(Box::new(claim))),
        None => Ok(()),
    })?;
    for w in &plan.workloads {
        if let Some(template) = workloads::claim_template(w, &spec.namespace) {
            emit(Object::ResourceClaimTemplate(Box::new(template)))?;
        }
    }
    for_each_fill_item(&plan, |item| emit(Object::Pod(Box::new(item.pod))))?;
    for (w, i) in workloads::pod_sequence(&plan.workloads, spec.pod_order, spec.seed) {
        emit(Object::Pod(Box::new(workloads::pod(
            &plan.workloads[w],
            i,
            spec,
        ))))?;
    }
    Ok(())
}

fn for_each_fill_item(
    plan: &Plan<'_>,
    mut f: impl FnMut(fill::FillItem) -> Result<(), GenError>,
) -> Result<(), GenError> {
    let Some(fraction) = plan.spec.preallocate else {
        return Ok(());
    };
    for pool in &plan.pools {
        let per_node = fill::units_per_node(&pool.shape);
        for (i, taken) in fill::units_taken(fraction, pool.count, per_node).enumerate() {
            for item in fill::node_fill(pool, i as u32, taken, plan.spec.seed, &plan.spec.namespace)
            {
                f(item)?;
            }
        }
    }
    Ok(())
}

/// Builds every object `spec` describes. Pure and deterministic: the same spec always
/// gives an equal cluster.
pub fn generate(spec: &GenSpec) -> Result<Cluster, GenError> {
    let mut cluster = Cluster::default();
    generate_each(spec, |object| {
        match object {
            Object::Namespace(o) => cluster.namespaces.push(*o),
            Object::PriorityClass(o) => cluster.priority_classes.push(*o),
            Object::DeviceClass(o) => cluster.device_classes.push(*o),
            Object::Node(o) => cluster.nodes.push(*o),
            Object::ResourceSlice(o) => cluster.resource_slices.push(*o),
            Object::ResourceClaim(o) => cluster.resource_claims.push(*o),
            Object::ResourceClaimTemplate(o) => cluster.resource_claim_templates.push(*o),
            Object::Pod(o) => cluster.pods.push(*o),
        }
        Ok(())
    })?;
    Ok(cluster)
}

/// Generates `spec` as a stream of JSON objects, one per line (what `kubectl get -o json`
/// items look like, and much faster to read back than YAML), on `writer`.
pub fn generate_json_lines<W: std::io::Write>(
    spec: &GenSpec,
    mut writer: W,
) -> Result<(), GenError> {
    generate_each(spec, |object| {
        serde_json::to_writer(&mut writer, &object).map_err(|e| {
            GenError::Io(match e.io_error_kind() {
                Some(kind) => std::io::Error::from(kind),
                None => std::io::Error::other(e),
            })
        })?;
        writer.write_all(b"\n")?;
        Ok(())
    })?;
    writer.flush()?;
    Ok(())
}

/// Generates `spec` straight into YAML on `writer`, without holding the cluster in
/// memory; the bytes equal [`Cluster::to_yaml`] of [`generate`].
pub fn generate_yaml<W: std::io::Write>(spec: &GenSpec, mut writer: W) -> Result<(), GenError> {
    let mut out = DocumentWriter::new(|chunk: &str| Ok(writer.write_all(chunk.as_bytes())?));
    generate_each(spec, |object| out.push(&object))?;
    out.finish()?;
    writer.flush()?;
    Ok(())
}
