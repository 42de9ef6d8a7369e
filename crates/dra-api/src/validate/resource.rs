//! resource.k8s.io/v1: shared field rules, DeviceClass and DeviceTaintRule; the
//! ResourceSlice and ResourceClaim(Template) rules live in the submodules.

mod claim;
mod slice;

pub(crate) use claim::{resource_claim, resource_claim_template};
pub(crate) use slice::resource_slice;

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

use dra_types::{Quantity, Semver, SemverError};
use k8s_openapi::api::core::v1::NodeSelector;
use k8s_openapi::api::resource::v1::{
    AllocationResult, CapacityRequestPolicy, CounterSet, Device, DeviceAttribute, DeviceClaim,
    DeviceClass, DeviceCounterConsumption, DeviceRequest, DeviceSelector, DeviceSubRequest,
    DeviceTaint, DeviceTaintRule, DeviceToleration, ExactDeviceRequest, OpaqueDeviceConfiguration,
    ResourceClaim, ResourceClaimStatus, ResourceClaimTemplate, ResourceSlice,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as WireQuantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;

use super::core::node_selector;
use super::names;
use super::{
    ADMIN_ACCESS_LABEL, AdminNamespaces, FieldPath, Report, duplicate, forbidden, invalid,
    not_found, not_supported, quote, required, too_long, too_many,
};
use crate::limits::*;

const TAINT_EFFECTS: &[&str] = &["NoExecute", "NoSchedule", "None"];
const TOLERATION_OPERATORS: &[&str] = &["Equal", "Exists"];
const ALLOCATION_MODES: &[&str] = &["All", "ExactCount"];
const CONFIG_SOURCES: &[&str] = &["FromClaim", "FromClass"];

// ---------------------------------------------------------------------------------
// shared pieces

/// The Kubernetes rule for list sizes: over the limit, only the size is reported.
pub(super) fn over_limit(r: &mut Report<'_>, path: &FieldPath<'_>, len: usize, max: usize) -> bool {
    if len > max {
        r.error(path, too_many(len, max));
        true
    } else {
        false
    }
}

/// `Duplicate value` for every entry whose key was seen before.
pub(super) fn duplicates<T, K: Ord + std::fmt::Display>(
    r: &mut Report<'_>,
    path: &FieldPath<'_>,
    items: &[T],
    key: impl Fn(&T) -> K,
) {
    let mut seen = BTreeSet::new();
    for (i, item) in items.iter().enumerate() {
        let k = key(item);
        if seen.contains(&k) {
            r.error(&path.index(i), duplicate(&k));
        } else {
            seen.insert(k);
        }
    }
}

/// Parses a wire quantity, reporting a decode error as the API server would.
pub(super) fn quantity(
    r: &mut Report<'_>,
    path: &FieldPath<'_>,
    q: &WireQuantity,
) -> Option<Quantity> {
    match Quantity::parse(q.0.trim()) {
        Ok(parsed) => Some(parsed),
        Err(err) => {
            r.error(path, invalid(quote(&q.0), &err.to_string()));
            None
        }
    }
}

/// CSI-style driver name: required, at most 63 bytes, a DNS subdomain ignoring case.
pub(super) fn driver_name(r: &mut Report<'_>, path: &FieldPath<'_>, name: &str) {
    if name.is_empty() {
        r.error(path, required(""));
        return;
    }
    if name.len() > DRIVER_NAME_MAX_LENGTH {
        r.error(path, too_long(DRIVER_NAME_MAX_LENGTH));
    }
    for msg in names::dns1123_subdomain(&name.to_lowercase()) {
        r.error(path, invalid(quote(name), &msg));
    }
}

/// One or more DNS subdomains separated by `/`, at most 253 bytes.
pub(super) fn pool_name(r: &mut Report<'_>, path: &FieldPath<'_>, name: &str) {
    if name.is_empty() {
        r.error(path, required(""));
        return;
    }
    if name.len() > POOL_NAME_MAX_LENGTH {
        r.error(path, too_long(POOL_NAME_MAX_LENGTH));
    }
    for part in name.split('/') {
        r.name_rule(path, part, names::dns1123_subdomain);
    }
}

pub(super) fn device_name(r: &mut Report<'_>, path: &FieldPath<'_>, name: &str) {
    r.name_rule(path, name, names::dns1123_label);
}

pub(super) fn c_identifier(r: &mut Report<'_>, path: &FieldPath<'_>, id: &str) {
    if id.len() > DEVICE_MAX_ID_LENGTH {
        r.error(path, too_long(DEVICE_MAX_ID_LENGTH));
    }
    r.name_rule(path, id, names::c_identifier);
}

/// Attribute and capacity names: `id` or `domain/id`.
pub(super) fn qualified_name(r: &mut Report<'_>, path: &FieldPath<'_>, name: &str) {
    let parts: Vec<&str> = name.split('/').collect();
    match parts.as_slice() {
        [id] => c_identifier(r, path, id),
        [domain, id] => {
            if domain.is_empty() {
                r.error(path, invalid("\"\"", "the domain must not be empty"));
            } else {
                driver_name(r, path, domain);
            }
            if id.is_empty() {
                r.error(path, invalid("\"\"", "the name must not be empty"));
            } else {
                c_identifier(r, path, id);
            }
        }
        _ => r.error(
            path,
            invalid(quote(name), "must not contain more than one slash"),
        ),
    }
}

/// Names that must carry a domain: constraints, partitionTypeAttribute.
pub(super) fn fully_qualified_name(r: &mut Report<'_>, path: &FieldPath<'_>, name: &str) {
    qualified_name(r, path, name);
    if !name.contains('/') {
        r.error(
            path,
            invalid(
                quote(name),
                "a fully qualified name must be a domain and a name separated by a slash",
            ),
        );
    }
}

const ATTRIBUTE_KEY_MAX: usize = DEVICE_MAX_DOMAIN_LENGTH + 1 + DEVICE_MAX_ID_LENGTH;

pub(super) fn selectors(
    r: &mut Report<'_>,
    path: &FieldPath<'_>,
    selectors: Option<&Vec<DeviceSelector>>,
) {
    let selectors = selectors.map(Vec::as_slice).unwrap_or_default();
    if over_limit(r, path, selectors.len(), DEVICE_SELECTORS_MAX_SIZE) {
        return;
    }
    for (i, selector) in selectors.iter().enumerate() {
        let item = path.index(i);
        let p = item.child("cel");
        match &selector.cel {
            None => r.error(&p, required("")),
            Some(cel) if cel.expression.len() > CEL_SELECTOR_EXPRESSION_MAX_LENGTH => {
                r.error(
                    &p.child("expression"),
                    too_long(CEL_SELECTOR_EXPRESSION_MAX_LENGTH),
                );
            }
            Some(_) => {}
        }
    }
}

/// `opaque` of a class or claim config entry.
pub(super) fn opaque_config(
    r: &mut Report<'_>,
    path: &FieldPath<'_>,
    opaque: Option<&OpaqueDeviceConfiguration>,
) {
    let p = path.child("opaque");
    let Some(opaque) = opaque else {
        r.error(&p, required(""));
        return;
    };
    driver_name(r, &p.child("driver"), &opaque.driver);
    raw_extension(
        r,
        &p.child("parameters"),
        &opaque.parameters.0,
        OPAQUE_PARAMETERS_MAX_LENGTH,
    );
}

/// Free-form JSON that must be an object and not too large.
pub(super) fn raw_extension(
    r: &mut Report<'_>,
    path: &FieldPath<'_>,
    value: &serde_json::Value,
    max: usize,
) {
    if value.is_null() {
        r.error(path, required(""));
        return;
    }
    let len = serde_json::to_vec(value).map_or(0, |v| v.len());
    if len > max {
        r.error(path, too_long(max));
    } else if !value.is_object() {
        r.error(
            path,
            invalid("<value omitted>", "must be a valid JSON object"),
        );
    }
}

pub(super) fn device_taint(r: &mut Report<'_>, path: &FieldPath<'_>, taint: &DeviceTaint) {
    r.name_rule(&path.child("key"), &taint.key, names::qualified_name);
    if let Some(value) = taint.value.as_deref().filter(|v| !v.is_empty()) {
        r.name_rule(&path.child("value"), value, names::label_value);
    }
    match taint.effect.as_str() {
        "" => r.error(&path.child("effect"), required("")),
        effect if !TAINT_EFFECTS.contains(&effect) => {
            r.error(&path.child("effect"), not_supported(effect, TAINT_EFFECTS));
        }
        _ => {}
    }
}

pub(super) fn device_tolerations(
    r: &mut Report<'_>,
    path: &FieldPath<'_>,
    tolerations: Option<&Vec<DeviceToleration>>,
) {
    let tolerations = tolerations.map(Vec::as_slice).unwrap_or_default();
    if tolerations.len() > DEVICE_TOLERATIONS_MAX_LENGTH {
        r.warning(
            path,
            format!(
                "{} (a documented limit the API server does not enforce)",
                too_many(tolerations.len(), DEVICE_TOLERATIONS_MAX_LENGTH)
            ),
        );
    }
    for (i, toleration) in tolerations.iter().enumerate() {
        device_toleration(r, &path.index(i), toleration);
    }
}

pub(super) fn device_toleration(r: &mut Report<'_>, path: &FieldPath<'_>, t: &DeviceToleration) {
    let key = t.key.as_deref().unwrap_or_default();
    let value = t.value.as_deref().unwrap_or_default();
    let operator = t.operator.as_deref().unwrap_or_default();
    let effect = t.effect.as_deref().unwrap_or_default();
    if !key.is_empty() {
        r.name_rule(&path.child("key"), key, names::qualified_name);
    }
    match operator {
        "Exists" => {
            if !value.is_empty() {
                r.error(
                    &path.child("value"),
                    invalid(quote(value), "must be empty for operator `Exists`"),
                );
            }
        }
        "Equal" => r.name_rule(&path.child("value"), value, names::label_value),
        "" => r.error(&path.child("operator"), required("")),
        other => r.error(
            &path.child("operator"),
            not_supported(other, TOLERATION_OPERATORS),
        ),
    }
    if !effect.is_empty() && !TAINT_EFFECTS.contains(&effect) {
        r.error(&path.child("effect"), not_supported(effect, TAINT_EFFECTS));
    }
    if key.is_empty() && operator != "Exists" {
        r.warning(
            &path.child("operator"),
            invalid(
                quote(operator),
                "an empty key requires operator `Exists` (documented; the API server does not enforce it)",
            ),
        );
    }
    if t.toleration_seconds.is_some() && effect != "NoExecute" {
        r.warning(
            &path.child("tolerationSeconds"),
            "tolerationSeconds is ignored unless effect is `NoExecute`".to_string(),
        );
    }
}

pub(super) fn binding_conditions(
    r: &mut Report<'_>,
    path: &FieldPath<'_>,
    conditions: &[String],
    failures: &[String],
) {
    let cond_path = path.child("bindingConditions");
    let fail_path = path.child("bindingFailureConditions");
    if !over_limit(r, &cond_path, conditions.len(), BINDING_CONDITIONS_MAX_SIZE) {
        for (i, c) in conditions.iter().enumerate() {
            r.name_rule(&cond_path.index(i), c, names::qualified_name);
        }
    }
    if !over_limit(
        r,
        &fail_path,
        failures.len(),
        BINDING_FAILURE_CONDITIONS_MAX_SIZE,
    ) {
        for (i, c) in failures.iter().enumerate() {
            r.name_rule(&fail_path.index(i), c, names::qualified_name);
        }
    }
    duplicates(r, &cond_path, conditions, |c| quote(c));
    duplicates(r, &fail_path, failures, |c| quote(c));
    for (i, c) in failures.iter().enumerate() {
        if conditions.contains(c) {
            r.error(
                &fail_path.index(i),
                invalid(
                    quote(c),
                    "bindingFailureConditions must not overlap with bindingConditions",
                ),
            );
        }
    }
    if conditions.is_empty() && !failures.is_empty() {
        r.error(
            &cond_path,
            invalid(
                "[]",
                "bindingConditions are required to use bindingFailureConditions",
            ),
        );
    }
    if failures.is_empty() && !conditions.is_empty() {
        r.error(
            &fail_path,
            invalid(
                "[]",
                "bindingFailureConditions are required to use bindingConditions",
            ),
        );
    }
}

pub(super) fn skip_node_operations(
    r: &mut Report<'_>,
    path: &FieldPath<'_>,
    ops: Option<&Vec<String>>,
) {
    let ops = ops.map(Vec::as_slice).unwrap_or_default();
    let has = |op: &str| ops.iter().any(|o| o == op);
    if has("NodePrepareResources") && !has("NodeUnprepareResources") && !has("*") {
        r.error(
            path,
            invalid(format!("{ops:?}"), "NodePrepareResources cannot be skipped unless NodeUnprepareResources is also skipped"),
        );
    }
}

pub(super) fn shared_device_id(
    driver: &str,
    pool: &str,
    device: &str,
    share_id: Option<&str>,
) -> String {
    match share_id {
        Some(id) => format!("{driver}/{pool}/{device}/{id}"),
        None => format!("{driver}/{pool}/{device}"),
    }
}

pub(super) fn uuid(r: &mut Report<'_>, path: &FieldPath<'_>, uid: &str) {
    let b = uid.as_bytes();
    let ok = b.len() == 36
        && b.iter().enumerate().all(|(i, &c)| match i {
            8 | 13 | 18 | 23 => c == b'-',
            _ => c.is_ascii_digit() || (b'a'..=b'f').contains(&c),
        });
    if !ok {
        r.error(
            path,
            invalid(
                quote(uid),
                "uid must be in RFC 4122 normalized form, `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx` with lowercase hexadecimal characters",
            ),
        );
    }
}

pub(super) fn conditions(r: &mut Report<'_>, path: &FieldPath<'_>, conditions: &[Condition]) {
    duplicates(r, path, conditions, |c| quote(&c.type_));
    for (i, c) in conditions.iter().enumerate() {
        let p = path.index(i);
        if c.type_.is_empty() {
            r.error(&p.child("type"), required("must be set"));
        } else {
            r.name_rule(&p.child("type"), &c.type_, names::qualified_name);
        }
        if !matches!(c.status.as_str(), "True" | "False" | "Unknown") {
            r.error(
                &p.child("status"),
                not_supported(&c.status, &["False", "True", "Unknown"]),
            );
        }
        if c.reason.is_empty() {
            r.error(&p.child("reason"), required("must be set"));
        } else {
            let b = c.reason.as_bytes();
            let ok = b[0].is_ascii_alphabetic()
                && (b.len() == 1
                    || b[b.len() - 1].is_ascii_alphanumeric()
                    || b[b.len() - 1] == b'_')
                && b.iter()
                    .all(|&x| x.is_ascii_alphanumeric() || matches!(x, b'_' | b',' | b':'));
            if !ok {
                r.error(
                    &p.child("reason"),
                    invalid(
                        quote(&c.reason),
                        "a condition reason must start with alphabetic character, optionally followed by a string of alphanumeric characters or '_,:', and must end with an alphanumeric character or '_' (e.g. 'my_name',  or 'MY_NAME',  or 'MyName',  or 'ReasonA,ReasonB',  or 'ReasonA:ReasonB', regex used for validation is '[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?')",
                    ),
                );
            }
            if c.reason.len() > 1024 {
                r.error(&p.child("reason"), too_long(1024));
            }
        }
        if c.message.len() > 32 * 1024 {
            r.error(&p.child("message"), too_long(32 * 1024));
        }
        if let Some(generation) = c.observed_generation.filter(|g| *g < 0) {
            r.error(
                &p.child("observedGeneration"),
                invalid(generation, "must be greater than or equal to zero"),
            );
        }
    }
}

// ---------------------------------------------------------------------------------
// DeviceClass

pub(crate) fn device_class(r: &mut Report<'_>, class: &DeviceClass) {
    let path = FieldPath::new("spec");
    let Some(spec) = &class.spec else { return };
    selectors(r, &path.child("selectors"), spec.selectors.as_ref());
    let config = spec.config.as_deref().unwrap_or_default();
    let config_path = path.child("config");
    if !over_limit(r, &config_path, config.len(), DEVICE_CONFIG_MAX_SIZE) {
        for (i, c) in config.iter().enumerate() {
            opaque_config(r, &config_path.index(i), c.opaque.as_ref());
        }
    }
    if let Some(name) = &spec.extended_resource_name
        && !names::is_extended_resource_name(name)
    {
        r.error(
            &path.child("extendedResourceName"),
            invalid(quote(name), "must be a valid extended resource name"),
        );
    }
}

// ---------------------------------------------------------------------------------
// DeviceTaintRule

pub(crate) fn device_taint_rule(r: &mut Report<'_>, rule: &DeviceTaintRule) {
    let path = FieldPath::new("spec");
    if let Some(selector) = &rule.spec.device_selector {
        let p = path.child("deviceSelector");
        if let Some(driver) = &selector.driver {
            driver_name(r, &p.child("driver"), driver);
        }
        if let Some(pool) = &selector.pool {
            pool_name(r, &p.child("pool"), pool);
        }
        if let Some(device) = &selector.device {
            device_name(r, &p.child("device"), device);
        }
    }
    device_taint(r, &path.child("taint"), &rule.spec.taint);
    if let Some(status) = &rule.status {
        let conds = status.conditions.as_deref().unwrap_or_default();
        let status_path = FieldPath::new("status");
        let p = status_path.child("conditions");
        if conds.len() > DEVICE_TAINT_RULE_STATUS_MAX_CONDITIONS {
            r.error(
                &p,
                too_many(conds.len(), DEVICE_TAINT_RULE_STATUS_MAX_CONDITIONS),
            );
        }
        conditions(r, &p, conds);
    }
}
