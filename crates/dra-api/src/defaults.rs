//! Defaults the API server applies on create, limited to those later stages rely on.
//!
//! Applied by the loader to every object; public so that code building objects in
//! memory gets the same shape. Everything else is left as written: no field is
//! removed or normalised. `DeviceTaint.timeAdded` (set to the time of the request)
//! is deliberately not defaulted, because results must not depend on the clock.

use k8s_openapi::api::resource::v1::{
    DeviceClaim, DeviceSubRequest, DeviceToleration, ExactDeviceRequest, ResourceClaim,
    ResourceClaimTemplate,
};

use crate::cluster::{AnyObject, Cluster};

/// `allocationMode` of an exact request or subrequest when absent.
pub const DEFAULT_ALLOCATION_MODE: &str = "ExactCount";
/// `operator` of a device toleration when absent.
pub const DEFAULT_TOLERATION_OPERATOR: &str = "Equal";
/// The namespace of a namespaced object that names none.
pub const DEFAULT_NAMESPACE: &str = "default";

/// Applies the defaults to every object of `cluster`; applying them twice changes
/// nothing.
pub fn apply_defaults(cluster: &mut Cluster) {
    for claim in &mut cluster.resource_claims {
        resource_claim(&mut claim.object);
    }
    for template in &mut cluster.resource_claim_templates {
        resource_claim_template(&mut template.object);
    }
    macro_rules! namespaced {
        ($($field:ident),*) => {
            $( for o in &mut cluster.$field { default_namespace(&mut o.object.metadata.namespace); } )*
        };
    }
    namespaced!(
        pods,
        service_accounts,
        resource_claims,
        resource_claim_templates,
        deployments,
        stateful_sets,
        daemon_sets,
        replica_sets,
        jobs,
        cron_jobs,
        roles,
        role_bindings
    );
}

pub(crate) fn apply_object_defaults(object: &mut AnyObject) {
    if object.info().namespaced {
        default_namespace(&mut object.metadata_mut().namespace);
    }
    match object {
        AnyObject::ResourceClaim(claim) => resource_claim(claim),
        AnyObject::ResourceClaimTemplate(template) => resource_claim_template(template),
        _ => {}
    }
}

fn default_namespace(namespace: &mut Option<String>) {
    if namespace.as_deref().is_none_or(str::is_empty) {
        *namespace = Some(DEFAULT_NAMESPACE.to_string());
    }
}

/// Request and toleration defaults in the spec, and toleration defaults in
/// `status.allocation.devices.results[]`.
pub fn resource_claim(claim: &mut ResourceClaim) {
    if let Some(spec) = claim.spec.as_mut() {
        device_claim(&mut spec.devices);
    }
    let results = claim
        .status
        .as_mut()
        .and_then(|s| s.allocation.as_mut())
        .and_then(|a| a.devices.as_mut())
        .and_then(|d| d.results.as_mut());
    for result in results.into_iter().flatten() {
        for toleration in result.tolerations.iter_mut().flatten() {
            device_toleration(toleration);
        }
    }
}

/// Request and toleration defaults in `spec.spec`.
pub fn resource_claim_template(template: &mut ResourceClaimTemplate) {
    if let Some(spec) = template.spec.as_mut().and_then(|t| t.spec.as_mut()) {
        device_claim(&mut spec.devices);
    }
}

/// Defaults every request of a claim spec (`exactly` and each `firstAvailable` entry).
pub fn device_claim(claim: &mut Option<DeviceClaim>) {
    for request in claim
        .iter_mut()
        .flat_map(|c| c.requests.iter_mut().flatten())
    {
        if let Some(exact) = request.exactly.as_mut() {
            exact_device_request(exact);
        }
        for sub in request.first_available.iter_mut().flatten() {
            device_sub_request(sub);
        }
    }
}

/// `allocationMode: ExactCount` when absent; `count: 1` for ExactCount when absent
/// or 0 (the API's `count` is a plain integer, so 0 means unset).
pub fn exact_device_request(request: &mut ExactDeviceRequest) {
    request_mode_and_count(&mut request.allocation_mode, &mut request.count);
    for toleration in request.tolerations.iter_mut().flatten() {
        device_toleration(toleration);
    }
}

/// As [`exact_device_request`], for a `firstAvailable` entry.
pub fn device_sub_request(request: &mut DeviceSubRequest) {
    request_mode_and_count(&mut request.allocation_mode, &mut request.count);
    for toleration in request.tolerations.iter_mut().flatten() {
        device_toleration(toleration);
    }
}

fn request_mode_and_count(mode: &mut Option<String>, count: &mut Option<i64>) {
    if mode.as_deref().is_none_or(str::is_empty) {
        *mode = Some(DEFAULT_ALLOCATION_MODE.to_string());
    }
    if mode.as_deref() == Some(DEFAULT_ALLOCATION_MODE) && count.is_none_or(|c| c == 0) {
        *count = Some(1);
    }
}

/// `operator: Equal` when absent.
pub fn device_toleration(toleration: &mut DeviceToleration) {
    if toleration.operator.as_deref().is_none_or(str::is_empty) {
        toleration.operator = Some(DEFAULT_TOLERATION_OPERATOR.to_string());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load_str;

    fn claim_yaml(requests: &str) -> String {
        format!(
            "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {{name: c}}\nspec:\n  devices:\n    requests:\n{requests}"
        )
    }

    fn requests(claim: &ResourceClaim) -> &[k8s_openapi::api::resource::v1::DeviceRequest] {
        claim
            .spec
            .as_ref()
            .unwrap()
            .devices
            .as_ref()
            .unwrap()
            .requests
            .as_deref()
            .unwrap()
    }

    #[test]
    fn request_defaults_match_the_api_server() {
        let loaded = load_str(
            "t.yaml",
            &claim_yaml(
                "    - {name: a, exactly: {deviceClassName: c}}\n\
                 \x20   - {name: b, exactly: {deviceClassName: c, count: 0}}\n\
                 \x20   - {name: c, exactly: {deviceClassName: c, count: 3}}\n\
                 \x20   - {name: d, exactly: {deviceClassName: c, allocationMode: All}}\n\
                 \x20   - {name: e, exactly: {deviceClassName: c, allocationMode: Other}}\n\
                 \x20   - name: f\n      firstAvailable: [{name: x, deviceClassName: c, tolerations: [{key: k}, {key: k, operator: Exists}]}]\n",
            ),
        );
        assert!(loaded.diagnostics.is_empty(), "{:?}", loaded.diagnostics);
        let claim = &loaded.cluster.resource_claims[0].object;
        assert_eq!(claim.metadata.namespace.as_deref(), Some("default"));
        let got: Vec<(Option<&str>, Option<i64>)> = requests(claim)[..5]
            .iter()
            .map(|r| {
                let e = r.exactly.as_ref().unwrap();
                (e.allocation_mode.as_deref(), e.count)
            })
            .collect();
        assert_eq!(
            got,
            vec![
                (Some("ExactCount"), Some(1)),
                (Some("ExactCount"), Some(1)),
                (Some("ExactCount"), Some(3)),
                (Some("All"), None),
                (Some("Other"), None),
            ]
        );
        let sub = &requests(claim)[5].first_available.as_ref().unwrap()[0];
        assert_eq!(
            (sub.allocation_mode.as_deref(), sub.count),
            (Some("ExactCount"), Some(1))
        );
        let operators: Vec<_> = sub
            .tolerations
            .iter()
            .flatten()
            .map(|t| t.operator.as_deref())
            .collect();
        assert_eq!(operators, vec![Some("Equal"), Some("Exists")]);
    }

    #[test]
    fn defaults_are_idempotent_and_reach_templates_and_results() {
        let text = "apiVersion: resource.k8s.io/v1\nkind: ResourceClaimTemplate\nmetadata: {name: t, namespace: \"\"}\n\
                    spec:\n  spec:\n    devices:\n      requests: [{name: a, exactly: {deviceClassName: c}}]\n---\n\
                    apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: c}\nspec: {}\nstatus:\n  \
                    allocation:\n    devices:\n      results: [{request: a, driver: d, pool: p, device: x, tolerations: [{key: k}]}]\n";
        let mut loaded = load_str("t.yaml", text);
        assert!(loaded.diagnostics.is_empty(), "{:?}", loaded.diagnostics);
        let before = loaded.cluster.clone();
        apply_defaults(&mut loaded.cluster);
        assert_eq!(before.resource_claims, loaded.cluster.resource_claims);
        assert_eq!(
            before.resource_claim_templates,
            loaded.cluster.resource_claim_templates
        );

        let template = &loaded.cluster.resource_claim_templates[0].object;
        assert_eq!(template.metadata.namespace.as_deref(), Some("default"));
        let spec = template.spec.as_ref().unwrap().spec.as_ref().unwrap();
        let exact = spec.devices.as_ref().unwrap().requests.as_ref().unwrap()[0]
            .exactly
            .as_ref()
            .unwrap();
        assert_eq!(exact.count, Some(1));
        let result = &loaded.cluster.resource_claims[0]
            .object
            .status
            .as_ref()
            .unwrap()
            .allocation
            .as_ref()
            .unwrap()
            .devices
            .as_ref()
            .unwrap()
            .results
            .as_ref()
            .unwrap()[0];
        assert_eq!(
            result.tolerations.as_ref().unwrap()[0].operator.as_deref(),
            Some("Equal")
        );
    }

    #[test]
    fn apply_defaults_fills_objects_built_in_memory() {
        let mut cluster = Cluster::default();
        let mut claim = ResourceClaim::default();
        claim.metadata.name = Some("c".to_string());
        cluster.resource_claims.push(crate::Located::new(
            crate::Source::new("<memory>", 1),
            claim,
        ));
        apply_defaults(&mut cluster);
        assert_eq!(
            cluster.resource_claims[0]
                .object
                .metadata
                .namespace
                .as_deref(),
            Some("default")
        );
    }
}
