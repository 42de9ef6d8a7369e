//! `dra-sim`: a simulation of kube-scheduler's handling of Dynamic Resource Allocation.
//!
//! [`run_first_fit`] is the conformance reference loop; the full scheduler model (queue,
//! priorities without DRA preemption, extended resources, taints, explanations) builds on the
//! same pieces: [`ClaimStore`] for claims and templates, `dra-alloc` for allocation.

mod claims;
mod extended;
mod fit;
mod reference;
mod report;

use dra_alloc::{Index, IndexError, IndexInput, IndexOptions};
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::api::resource::v1::{
    DeviceClass, DeviceTaintRule, ResourceClaim, ResourceClaimTemplate, ResourceSlice,
};

pub use extended::extended_resource_winner;
pub use claims::{ClaimStore, POD_CLAIM_NAME_ANNOTATION, PodClaimError};
pub use fit::pod_node_name_and_selector_fit;
pub use reference::run_first_fit;
pub use report::{PodOutcome, PodStatus, Report};

/// The objects a simulation reads, borrowed from the loader's cluster.
#[derive(Debug, Default, Clone)]
pub struct SimInput<'a> {
    pub nodes: Vec<&'a Node>,
    /// Pods in input order.
    pub pods: Vec<&'a Pod>,
    pub claims: Vec<&'a ResourceClaim>,
    pub templates: Vec<&'a ResourceClaimTemplate>,
    pub slices: Vec<&'a ResourceSlice>,
    pub classes: Vec<&'a DeviceClass>,
    pub taint_rules: Vec<&'a DeviceTaintRule>,
}

impl<'a> SimInput<'a> {
    /// The objects of a loaded cluster, in input order.
    pub fn from_cluster(cluster: &'a dra_api::Cluster) -> SimInput<'a> {
        SimInput {
            nodes: cluster.nodes.iter().map(|o| &o.object).collect(),
            pods: cluster.pods.iter().map(|o| &o.object).collect(),
            claims: cluster.resource_claims.iter().map(|o| &o.object).collect(),
            templates: cluster.resource_claim_templates.iter().map(|o| &o.object).collect(),
            slices: cluster.resource_slices.iter().map(|o| &o.object).collect(),
            classes: cluster.device_classes.iter().map(|o| &o.object).collect(),
            taint_rules: cluster.device_taint_rules.iter().map(|o| &o.object).collect(),
        }
    }

    fn build_index(&self) -> Result<Index, SimError> {
        Index::build(
            &IndexInput {
                nodes: self.nodes.clone(),
                slices: self.slices.clone(),
                classes: self.classes.clone(),
                taint_rules: self.taint_rules.clone(),
            },
            &IndexOptions::default(),
        )
        .map_err(SimError::Index)
    }
}

/// Input the simulation cannot work with.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    #[error(transparent)]
    Index(IndexError),
    #[error("ResourceClaim {claim}: status.allocation: {message}")]
    Claim { claim: String, message: String },
}
