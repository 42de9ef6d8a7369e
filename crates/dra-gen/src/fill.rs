//! Pre-allocated state: claims with `status.allocation` and the bound pods using them.

use k8s_openapi::api::core::v1::{Pod, PodResourceClaim, PodSpec, PodStatus};
use k8s_openapi::api::resource::v1::{
    AllocationResult, DeviceAllocationResult, DeviceClaim, DeviceRequest,
    DeviceRequestAllocationResult, ExactDeviceRequest, ResourceClaim,
    ResourceClaimConsumerReference, ResourceClaimSpec, ResourceClaimStatus,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::GenError;
use crate::classes::mig_profile_class;
use crate::nodes::{
    GPUS_PER_NODE, PoolPlan, gpu_device_name, mig_device_name, mig_small_placements,
    test_device_name,
};
use crate::objects::{namespaced_meta, single_node_selector};
use crate::rng::Rng;
use crate::spec::{Fill, MigProfile, NodeShape};
use crate::well_known::{
    CLAIM_FINALIZER, GPU_CLASS, GPU_DRIVER, LEGACY_GPU_RESOURCE, TEST_CLASS, TEST_DRIVER,
};
use crate::workloads::{POD_CLAIM_NAME, claim_resources, container, extended_resources};

/// Random stream for the fill: `[STREAM_FILL, pool, node]`.
const STREAM_FILL: u64 = 3;

/// Allocatable units of one node of `shape`: what the fill fraction counts.
pub(crate) fn units_per_node(shape: &NodeShape) -> u64 {
    match shape {
        NodeShape::Hgx { .. } => u64::from(GPUS_PER_NODE),
        NodeShape::Mig => u64::from(GPUS_PER_NODE * mig_small_placements()),
        NodeShape::TestDriver { devices_per_node } => u64::from(*devices_per_node),
        NodeShape::Legacy { gpus_per_node } => u64::from(*gpus_per_node),
    }
}

/// Units taken on each node of a pool: `round(fraction × total)` spread as evenly as
/// possible (node `i` gets `⌊T(i+1)/n⌋ − ⌊Ti/n⌋`).
pub(crate) fn units_taken(
    fill: Fill,
    nodes: u32,
    units_per_node: u64,
) -> impl Iterator<Item = u64> {
    let total = u128::from(nodes) * u128::from(units_per_node);
    let taken = ((fill.fraction * total as f64).round() as u128).min(total);
    let n = u128::from(nodes.max(1));
    (0..u128::from(nodes)).map(move |i| (taken * (i + 1) / n - taken * i / n) as u64)
}

pub(crate) fn check_fill(fill: Fill) -> Result<(), GenError> {
    if (0.0..=1.0).contains(&fill.fraction) {
        Ok(())
    } else {
        Err(GenError::InvalidFill {
            fraction: fill.fraction,
        })
    }
}

struct Allocation<'a> {
    node: &'a str,
    claim: String,
    request: &'static str,
    class: String,
    /// `None` leaves the request count unset (upstream's resourceclaim.yaml).
    count: Option<usize>,
    driver: &'static str,
    devices: Vec<String>,
}

/// One pre-allocated unit of output: a bound pod and the allocated claim it uses
/// (device-plugin pods have none).
pub(crate) struct FillItem {
    pub claim: Option<ResourceClaim>,
    pub pod: Pod,
}

/// The fill of node `node` of `pool`, which takes `taken` units.
pub(crate) fn node_fill(
    pool: &PoolPlan,
    node: u32,
    taken: u64,
    seed: u64,
    namespace: &str,
) -> Vec<FillItem> {
    if taken == 0 {
        return Vec::new();
    }
    let node_name = pool.node_name(node);
    let node_ref = node_name.as_str();
    let mut rng = Rng::stream(seed, &[STREAM_FILL, u64::from(pool.index), u64::from(node)]);
    let mut allocations = Vec::new();
    match &pool.shape {
        NodeShape::Hgx { .. } => {
            // Scattered over the node, so topology-aware claims meet fragmentation.
            let gpus = rng.sample_sorted(GPUS_PER_NODE as usize, taken as usize);
            allocations.push(Allocation {
                node: node_ref,
                claim: format!("fill-{node_name}"),
                request: "gpus",
                class: GPU_CLASS.to_owned(),
                count: Some(gpus.len()),
                driver: GPU_DRIVER,
                devices: gpus
                    .into_iter()
                    .map(|g| gpu_device_name(g as u32))
                    .collect(),
            });
        }
        NodeShape::Mig => {
            // 1g.10gb instances spread evenly over the GPUs, lowest placements first;
            // one claim per GPU.
            let taken = taken as u32;
            for gpu in 0..GPUS_PER_NODE {
                let on_gpu = taken * (gpu + 1) / GPUS_PER_NODE - taken * gpu / GPUS_PER_NODE;
                if on_gpu == 0 {
                    continue;
                }
                allocations.push(Allocation {
                    node: node_ref,
                    claim: format!("fill-{node_name}-gpu-{gpu}"),
                    request: "mig",
                    class: mig_profile_class(MigProfile::G1Gb10),
                    count: Some(on_gpu as usize),
                    driver: GPU_DRIVER,
                    devices: (0..on_gpu)
                        .map(|start| mig_device_name(gpu, MigProfile::G1Gb10, start))
                        .collect(),
                });
            }
        }
        NodeShape::TestDriver { .. } => {
            // upstream's steady-state benchmarks pre-allocate single-device claims.
            for d in 0..taken as u32 {
                allocations.push(Allocation {
                    node: node_ref,
                    claim: format!("fill-{node_name}-{d}"),
                    request: "req-0",
                    class: TEST_CLASS.to_owned(),
                    count: None,
                    driver: TEST_DRIVER,
                    devices: vec![test_device_name(d)],
                });
            }
        }
        NodeShape::Legacy { .. } => {
            let name = format!("fill-{node_name}");
            let uid = rng.uuid();
            let pod = bound_pod(
                &name,
                namespace,
                &uid,
                node_ref,
                extended_resources(LEGACY_GPU_RESOURCE, taken as u32),
                None,
            );
            return vec![FillItem { claim: None, pod }];
        }
    }
    allocations
        .iter()
        .map(|allocation| {
            let (claim, pod) = allocated_claim(allocation, namespace, &mut rng);
            FillItem {
                claim: Some(claim),
                pod,
            }
        })
        .collect()
}

fn bound_pod(
    name: &str,
    namespace: &str,
    uid: &str,
    node: &str,
    resources: k8s_openapi::api::core::v1::ResourceRequirements,
    claim: Option<&str>,
) -> Pod {
    Pod {
        metadata: ObjectMeta {
            uid: Some(uid.to_owned()),
            ..namespaced_meta(name, namespace)
        },
        spec: Some(PodSpec {
            node_name: Some(node.to_owned()),
            containers: vec![container(resources)],
            resource_claims: claim.map(|claim| {
                vec![PodResourceClaim {
                    name: POD_CLAIM_NAME.to_owned(),
                    resource_claim_name: Some(claim.to_owned()),
                    resource_claim_template_name: None,
                }]
            }),
            ..PodSpec::default()
        }),
        status: Some(PodStatus {
            phase: Some("Running".to_owned()),
            ..PodStatus::default()
        }),
    }
}

fn allocated_claim(a: &Allocation<'_>, namespace: &str, rng: &mut Rng) -> (ResourceClaim, Pod) {
    let pod_name = a.claim.clone();
    let pod_uid = rng.uuid();
    let claim_uid = rng.uuid();
    let claim = ResourceClaim {
        metadata: ObjectMeta {
            uid: Some(claim_uid),
            finalizers: Some(vec![CLAIM_FINALIZER.to_owned()]),
            ..namespaced_meta(a.claim.clone(), namespace)
        },
        spec: Some(ResourceClaimSpec {
            devices: Some(DeviceClaim {
                requests: Some(vec![DeviceRequest {
                    name: a.request.to_owned(),
                    exactly: Some(ExactDeviceRequest {
                        device_class_name: a.class.clone(),
                        count: a.count.map(|c| c as i64),
                        ..ExactDeviceRequest::default()
                    }),
                    first_available: None,
                }]),
                constraints: None,
                config: None,
            }),
        }),
        status: Some(ResourceClaimStatus {
            allocation: Some(AllocationResult {
                devices: Some(DeviceAllocationResult {
                    results: Some(
                        a.devices
                            .iter()
                            .map(|device| DeviceRequestAllocationResult {
                                request: a.request.to_owned(),
                                driver: a.driver.to_owned(),
                                pool: a.node.to_owned(),
                                device: device.clone(),
                                ..DeviceRequestAllocationResult::default()
                            })
                            .collect(),
                    ),
                    config: None,
                }),
                node_selector: Some(single_node_selector(a.node)),
                allocation_timestamp: None,
            }),
            reserved_for: Some(vec![ResourceClaimConsumerReference {
                api_group: None,
                resource: "pods".to_owned(),
                name: pod_name.clone(),
                uid: pod_uid.clone(),
            }]),
            devices: None,
        }),
    };
    let pod = bound_pod(
        &pod_name,
        namespace,
        &pod_uid,
        a.node,
        claim_resources(),
        Some(&a.claim),
    );
    (claim, pod)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_taken_spreads_exactly() {
        let cases = [
            (0.5, 500, 10, 2500),
            (0.998, 500, 10, 4990),
            (0.9, 7, 8, 50),
            (1.0, 3, 8, 24),
            (0.0, 3, 8, 0),
        ];
        for (fraction, nodes, per_node, want_total) in cases {
            let taken: Vec<u64> = units_taken(Fill { fraction }, nodes, per_node).collect();
            assert_eq!(taken.len(), nodes as usize);
            assert_eq!(taken.iter().sum::<u64>(), want_total, "{fraction} {nodes}");
            let (min, max) = (taken.iter().min().copied(), taken.iter().max().copied());
            assert!(max.unwrap_or(0) - min.unwrap_or(0) <= 1, "{taken:?}");
            assert!(max.unwrap_or(0) <= per_node);
        }
    }
}
