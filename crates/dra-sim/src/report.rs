//! The result document of a simulation (`dra simulate -o json`), a superset of the
//! conformance shape in `conformance/README.md`.

use std::collections::BTreeMap;

use k8s_openapi::api::resource::v1::AllocationResult;
use serde::Serialize;

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
    pub allocations: BTreeMap<String, AllocationResult>,
    /// The error text when `status` is `error`.
    pub error: Option<String>,
    /// Why the pod is unschedulable, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Allocator search steps spent on this pod.
    pub steps: u64,
}

impl PodOutcome {
    pub fn new(pod: String) -> PodOutcome {
        PodOutcome {
            pod,
            node: None,
            status: PodStatus::Unschedulable,
            allocations: BTreeMap::new(),
            error: None,
            reason: None,
            steps: 0,
        }
    }
}

/// The whole simulation.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Report {
    pub results: Vec<PodOutcome>,
    /// Allocator search steps in total.
    pub steps: u64,
}
