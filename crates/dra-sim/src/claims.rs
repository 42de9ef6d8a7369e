//! The claims of a simulation: those in the input plus those created from
//! ResourceClaimTemplates, and how a pod's `spec.resourceClaims` resolve to them.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::resource::v1::{AllocationResult, ResourceClaim, ResourceClaimStatus, ResourceClaimTemplate};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};

use crate::SimInput;

/// Why a pod's claims cannot be resolved (the pod cannot be scheduled).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodClaimError(pub String);

/// Annotation the resourceclaim controller sets on claims it creates from a template.
pub const POD_CLAIM_NAME_ANNOTATION: &str = "resource.kubernetes.io/pod-claim-name";

/// Every claim of the simulation by (namespace, name), including generated ones.
#[derive(Debug, Clone, Default)]
pub struct ClaimStore {
    claims: BTreeMap<(String, String), ResourceClaim>,
    templates: BTreeMap<(String, String), ResourceClaimTemplate>,
    /// Names of claims created from templates, in creation order.
    generated: Vec<(String, String)>,
}

fn namespace_of(meta: &ObjectMeta) -> String {
    meta.namespace.clone().unwrap_or_else(|| "default".to_string())
}

impl ClaimStore {
    pub fn new(input: &SimInput<'_>) -> ClaimStore {
        let mut store = ClaimStore::default();
        for claim in &input.claims {
            let key = (namespace_of(&claim.metadata), claim.metadata.name.clone().unwrap_or_default());
            store.claims.entry(key).or_insert_with(|| (*claim).clone());
        }
        for template in &input.templates {
            let key = (
                namespace_of(&template.metadata),
                template.metadata.name.clone().unwrap_or_default(),
            );
            store.templates.entry(key).or_insert_with(|| (*template).clone());
        }
        store
    }

    /// Claims that have an allocation, in (namespace, name) order.
    pub fn allocated(&self) -> impl Iterator<Item = (&ResourceClaim, &AllocationResult)> {
        self.claims.values().filter_map(|c| {
            c.status
                .as_ref()
                .and_then(|s| s.allocation.as_ref())
                .map(|a| (c, a))
        })
    }

    pub fn get(&self, namespace: &str, name: &str) -> Option<&ResourceClaim> {
        self.claims.get(&(namespace.to_string(), name.to_string()))
    }

    /// Claims created from templates so far, in creation order.
    pub fn generated(&self) -> impl Iterator<Item = &ResourceClaim> {
        self.generated.iter().filter_map(|k| self.claims.get(k))
    }

    /// Every claim in (namespace, name) order.
    pub fn all(&self) -> impl Iterator<Item = &ResourceClaim> {
        self.claims.values()
    }

    pub fn set_allocation(&mut self, namespace: &str, name: &str, allocation: AllocationResult) {
        if let Some(claim) = self.claims.get_mut(&(namespace.to_string(), name.to_string())) {
            claim
                .status
                .get_or_insert_with(ResourceClaimStatus::default)
                .allocation = Some(allocation);
        }
    }

    /// The names of the pod's claims in `spec.resourceClaims` order, each once, creating claims
    /// from templates as `<pod name>-<pod claim name>` (the real controller appends a random
    /// suffix; a simulation must be reproducible).
    pub fn claims_of_pod(&mut self, pod: &Pod) -> Result<Vec<String>, PodClaimError> {
        let namespace = namespace_of(&pod.metadata);
        let pod_name = pod.metadata.name.clone().unwrap_or_default();
        let mut names: Vec<String> = Vec::new();
        for entry in pod
            .spec
            .as_ref()
            .and_then(|s| s.resource_claims.as_deref())
            .unwrap_or_default()
        {
            let name = if let Some(claim_name) = &entry.resource_claim_name {
                if !self.claims.contains_key(&(namespace.clone(), claim_name.clone())) {
                    return Err(PodClaimError(format!(
                        "resourceclaim \"{claim_name}\" not found"
                    )));
                }
                claim_name.clone()
            } else if let Some(template_name) = &entry.resource_claim_template_name {
                let generated = format!("{pod_name}-{}", entry.name);
                let key = (namespace.clone(), generated.clone());
                if !self.claims.contains_key(&key) {
                    let Some(template) = self.templates.get(&(namespace.clone(), template_name.clone()))
                    else {
                        return Err(PodClaimError(format!(
                            "pod \"{namespace}/{pod_name}\": ResourceClaim not created yet: resourceclaimtemplate.resource.k8s.io \"{template_name}\" not found"
                        )));
                    };
                    let claim = claim_from_template(template, pod, &generated, &entry.name);
                    self.claims.insert(key.clone(), claim);
                    self.generated.push(key);
                }
                generated
            } else {
                return Err(PodClaimError(format!(
                    "pod \"{namespace}/{pod_name}\", spec.resourceClaims[{:?}]: none of the supported fields are set",
                    entry.name
                )));
            };
            if !names.contains(&name) {
                names.push(name);
            }
        }
        Ok(names)
    }
}

fn claim_from_template(
    template: &ResourceClaimTemplate,
    pod: &Pod,
    name: &str,
    pod_claim_name: &str,
) -> ResourceClaim {
    let spec = template.spec.as_ref();
    let template_meta = spec.and_then(|s| s.metadata.as_ref());
    let mut annotations = template_meta
        .and_then(|m| m.annotations.clone())
        .unwrap_or_default();
    annotations.insert(POD_CLAIM_NAME_ANNOTATION.to_string(), pod_claim_name.to_string());
    ResourceClaim {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            namespace: Some(namespace_of(&pod.metadata)),
            labels: template_meta.and_then(|m| m.labels.clone()),
            annotations: Some(annotations),
            owner_references: Some(vec![OwnerReference {
                api_version: "v1".to_string(),
                kind: "Pod".to_string(),
                name: pod.metadata.name.clone().unwrap_or_default(),
                uid: pod.metadata.uid.clone().unwrap_or_default(),
                controller: Some(true),
                block_owner_deletion: Some(true),
            }]),
            ..ObjectMeta::default()
        },
        spec: spec.and_then(|s| s.spec.clone()),
        status: None,
    }
}
