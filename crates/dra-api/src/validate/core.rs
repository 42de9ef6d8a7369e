//! core/v1 and scheduling.k8s.io/v1: node selectors, the Pod fields the simulator
//! uses, PriorityClass.

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::{NodeSelector, Pod, ResourceRequirements};
use k8s_openapi::api::scheduling::v1::PriorityClass;

use super::names;
use super::{FieldPath, Report, duplicate, forbidden, invalid, not_supported, quote, required};
use crate::diagnostic::Diagnostic;
use crate::limits::HIGHEST_USER_DEFINABLE_PRIORITY;
use crate::source::Located;

/// `core.v1.NodeSelector` as `ValidateNodeSelector` checks it.
pub(crate) fn node_selector(r: &mut Report<'_>, path: &FieldPath<'_>, selector: &NodeSelector) {
    let terms_path = path.child("nodeSelectorTerms");
    if selector.node_selector_terms.is_empty() {
        r.error(
            &terms_path,
            required("must have at least one node selector term"),
        );
        return;
    }
    for (i, term) in selector.node_selector_terms.iter().enumerate() {
        let tp = terms_path.index(i);
        for (j, req) in term.match_expressions.iter().flatten().enumerate() {
            let exprs = tp.child("matchExpressions");
            let p = exprs.index(j);
            let values = req.values.as_deref().unwrap_or_default();
            match req.operator.as_str() {
                "In" | "NotIn" if values.is_empty() => {
                    r.error(
                        &p.child("values"),
                        required("must be specified when `operator` is 'In' or 'NotIn'"),
                    );
                }
                "Exists" | "DoesNotExist" if !values.is_empty() => r.error(
                    &p.child("values"),
                    forbidden("may not be specified when `operator` is 'Exists' or 'DoesNotExist'"),
                ),
                "Gt" | "Lt" if values.len() != 1 => r.error(
                    &p.child("values"),
                    required("must be specified single value when `operator` is 'Lt' or 'Gt'"),
                ),
                "In" | "NotIn" | "Exists" | "DoesNotExist" | "Gt" | "Lt" => {}
                other => r.error(
                    &p.child("operator"),
                    invalid(quote(other), "not a valid selector operator"),
                ),
            }
            r.name_rule(&p.child("key"), &req.key, names::qualified_name);
            for (k, value) in values.iter().enumerate() {
                r.name_rule(&p.child("values").index(k), value, names::label_value);
            }
        }
        for (j, req) in term.match_fields.iter().flatten().enumerate() {
            let fields = tp.child("matchFields");
            let p = fields.index(j);
            let values = req.values.as_deref().unwrap_or_default();
            match req.operator.as_str() {
                "In" | "NotIn" => {
                    if values.len() != 1 {
                        r.error(
                            &p.child("values"),
                            required("must be only one value when `operator` is 'In' or 'NotIn' for node field selector"),
                        );
                    }
                }
                other => r.error(
                    &p.child("operator"),
                    invalid(quote(other), "not a valid selector operator"),
                ),
            }
            if req.key != "metadata.name" {
                r.error(
                    &p.child("key"),
                    invalid(quote(&req.key), "not a valid field selector key"),
                );
            } else {
                for (k, value) in values.iter().enumerate() {
                    r.name_rule(&p.child("values").index(k), value, names::dns1123_subdomain);
                }
            }
        }
    }
}

/// The Pod fields the simulator relies on: containers, `resourceClaims` and the
/// references to them, `nodeName`, `priorityClassName`.
pub(crate) fn pod(r: &mut Report<'_>, pod: &Pod) {
    let path = FieldPath::new("spec");
    let Some(spec) = &pod.spec else {
        r.error(&path.child("containers"), required(""));
        return;
    };
    let claims = spec.resource_claims.as_deref().unwrap_or_default();
    let claims_path = path.child("resourceClaims");
    let mut claim_names = BTreeSet::new();
    for (i, claim) in claims.iter().enumerate() {
        let p = claims_path.index(i);
        r.name_rule(&p.child("name"), &claim.name, names::dns1123_label);
        if !claim_names.insert(claim.name.as_str()) {
            r.error(&p, duplicate(quote(&claim.name)));
        }
        match (&claim.resource_claim_name, &claim.resource_claim_template_name) {
            (None, None) => r.error(
                &p,
                invalid(quote(&claim.name), "must specify one of: `resourceClaimName`, `resourceClaimTemplateName`"),
            ),
            (Some(_), Some(_)) => r.error(
                &p,
                invalid(
                    quote(&claim.name),
                    "at most one of `resourceClaimName` or `resourceClaimTemplateName` may be specified",
                ),
            ),
            (Some(name), None) => r.name_rule(&p.child("resourceClaimName"), name, names::dns1123_subdomain),
            (None, Some(name)) => r.name_rule(&p.child("resourceClaimTemplateName"), name, names::dns1123_subdomain),
        }
    }

    if spec.containers.is_empty() {
        r.error(&path.child("containers"), required(""));
    }
    let mut container_names = BTreeSet::new();
    let init = spec.init_containers.as_deref().unwrap_or_default();
    for (field, containers) in [
        ("initContainers", init),
        ("containers", spec.containers.as_slice()),
    ] {
        for (i, container) in containers.iter().enumerate() {
            let list = path.child(field);
            let p = list.index(i);
            if container.name.is_empty() {
                r.error(&p.child("name"), required(""));
            } else {
                r.name_rule(&p.child("name"), &container.name, names::dns1123_label);
                if !container_names.insert(container.name.as_str()) {
                    r.error(&p.child("name"), duplicate(quote(&container.name)));
                }
            }
            container_claims(
                r,
                &p.child("resources").child("claims"),
                container.resources.as_ref(),
                &claim_names,
            );
        }
    }
    for (i, container) in spec.ephemeral_containers.iter().flatten().enumerate() {
        let list = path.child("ephemeralContainers");
        let p = list.index(i);
        container_claims(
            r,
            &p.child("resources").child("claims"),
            container.resources.as_ref(),
            &claim_names,
        );
    }
    if let Some(node_name) = spec.node_name.as_deref().filter(|n| !n.is_empty()) {
        r.name_rule(&path.child("nodeName"), node_name, names::dns1123_subdomain);
    }
    if let Some(class) = spec
        .priority_class_name
        .as_deref()
        .filter(|n| !n.is_empty())
    {
        r.name_rule(
            &path.child("priorityClassName"),
            class,
            names::dns1123_subdomain,
        );
    }
}

fn container_claims(
    r: &mut Report<'_>,
    path: &FieldPath<'_>,
    resources: Option<&ResourceRequirements>,
    pod_claims: &BTreeSet<&str>,
) {
    let claims = resources
        .and_then(|res| res.claims.as_deref())
        .unwrap_or_default();
    let mut seen = BTreeSet::new();
    for (i, claim) in claims.iter().enumerate() {
        let p = path.index(i);
        let request = claim.request.as_deref().unwrap_or_default();
        if claim.name.is_empty() {
            r.error(&p.child("name"), required(""));
        } else if !pod_claims.contains(claim.name.as_str()) {
            r.error(
                &p,
                invalid(
                    quote(&claim.name),
                    "must be one of the names in pod.spec.resourceClaims",
                ),
            );
        }
        if !request.is_empty() {
            r.name_rule(&p.child("request"), request, names::dns1123_label);
        }
        if !seen.insert((claim.name.as_str(), request)) {
            let shown = if request.is_empty() {
                claim.name.clone()
            } else {
                format!("{}/{request}", claim.name)
            };
            r.error(&p, duplicate(quote(&shown)));
        }
    }
}

/// PriorityClass objects, including the one-global-default rule enforced on create.
pub(crate) fn priority_classes(out: &mut Vec<Diagnostic>, classes: &[Located<PriorityClass>]) {
    let mut global_default: Option<&str> = None;
    for o in classes {
        let class = &o.object;
        let mut r = Report::new(out, o);
        r.object_meta(&class.metadata, names::dns1123_subdomain);
        let name = class.metadata.name.as_deref().unwrap_or_default();
        let value = class.value.unwrap_or(0);
        if name.starts_with("system-") {
            let known = matches!(
                (name, value),
                ("system-node-critical", 2_000_001_000)
                    | ("system-cluster-critical", 2_000_000_000)
            ) && class.global_default != Some(true);
            if !known {
                r.error(
                    &FieldPath::new("metadata").child("name"),
                    forbidden("priority class names with 'system-' prefix are reserved for system use only"),
                );
            }
        } else if value > HIGHEST_USER_DEFINABLE_PRIORITY {
            r.error(
                &FieldPath::new("value"),
                forbidden(&format!(
                    "maximum allowed value of a user defined priority is {HIGHEST_USER_DEFINABLE_PRIORITY}"
                )),
            );
        }
        if let Some(policy) = class.preemption_policy.as_deref()
            && !matches!(policy, "PreemptLowerPriority" | "Never")
        {
            r.error(
                &FieldPath::new("preemptionPolicy"),
                not_supported(policy, &["Never", "PreemptLowerPriority"]),
            );
        }
        if class.global_default == Some(true) {
            match global_default {
                Some(first) => r.error(
                    &FieldPath::new("globalDefault"),
                    forbidden(&format!("PriorityClass {first:?} is already marked as default; only one default can exist")),
                ),
                None => global_default = Some(name),
            }
        }
    }
}
