//! Pending pods and the ResourceClaimTemplates they use.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{
    Container, Pod, PodResourceClaim, PodSpec, ResourceClaim as ContainerClaim,
    ResourceRequirements,
};
use k8s_openapi::api::resource::v1::{
    CapacityRequirements, DeviceClaim, DeviceConstraint, DeviceRequest, DeviceSubRequest,
    ExactDeviceRequest, ResourceClaimSpec, ResourceClaimTemplate, ResourceClaimTemplateSpec,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::GenError;
use crate::classes::{Families, extended_resource_name};
use crate::objects::{
    cel, cel_string, index_width, indexed_name, is_dns_label, namespaced_meta, quantity,
};
use crate::rng::Rng;
use crate::spec::{GenSpec, GpuSelector, PodOrder, WorkloadShape};
use crate::well_known::{
    GPU_CLASS, GPU_DRIVER, MIG_CLASS, NIC_CLASS, NUMA_NODE_ATTRIBUTE, PCIE_ROOT_ATTRIBUTE,
    TEST_CLASS, TEST_NUMA_ATTRIBUTE,
};

/// API limits the shapes are checked against.
const MAX_REQUESTS: u32 = 32;
const MAX_RESULTS: u32 = 32;
const MAX_SUBREQUESTS: usize = 8;

/// Image of every generated container (upstream scheduler_perf uses pause, too).
pub(crate) const POD_IMAGE: &str = "registry.k8s.io/pause:3.10";
/// Random stream for the shuffled pod order.
const STREAM_POD_ORDER: u64 = 2;
/// Random streams for pod UIDs: `[STREAM_POD_UID, workload, pod]`.
const STREAM_POD_UID: u64 = 4;

/// One workload with its resolved name and priority.
#[derive(Debug, Clone)]
pub(crate) struct WorkloadPlan {
    /// Position in [`GenSpec::workloads`]: addresses the workload's random streams.
    pub index: u32,
    pub name: String,
    pub shape: WorkloadShape,
    pub count: u32,
    pub priority: Option<(String, i32)>,
    width: usize,
}

impl WorkloadPlan {
    pub fn pod_name(&self, i: u32) -> String {
        indexed_name(&self.name, i, self.width)
    }
}

fn derived_name(shape: &WorkloadShape) -> String {
    match shape {
        WorkloadShape::Gpus { count, selector } => match selector {
            None => format!("gpus-{count}"),
            Some(_) => format!("gpus-{count}-selected"),
        },
        WorkloadShape::GpuNic { gpus, .. } => format!("gpu-nic-{gpus}"),
        WorkloadShape::NumaAligned { gpus, nic: false } => format!("numa-{gpus}"),
        WorkloadShape::NumaAligned { gpus, nic: true } => format!("numa-{gpus}-nic"),
        WorkloadShape::Mig { profile } => format!("mig-{}", profile.token()),
        WorkloadShape::FirstAvailable { counts } => {
            let counts: Vec<String> = counts.iter().map(u32::to_string).collect();
            format!("fallback-{}", counts.join("-"))
        }
        WorkloadShape::ExtendedResource { quantity, .. } => format!("legacy-{quantity}"),
        WorkloadShape::ExtendedResourceClasses => "extended-classes".to_owned(),
        // upstream's pods are generateName "test-dra".
        WorkloadShape::TestDriver { requests: 1 } => "test-dra".to_owned(),
        WorkloadShape::TestDriver { requests } => format!("test-dra-{requests}"),
        WorkloadShape::NicShare { .. } => "nic-share".to_owned(),
        WorkloadShape::AdversarialMatchAttribute { requests } => {
            format!("adversarial-match-{requests}")
        }
        WorkloadShape::FirstAvailableNearLimit { .. } => "adversarial-first-available".to_owned(),
    }
}

fn invalid(workload: &str, message: impl Into<String>) -> GenError {
    GenError::InvalidWorkload {
        workload: workload.to_owned(),
        message: message.into(),
    }
}

fn check_quantity(workload: &str, field: &str, value: &str) -> Result<(), GenError> {
    dra_types::Quantity::parse(value)
        .map(|_| ())
        .map_err(|err| {
            invalid(
                workload,
                format!("{field}: invalid quantity {value:?}: {err}"),
            )
        })
}

fn check_range(
    workload: &str,
    field: &str,
    value: u32,
    min: u32,
    max: u32,
) -> Result<(), GenError> {
    if (min..=max).contains(&value) {
        Ok(())
    } else {
        Err(invalid(
            workload,
            format!("{field} must be between {min} and {max}, got {value}"),
        ))
    }
}

fn check_counts(workload: &str, counts: &[u32]) -> Result<(), GenError> {
    if counts.is_empty() || counts.len() > MAX_SUBREQUESTS {
        return Err(invalid(
            workload,
            format!(
                "counts must have 1 to {MAX_SUBREQUESTS} entries, got {}",
                counts.len()
            ),
        ));
    }
    for &c in counts {
        check_range(workload, "counts[]", c, 1, MAX_RESULTS)?;
    }
    Ok(())
}

fn check_shape(name: &str, shape: &WorkloadShape, spec: &GenSpec) -> Result<(), GenError> {
    match shape {
        WorkloadShape::Gpus { count, selector } => {
            check_range(name, "count", *count, 1, MAX_RESULTS)?;
            match selector {
                Some(GpuSelector::MinMemory(q)) => check_quantity(name, "selector.minMemory", q)?,
                Some(GpuSelector::Cel(expr)) if expr.trim().is_empty() => {
                    return Err(invalid(name, "selector.cel must not be empty"));
                }
                _ => {}
            }
        }
        WorkloadShape::GpuNic {
            gpus,
            nic_bandwidth,
        } => {
            check_range(name, "gpus", *gpus, 1, MAX_RESULTS - 1)?;
            if let Some(b) = nic_bandwidth {
                check_quantity(name, "nicBandwidth", b)?;
            }
        }
        WorkloadShape::NumaAligned { gpus, .. } => {
            check_range(name, "gpus", *gpus, 1, MAX_RESULTS - 1)?;
        }
        WorkloadShape::Mig { .. } | WorkloadShape::TestDriver { requests: 1 } => {}
        WorkloadShape::FirstAvailable { counts } => check_counts(name, counts)?,
        WorkloadShape::ExtendedResource { resource, quantity } => {
            check_range(name, "quantity", *quantity, 1, u32::MAX)?;
            if !crate::objects::is_extended_resource_name(resource) {
                return Err(invalid(
                    name,
                    format!(
                        "resource {resource:?} is not an extended resource name (<domain>/<name>)"
                    ),
                ));
            }
        }
        WorkloadShape::ExtendedResourceClasses => {
            if spec.classes.extended_resource_classes == 0 {
                return Err(invalid(name, "needs classes.extendedResourceClasses > 0"));
            }
        }
        WorkloadShape::TestDriver { requests } => {
            check_range(name, "requests", *requests, 1, MAX_REQUESTS)?;
        }
        WorkloadShape::NicShare { bandwidth } => check_quantity(name, "bandwidth", bandwidth)?,
        WorkloadShape::AdversarialMatchAttribute { requests } => {
            check_range(name, "requests", *requests, 2, MAX_REQUESTS)?;
        }
        WorkloadShape::FirstAvailableNearLimit { requests, counts } => {
            check_range(name, "requests", *requests, 1, MAX_REQUESTS)?;
            check_counts(name, counts)?;
        }
    }
    Ok(())
}

/// Resolves names and priorities and checks every workload against the API limits.
pub(crate) fn plan_workloads(spec: &GenSpec) -> Result<Vec<WorkloadPlan>, GenError> {
    let priorities: BTreeMap<&str, i32> = spec
        .priority_classes
        .iter()
        .map(|p| (p.name.as_str(), p.value))
        .collect();
    let mut used = BTreeSet::new();
    let mut plans = Vec::with_capacity(spec.workloads.len());
    for (index, w) in spec.workloads.iter().enumerate() {
        let name = match &w.name {
            Some(name) => name.clone(),
            None => {
                let base = derived_name(&w.shape);
                if used.contains(&base) {
                    format!("{base}-{index}")
                } else {
                    base
                }
            }
        };
        // The shape first: a malformed shape can derive a malformed name.
        check_shape(&name, &w.shape, spec)?;
        // Pod names append "-<index>" with up to 10 digits; keep them DNS labels.
        if !is_dns_label(&name) || name.len() > 40 {
            return Err(invalid(
                &name,
                "name must be a DNS label of at most 40 characters",
            ));
        }
        if !used.insert(name.clone()) {
            return Err(GenError::DuplicateName {
                kind: "workload",
                name,
            });
        }
        let priority = match &w.priority_class {
            None => None,
            Some(class) => match priorities.get(class.as_str()) {
                Some(&value) => Some((class.clone(), value)),
                None => {
                    return Err(GenError::UnknownPriorityClass {
                        workload: name,
                        class: class.clone(),
                    });
                }
            },
        };
        plans.push(WorkloadPlan {
            index: index as u32,
            name,
            shape: w.shape.clone(),
            count: w.count,
            priority,
            width: index_width(w.count),
        });
    }
    Ok(plans)
}

/// The class families a workload references.
pub(crate) fn families_of(shape: &WorkloadShape) -> Families {
    let mut f = Families::default();
    match shape {
        WorkloadShape::Gpus { .. } | WorkloadShape::FirstAvailable { .. } => f.gpu = true,
        WorkloadShape::GpuNic { .. } => {
            f.gpu = true;
            f.nic = true;
        }
        WorkloadShape::NumaAligned { nic, .. } => {
            f.gpu = true;
            f.nic = *nic;
        }
        WorkloadShape::Mig { .. } => f.mig = true,
        WorkloadShape::NicShare { .. } => f.nic = true,
        WorkloadShape::TestDriver { .. }
        | WorkloadShape::AdversarialMatchAttribute { .. }
        | WorkloadShape::FirstAvailableNearLimit { .. } => f.test = true,
        WorkloadShape::ExtendedResource { .. } | WorkloadShape::ExtendedResourceClasses => {}
    }
    f
}

fn exact(class: &str, count: Option<u32>) -> ExactDeviceRequest {
    ExactDeviceRequest {
        device_class_name: class.to_owned(),
        count: count.map(i64::from),
        ..ExactDeviceRequest::default()
    }
}

fn request(name: &str, exactly: ExactDeviceRequest) -> DeviceRequest {
    DeviceRequest {
        name: name.to_owned(),
        exactly: Some(exactly),
        first_available: None,
    }
}

fn first_available(name: &str, class: &str, counts: &[u32]) -> DeviceRequest {
    DeviceRequest {
        name: name.to_owned(),
        exactly: None,
        first_available: Some(
            counts
                .iter()
                .enumerate()
                .map(|(i, &count)| DeviceSubRequest {
                    // Position in the name keeps names unique even for repeated counts.
                    name: format!("option-{i}-count-{count}"),
                    device_class_name: class.to_owned(),
                    count: Some(i64::from(count)),
                    ..DeviceSubRequest::default()
                })
                .collect(),
        ),
    }
}

fn bandwidth_request(bandwidth: &str) -> CapacityRequirements {
    CapacityRequirements {
        requests: Some(BTreeMap::from([(
            "bandwidth".to_owned(),
            quantity(bandwidth),
        )])),
    }
}

fn match_attribute(attribute: &str, requests: &[&str]) -> DeviceConstraint {
    DeviceConstraint {
        match_attribute: Some(attribute.to_owned()),
        requests: (!requests.is_empty())
            .then(|| requests.iter().map(|r| (*r).to_owned()).collect()),
        distinct_attribute: None,
    }
}

fn gpu_selector_expression(selector: &GpuSelector) -> String {
    match selector {
        GpuSelector::ProductName(name) => format!(
            "device.attributes['{GPU_DRIVER}'].productName == {}",
            cel_string(name)
        ),
        GpuSelector::MinMemory(q) => format!(
            "device.capacity['{GPU_DRIVER}'].memory.compareTo(quantity({})) >= 0",
            cel_string(q)
        ),
        GpuSelector::Cel(expr) => expr.clone(),
    }
}

/// The claim a pod of `shape` needs, or `None` for extended-resource pods.
pub(crate) fn claim_spec(shape: &WorkloadShape) -> Option<ResourceClaimSpec> {
    let (requests, constraints) = match shape {
        WorkloadShape::Gpus { count, selector } => {
            let mut r = exact(GPU_CLASS, Some(*count));
            r.selectors = selector
                .as_ref()
                .map(|s| vec![cel(gpu_selector_expression(s))]);
            (vec![request("gpus", r)], Vec::new())
        }
        WorkloadShape::GpuNic {
            gpus,
            nic_bandwidth,
        } => {
            let mut nic = exact(NIC_CLASS, Some(1));
            nic.capacity = nic_bandwidth.as_deref().map(bandwidth_request);
            (
                vec![
                    request("gpus", exact(GPU_CLASS, Some(*gpus))),
                    request("nic", nic),
                ],
                vec![match_attribute(PCIE_ROOT_ATTRIBUTE, &["gpus", "nic"])],
            )
        }
        WorkloadShape::NumaAligned { gpus, nic } => {
            let mut requests = vec![request("gpus", exact(GPU_CLASS, Some(*gpus)))];
            if *nic {
                requests.push(request("nic", exact(NIC_CLASS, Some(1))));
            }
            (requests, vec![match_attribute(NUMA_NODE_ATTRIBUTE, &[])])
        }
        WorkloadShape::Mig { profile } => {
            let mut r = exact(MIG_CLASS, Some(1));
            r.selectors = Some(vec![cel(format!(
                "device.attributes['{GPU_DRIVER}'].profile == {}",
                cel_string(profile.name())
            ))]);
            // The per-profile class would select the same devices; the generic class
            // plus a selector exercises the `profile` attribute in CEL.
            (vec![request("mig", r)], Vec::new())
        }
        WorkloadShape::FirstAvailable { counts } => {
            (vec![first_available("gpus", GPU_CLASS, counts)], Vec::new())
        }
        WorkloadShape::ExtendedResource { .. } | WorkloadShape::ExtendedResourceClasses => {
            return None;
        }
        WorkloadShape::TestDriver { requests } => (
            // upstream's template leaves count unset (it defaults to one).
            (0..*requests)
                .map(|i| request(&format!("req-{i}"), exact(TEST_CLASS, None)))
                .collect(),
            Vec::new(),
        ),
        WorkloadShape::NicShare { bandwidth } => {
            let mut nic = exact(NIC_CLASS, Some(1));
            nic.capacity = Some(bandwidth_request(bandwidth));
            (vec![request("nic", nic)], Vec::new())
        }
        WorkloadShape::AdversarialMatchAttribute { requests } => {
            let names: Vec<String> = (0..*requests).map(|i| format!("req-{i}")).collect();
            let first = names[0].as_str();
            let last = names[names.len() - 1].as_str();
            (
                names
                    .iter()
                    .map(|n| request(n, exact(TEST_CLASS, Some(1))))
                    .collect(),
                vec![match_attribute(TEST_NUMA_ATTRIBUTE, &[first, last])],
            )
        }
        WorkloadShape::FirstAvailableNearLimit { requests, counts } => (
            (0..*requests)
                .map(|i| first_available(&format!("req-{i}"), TEST_CLASS, counts))
                .collect(),
            Vec::new(),
        ),
    };
    Some(ResourceClaimSpec {
        devices: Some(DeviceClaim {
            requests: Some(requests),
            constraints: (!constraints.is_empty()).then_some(constraints),
            config: None,
        }),
    })
}

pub(crate) fn claim_template(
    plan: &WorkloadPlan,
    namespace: &str,
) -> Option<ResourceClaimTemplate> {
    claim_spec(&plan.shape).map(|spec| ResourceClaimTemplate {
        metadata: namespaced_meta(plan.name.clone(), namespace),
        spec: Some(ResourceClaimTemplateSpec {
            metadata: None,
            spec: Some(spec),
        }),
    })
}

/// Name of the pod-level claim entry (upstream's pod template calls it "resource").
pub(crate) const POD_CLAIM_NAME: &str = "resource";

/// A container named `main` with the given resources.
pub(crate) fn container(resources: ResourceRequirements) -> Container {
    Container {
        name: "main".to_owned(),
        image: Some(POD_IMAGE.to_owned()),
        resources: Some(resources),
        ..Container::default()
    }
}

pub(crate) fn claim_resources() -> ResourceRequirements {
    ResourceRequirements {
        claims: Some(vec![ContainerClaim {
            name: POD_CLAIM_NAME.to_owned(),
            request: None,
        }]),
        ..ResourceRequirements::default()
    }
}

/// Requests and limits of `quantity` units of an extended resource.
pub(crate) fn extended_resources(resource: &str, quantity: u32) -> ResourceRequirements {
    let amount: BTreeMap<String, Quantity> = BTreeMap::from([(
        resource.to_owned(),
        crate::objects::quantity(quantity.to_string()),
    )]);
    ResourceRequirements {
        limits: Some(amount.clone()),
        requests: Some(amount),
        claims: None,
    }
}

/// Pod `i` of a workload.
pub(crate) fn pod(plan: &WorkloadPlan, i: u32, spec: &GenSpec) -> Pod {
    let name = plan.pod_name(i);
    let (resources, claims) = match &plan.shape {
        WorkloadShape::ExtendedResource { resource, quantity } => {
            (extended_resources(resource, *quantity), None)
        }
        WorkloadShape::ExtendedResourceClasses => {
            let class = i % spec.classes.extended_resource_classes.max(1);
            (extended_resources(&extended_resource_name(class), 1), None)
        }
        _ => (
            claim_resources(),
            Some(vec![PodResourceClaim {
                name: POD_CLAIM_NAME.to_owned(),
                resource_claim_template_name: Some(plan.name.clone()),
                resource_claim_name: None,
            }]),
        ),
    };
    Pod {
        metadata: ObjectMeta {
            labels: Some(BTreeMap::from([("app".to_owned(), plan.name.clone())])),
            uid: Some(
                Rng::stream(
                    spec.seed,
                    &[STREAM_POD_UID, u64::from(plan.index), u64::from(i)],
                )
                .uuid(),
            ),
            ..namespaced_meta(name, &spec.namespace)
        },
        spec: Some(PodSpec {
            containers: vec![container(resources)],
            resource_claims: claims,
            priority_class_name: plan.priority.as_ref().map(|(n, _)| n.clone()),
            priority: plan.priority.as_ref().map(|(_, v)| *v),
            ..PodSpec::default()
        }),
        status: None,
    }
}

/// The order of all pending pods as `(workload index, pod index)`.
pub(crate) fn pod_sequence(
    plans: &[WorkloadPlan],
    order: PodOrder,
    seed: u64,
) -> Vec<(usize, u32)> {
    let total: usize = plans.iter().map(|p| p.count as usize).sum();
    let mut out = Vec::with_capacity(total);
    match order {
        PodOrder::Sequential => {
            for (w, plan) in plans.iter().enumerate() {
                out.extend((0..plan.count).map(|i| (w, i)));
            }
        }
        PodOrder::Shuffled => {
            for (w, plan) in plans.iter().enumerate() {
                out.extend((0..plan.count).map(|i| (w, i)));
            }
            Rng::stream(seed, &[STREAM_POD_ORDER]).shuffle(&mut out);
        }
        PodOrder::Interleaved => {
            // Smooth proportional interleaving: the next pod comes from the workload that
            // is furthest behind its share, i.e. with the smallest (emitted + ½) / count.
            // Compared exactly in integers; ties go to the earlier workload.
            let mut emitted = vec![0u32; plans.len()];
            for _ in 0..total {
                let mut best: Option<usize> = None;
                for (w, plan) in plans.iter().enumerate() {
                    if emitted[w] >= plan.count {
                        continue;
                    }
                    let better = match best {
                        None => true,
                        Some(b) => {
                            let lhs = (2 * u64::from(emitted[w]) + 1) * u64::from(plans[b].count);
                            let rhs = (2 * u64::from(emitted[b]) + 1) * u64::from(plan.count);
                            lhs < rhs
                        }
                    };
                    if better {
                        best = Some(w);
                    }
                }
                let Some(w) = best else { break };
                out.push((w, emitted[w]));
                emitted[w] += 1;
            }
        }
    }
    out
}
