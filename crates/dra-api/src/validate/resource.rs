//! resource.k8s.io/v1: DeviceClass, ResourceSlice, ResourceClaim (spec and status),
//! ResourceClaimTemplate, DeviceTaintRule.

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
fn over_limit(r: &mut Report<'_>, path: &FieldPath, len: usize, max: usize) -> bool {
    if len > max {
        r.error(path, too_many(len, max));
        true
    } else {
        false
    }
}

/// `Duplicate value` for every entry whose key was seen before.
fn duplicates<T, K: Ord + std::fmt::Display>(
    r: &mut Report<'_>,
    path: &FieldPath,
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
fn quantity(r: &mut Report<'_>, path: &FieldPath, q: &WireQuantity) -> Option<Quantity> {
    match Quantity::parse(q.0.trim()) {
        Ok(parsed) => Some(parsed),
        Err(err) => {
            r.error(path, invalid(quote(&q.0), &err.to_string()));
            None
        }
    }
}

/// CSI-style driver name: required, at most 63 bytes, a DNS subdomain ignoring case.
fn driver_name(r: &mut Report<'_>, path: &FieldPath, name: &str) {
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
fn pool_name(r: &mut Report<'_>, path: &FieldPath, name: &str) {
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

fn device_name(r: &mut Report<'_>, path: &FieldPath, name: &str) {
    r.name_rule(path, name, names::dns1123_label);
}

fn c_identifier(r: &mut Report<'_>, path: &FieldPath, id: &str) {
    if id.len() > DEVICE_MAX_ID_LENGTH {
        r.error(path, too_long(DEVICE_MAX_ID_LENGTH));
    }
    r.name_rule(path, id, names::c_identifier);
}

/// Attribute and capacity names: `id` or `domain/id`.
fn qualified_name(r: &mut Report<'_>, path: &FieldPath, name: &str) {
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
fn fully_qualified_name(r: &mut Report<'_>, path: &FieldPath, name: &str) {
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

/// Map keys in paths are shortened like Kubernetes does for long keys.
fn truncated(key: &str, max: usize) -> String {
    let max = max.max(16);
    if key.len() <= max || !key.is_ascii() {
        return key.to_string();
    }
    let remaining = max - 3;
    format!(
        "{}...{}",
        &key[..remaining.div_ceil(2)],
        &key[key.len() - remaining / 2..]
    )
}

const ATTRIBUTE_KEY_MAX: usize = DEVICE_MAX_DOMAIN_LENGTH + 1 + DEVICE_MAX_ID_LENGTH;

fn selectors(r: &mut Report<'_>, path: &FieldPath, selectors: Option<&Vec<DeviceSelector>>) {
    let selectors = selectors.map(Vec::as_slice).unwrap_or_default();
    if over_limit(r, path, selectors.len(), DEVICE_SELECTORS_MAX_SIZE) {
        return;
    }
    for (i, selector) in selectors.iter().enumerate() {
        let p = path.index(i).child("cel");
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
fn opaque_config(r: &mut Report<'_>, path: &FieldPath, opaque: Option<&OpaqueDeviceConfiguration>) {
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
fn raw_extension(r: &mut Report<'_>, path: &FieldPath, value: &serde_json::Value, max: usize) {
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

fn device_taint(r: &mut Report<'_>, path: &FieldPath, taint: &DeviceTaint) {
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

fn device_tolerations(
    r: &mut Report<'_>,
    path: &FieldPath,
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

fn device_toleration(r: &mut Report<'_>, path: &FieldPath, t: &DeviceToleration) {
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

fn binding_conditions(
    r: &mut Report<'_>,
    path: &FieldPath,
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

fn skip_node_operations(r: &mut Report<'_>, path: &FieldPath, ops: Option<&Vec<String>>) {
    let ops = ops.map(Vec::as_slice).unwrap_or_default();
    let has = |op: &str| ops.iter().any(|o| o == op);
    if has("NodePrepareResources") && !has("NodeUnprepareResources") && !has("*") {
        r.error(
            path,
            invalid(format!("{ops:?}"), "NodePrepareResources cannot be skipped unless NodeUnprepareResources is also skipped"),
        );
    }
}

fn shared_device_id(driver: &str, pool: &str, device: &str, share_id: Option<&str>) -> String {
    match share_id {
        Some(id) => format!("{driver}/{pool}/{device}/{id}"),
        None => format!("{driver}/{pool}/{device}"),
    }
}

fn uuid(r: &mut Report<'_>, path: &FieldPath, uid: &str) {
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

fn conditions(r: &mut Report<'_>, path: &FieldPath, conditions: &[Condition]) {
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
// ResourceSlice

pub(crate) fn resource_slice(r: &mut Report<'_>, slice: &ResourceSlice) {
    let spec = &slice.spec;
    let path = FieldPath::new("spec");
    driver_name(r, &path.child("driver"), &spec.driver);
    let pool_path = path.child("pool");
    pool_name(r, &pool_path.child("name"), &spec.pool.name);
    if spec.pool.resource_slice_count <= 0 {
        r.error(
            &pool_path.child("resourceSliceCount"),
            invalid(spec.pool.resource_slice_count, "must be greater than zero"),
        );
    }
    if spec.pool.generation < 0 {
        r.error(
            &pool_path.child("generation"),
            invalid(
                spec.pool.generation,
                "must be greater than or equal to zero",
            ),
        );
    }

    let mut set_fields = Vec::new();
    if let Some(node_name) = &spec.node_name {
        if node_name.is_empty() {
            r.error(
                &path.child("nodeName"),
                invalid("\"\"", "must be either unset or set to a non-empty string"),
            );
        } else {
            set_fields.push("`nodeName`");
            r.name_rule(&path.child("nodeName"), node_name, names::dns1123_subdomain);
        }
    }
    if let Some(selector) = &spec.node_selector {
        set_fields.push("`nodeSelector`");
        slice_node_selector(r, &path.child("nodeSelector"), selector);
    }
    if let Some(all) = spec.all_nodes {
        if all {
            set_fields.push("`allNodes`");
        } else {
            r.error(
                &path.child("allNodes"),
                invalid(false, "must be either unset or set to true"),
            );
        }
    }
    if let Some(per_device) = spec.per_device_node_selection {
        if per_device {
            set_fields.push("`perDeviceNodeSelection`");
        } else {
            r.error(
                &path.child("perDeviceNodeSelection"),
                invalid(false, "must be either unset or set to true"),
            );
        }
    }
    match set_fields.len() {
        0 => r.error(
            &path,
            required("exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required"),
        ),
        1 => {}
        _ => r.error(
            &path,
            invalid(
                format!("{{{}}}", set_fields.join(", ")),
                "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required, but multiple fields are set",
            ),
        ),
    }

    if spec.shared_counters.is_some() && spec.devices.is_some() {
        r.error(
            &path,
            invalid(
                "\"\"",
                "only one of `sharedCounters` or `devices` is allowed",
            ),
        );
    }

    let devices = spec.devices.as_deref().unwrap_or_default();
    let advanced = devices.iter().any(|d| {
        d.taints.as_ref().is_some_and(|t| !t.is_empty())
            || d.consumes_counters.as_ref().is_some_and(|c| !c.is_empty())
            || d.attributes
                .iter()
                .flatten()
                .any(|(_, a)| is_list_attribute(a))
    });
    let max_devices = if advanced {
        RESOURCE_SLICE_MAX_DEVICES_WITH_ADVANCED_FEATURES
    } else {
        RESOURCE_SLICE_MAX_DEVICES
    };
    let devices_path = path.child("devices");
    if !over_limit(r, &devices_path, devices.len(), max_devices) {
        for (i, device) in devices.iter().enumerate() {
            validate_device(
                r,
                &devices_path.index(i),
                device,
                spec.per_device_node_selection,
            );
        }
        duplicates(r, &devices_path, devices, |d| quote(&d.name));
    }

    let counter_sets = spec.shared_counters.as_deref().unwrap_or_default();
    let counters_path = path.child("sharedCounters");
    if !over_limit(
        r,
        &counters_path,
        counter_sets.len(),
        RESOURCE_SLICE_MAX_COUNTER_SETS,
    ) {
        for (i, set) in counter_sets.iter().enumerate() {
            counter_set(r, &counters_path.index(i), set);
        }
        duplicates(r, &counters_path, counter_sets, |s| quote(&s.name));
    }

    if let Some(name) = &spec.partition_type_attribute {
        partition_type_attribute(r, &path, name, &spec.driver, devices);
    }
    skip_node_operations(
        r,
        &path.child("skipNodeOperations"),
        spec.skip_node_operations.as_ref(),
    );
}

fn slice_node_selector(r: &mut Report<'_>, path: &FieldPath, selector: &NodeSelector) {
    node_selector(r, path, selector);
    if selector.node_selector_terms.len() != 1 {
        r.error(
            &path.child("nodeSelectorTerms"),
            invalid(
                format!("<{} terms>", selector.node_selector_terms.len()),
                "must have exactly one node selector term",
            ),
        );
    }
}

fn is_list_attribute(a: &DeviceAttribute) -> bool {
    a.bools.is_some() || a.ints.is_some() || a.strings.is_some() || a.versions.is_some()
}

fn validate_device(
    r: &mut Report<'_>,
    path: &FieldPath,
    device: &Device,
    per_device_node_selection: Option<bool>,
) {
    device_name(r, &path.child("name"), &device.name);
    let attributes = device.attributes.as_ref();
    let capacity = device.capacity.as_ref();
    let count = attributes.map_or(0, BTreeMap::len) + capacity.map_or(0, BTreeMap::len);
    if count > RESOURCE_SLICE_MAX_ATTRIBUTES_AND_CAPACITIES_PER_DEVICE {
        r.error(
            path,
            invalid(
                count,
                &format!(
                    "the total number of attributes and capacities must not exceed {RESOURCE_SLICE_MAX_ATTRIBUTES_AND_CAPACITIES_PER_DEVICE}"
                ),
            ),
        );
    }
    let values: usize = attributes
        .into_iter()
        .flatten()
        .map(|(_, a)| {
            let list = a.bools.as_ref().map_or(0, Vec::len)
                + a.ints.as_ref().map_or(0, Vec::len)
                + a.strings.as_ref().map_or(0, Vec::len)
                + a.versions.as_ref().map_or(0, Vec::len);
            if list == 0 { 1 } else { list }
        })
        .sum();
    if values > RESOURCE_SLICE_MAX_ATTRIBUTE_VALUES_PER_DEVICE {
        r.error(
            path,
            invalid(
                values,
                &format!(
                    "the total number of attribute values must not exceed {RESOURCE_SLICE_MAX_ATTRIBUTE_VALUES_PER_DEVICE}"
                ),
            ),
        );
    }

    let attr_path = path.child("attributes");
    for (key, attribute) in attributes.into_iter().flatten() {
        qualified_name(r, &attr_path, key);
        device_attribute(
            r,
            &attr_path.key(&truncated(key, ATTRIBUTE_KEY_MAX)),
            attribute,
        );
    }
    let allow_multiple = device.allow_multiple_allocations == Some(true);
    let cap_path = path.child("capacity");
    for (key, cap) in capacity.into_iter().flatten() {
        qualified_name(r, &cap_path, key);
        let p = cap_path.key(&truncated(key, ATTRIBUTE_KEY_MAX));
        let value = quantity(r, &p.child("value"), &cap.value);
        match (&cap.request_policy, allow_multiple) {
            (Some(policy), true) => {
                if let Some(value) = value {
                    request_policy(r, &p.child("requestPolicy"), &value, policy);
                }
            }
            (Some(_), false) => r.error(
                &p.child("requestPolicy"),
                forbidden("allowMultipleAllocations must be true"),
            ),
            (None, _) => {}
        }
    }

    let taints = device.taints.as_deref().unwrap_or_default();
    let taints_path = path.child("taints");
    if !over_limit(r, &taints_path, taints.len(), DEVICE_TAINTS_MAX_LENGTH) {
        for (i, taint) in taints.iter().enumerate() {
            device_taint(r, &taints_path.index(i), taint);
        }
    }

    let consumptions = device.consumes_counters.as_deref().unwrap_or_default();
    let consumes_path = path.child("consumesCounters");
    if !over_limit(
        r,
        &consumes_path,
        consumptions.len(),
        RESOURCE_SLICE_MAX_DEVICE_COUNTER_CONSUMPTIONS_PER_DEVICE,
    ) {
        for (i, c) in consumptions.iter().enumerate() {
            counter_consumption(r, &consumes_path.index(i), c);
        }
        duplicates(r, &consumes_path, consumptions, |c| quote(&c.counter_set));
    }

    let selection_fields = [
        device.node_name.is_some(),
        device.node_selector.is_some(),
        device.all_nodes.is_some(),
    ];
    if per_device_node_selection == Some(true) {
        let mut set_fields = Vec::new();
        if let Some(node_name) = &device.node_name {
            if node_name.is_empty() {
                r.error(
                    &path.child("nodeName"),
                    invalid("\"\"", "must not be empty"),
                );
            } else {
                set_fields.push("`nodeName`");
                r.name_rule(&path.child("nodeName"), node_name, names::dns1123_subdomain);
            }
        }
        if let Some(selector) = &device.node_selector {
            set_fields.push("`nodeSelector`");
            node_selector(r, &path.child("nodeSelector"), selector);
        }
        if let Some(all) = device.all_nodes {
            if all {
                set_fields.push("`allNodes`");
            } else {
                r.error(
                    &path.child("allNodes"),
                    invalid(false, "must be either unset or set to true"),
                );
            }
        }
        const ONE_OF: &str = "exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required when `perDeviceNodeSelection` is set to true in the ResourceSlice spec";
        match set_fields.len() {
            0 => r.error(path, required(ONE_OF)),
            1 => {}
            _ => r.error(
                path,
                invalid(format!("{{{}}}", set_fields.join(", ")), ONE_OF),
            ),
        }
    } else if selection_fields.iter().any(|&set| set) {
        r.error(
            path,
            invalid(
                "null",
                "`nodeName`, `nodeSelector` and `allNodes` can only be set if `perDeviceNodeSelection` is set to true in the ResourceSlice spec",
            ),
        );
    }

    binding_conditions(
        r,
        path,
        device.binding_conditions.as_deref().unwrap_or_default(),
        device
            .binding_failure_conditions
            .as_deref()
            .unwrap_or_default(),
    );
    node_allocatable_resources(r, &path.child("nodeAllocatableResources"), device);
}

fn device_attribute(r: &mut Report<'_>, path: &FieldPath, a: &DeviceAttribute) {
    let mut fields = 0;
    if a.bool.is_some() {
        fields += 1;
    }
    if a.int.is_some() {
        fields += 1;
    }
    if let Some(s) = &a.string {
        fields += 1;
        attribute_string(r, &path.child("string"), s);
    }
    if let Some(v) = &a.version {
        fields += 1;
        attribute_version(r, &path.child("version"), v);
    }
    for (name, len) in [
        ("bools", a.bools.as_ref().map(Vec::len)),
        ("ints", a.ints.as_ref().map(Vec::len)),
        ("strings", a.strings.as_ref().map(Vec::len)),
        ("versions", a.versions.as_ref().map(Vec::len)),
    ] {
        if let Some(len) = len {
            fields += 1;
            if len == 0 {
                r.error(
                    &path.child(name),
                    invalid("[]", "must not be empty if specified"),
                );
            }
        }
    }
    for (i, s) in a.strings.iter().flatten().enumerate() {
        attribute_string(r, &path.child("strings").index(i), s);
    }
    for (i, v) in a.versions.iter().flatten().enumerate() {
        attribute_version(r, &path.child("versions").index(i), v);
    }
    match fields {
        0 => r.error(path, invalid("\"\"", "exactly one value must be specified")),
        1 => {}
        _ => r.error(
            path,
            invalid("<multiple values>", "exactly one value must be specified"),
        ),
    }
}

fn attribute_string(r: &mut Report<'_>, path: &FieldPath, s: &str) {
    if s.len() > DEVICE_ATTRIBUTE_MAX_VALUE_LENGTH {
        r.error(path, too_long(DEVICE_ATTRIBUTE_MAX_VALUE_LENGTH));
    }
}

/// The API server checks versions with a semver.org 2.0.0 regular expression; it
/// accepts numbers too large for 64 bits, which a strict parse rejects.
fn attribute_version(r: &mut Report<'_>, path: &FieldPath, v: &str) {
    let valid = match Semver::parse(v) {
        Ok(_) => true,
        Err(SemverError::NumberOutOfRange { .. } | SemverError::PreReleaseOutOfRange(_)) => true,
        Err(_) => false,
    };
    if !valid {
        r.error(
            path,
            invalid(
                quote(v),
                "must be a string compatible with semver.org spec 2.0.0",
            ),
        );
    }
    if v.len() > DEVICE_ATTRIBUTE_MAX_VALUE_LENGTH {
        r.error(path, too_long(DEVICE_ATTRIBUTE_MAX_VALUE_LENGTH));
    }
}

fn counter_set(r: &mut Report<'_>, path: &FieldPath, set: &CounterSet) {
    if set.name.is_empty() {
        r.error(&path.child("name"), required(""));
    } else {
        r.name_rule(&path.child("name"), &set.name, names::dns1123_label);
    }
    counters(
        r,
        &path.child("counters"),
        &set.counters,
        RESOURCE_SLICE_MAX_COUNTERS_PER_COUNTER_SET,
    );
}

fn counter_consumption(r: &mut Report<'_>, path: &FieldPath, c: &DeviceCounterConsumption) {
    if c.counter_set.is_empty() {
        r.error(&path.child("counterSet"), required(""));
    } else {
        r.name_rule(
            &path.child("counterSet"),
            &c.counter_set,
            names::dns1123_label,
        );
    }
    counters(
        r,
        &path.child("counters"),
        &c.counters,
        RESOURCE_SLICE_MAX_COUNTERS_PER_DEVICE_COUNTER_CONSUMPTION,
    );
}

fn counters(
    r: &mut Report<'_>,
    path: &FieldPath,
    counters: &BTreeMap<String, k8s_openapi::api::resource::v1::Counter>,
    max: usize,
) {
    if counters.is_empty() {
        r.error(path, required(""));
        return;
    }
    if over_limit(r, path, counters.len(), max) {
        return;
    }
    for (name, counter) in counters {
        r.name_rule(path, name, names::dns1123_label);
        quantity(
            r,
            &path.key(&truncated(name, 63)).child("value"),
            &counter.value,
        );
    }
}

fn partition_type_attribute(
    r: &mut Report<'_>,
    path: &FieldPath,
    name: &str,
    driver: &str,
    devices: &[Device],
) {
    let attr_path = path.child("partitionTypeAttribute");
    if !devices
        .iter()
        .any(|d| d.consumes_counters.as_ref().is_some_and(|c| !c.is_empty()))
    {
        r.error(
            &attr_path,
            invalid(
                quote(name),
                "may only be set on a slice which declares devices that consume counters",
            ),
        );
        return;
    }
    let before = r.out.len();
    fully_qualified_name(r, &attr_path, name);
    if r.out.len() > before {
        return;
    }
    let prefix = format!("{driver}/");
    let bare = name.strip_prefix(&prefix).unwrap_or_default();
    for (i, device) in devices.iter().enumerate() {
        if device.consumes_counters.as_ref().is_none_or(Vec::is_empty) {
            continue;
        }
        let p = path.child("devices").index(i).child("attributes").key(name);
        let attributes = device.attributes.as_ref();
        let attribute = attributes.and_then(|a| a.get(name)).or_else(|| {
            (!bare.is_empty())
                .then(|| attributes.and_then(|a| a.get(bare)))
                .flatten()
        });
        match attribute {
            None => r.error(
                &p,
                required("device consumes counters and `partitionTypeAttribute` names this attribute, so it must be set"),
            ),
            Some(a) if a.string.is_none() => r.error(
                &p,
                invalid("<attribute>", "must be a string value because `partitionTypeAttribute` names this attribute"),
            ),
            Some(_) => {}
        }
    }
}

fn node_allocatable_resources(r: &mut Report<'_>, path: &FieldPath, device: &Device) {
    for (name, resource) in device.node_allocatable_resources.iter().flatten() {
        let p = path.key(name);
        if resource.mapping.is_none() && resource.overhead.is_none() {
            r.error(
                &p,
                required("at least one of mapping or overhead must be set"),
            );
        }
        if let Some(mapping) = &resource.mapping {
            let mp = p.child("mapping");
            if let Some(key) = &mapping.capacity_key {
                if key.is_empty() {
                    r.error(
                        &mp.child("capacityKey"),
                        invalid("\"\"", "capacityKey must not be an empty string"),
                    );
                } else if !device
                    .capacity
                    .as_ref()
                    .is_some_and(|c| c.contains_key(key))
                {
                    r.error(&mp.child("capacityKey"), not_found(quote(key)));
                }
                match &mapping.capacity_multiplier {
                    None => r.error(
                        &mp.child("capacityMultiplier"),
                        required("capacityMultiplier is required when capacityKey is set"),
                    ),
                    Some(q) => positive(r, &mp.child("capacityMultiplier"), q),
                }
            } else if mapping.capacity_multiplier.is_some() {
                r.error(
                    &mp.child("capacityKey"),
                    required("capacityKey is required when capacityMultiplier is set"),
                );
            }
            if let Some(q) = &mapping.device_multiplier {
                positive(r, &mp.child("deviceMultiplier"), q);
            }
        }
        if let Some(overhead) = &resource.overhead {
            let op = p.child("overhead");
            if overhead.per_pod.is_none() && overhead.per_container.is_none() {
                r.error(
                    &op,
                    invalid("\"\"", "at least one of perPod or perContainer must be set"),
                );
            }
            for (field, q) in [
                ("perPod", &overhead.per_pod),
                ("perContainer", &overhead.per_container),
            ] {
                if let Some(q) = q
                    && let Some(parsed) = quantity(r, &op.child(field), q)
                    && parsed.sign() < 0
                {
                    r.error(
                        &op.child(field),
                        invalid(quote(&parsed.to_string()), "must be non-negative"),
                    );
                }
            }
        }
    }
}

fn positive(r: &mut Report<'_>, path: &FieldPath, q: &WireQuantity) {
    if let Some(parsed) = quantity(r, path, q)
        && parsed.sign() <= 0
    {
        r.error(
            path,
            invalid(quote(&parsed.to_string()), "must be positive"),
        );
    }
}

/// `requestPolicy` of a capacity of a device that allows multiple allocations.
fn request_policy(
    r: &mut Report<'_>,
    path: &FieldPath,
    capacity: &Quantity,
    policy: &CapacityRequestPolicy,
) {
    let valid_values = policy.valid_values.as_deref().unwrap_or_default();
    if !valid_values.is_empty() && policy.valid_range.is_some() {
        r.error(
            path,
            forbidden(r#"exactly one policy can be specified, cannot specify "validValues" and "validRange" at the same time"#),
        );
        return;
    }
    let default = match &policy.default {
        Some(q) => match quantity(r, &path.child("default"), q) {
            Some(d) => Some(d),
            None => return,
        },
        None => None,
    };
    if !valid_values.is_empty() {
        let Some(default) = default else {
            r.error(
                &path.child("default"),
                required("required when validValues is defined"),
            );
            return;
        };
        valid_values_policy(
            r,
            &path.child("validValues"),
            capacity,
            &default,
            valid_values,
        );
    } else if let Some(range) = &policy.valid_range {
        let Some(default) = default else {
            r.error(
                &path.child("default"),
                required("required when validRange is defined"),
            );
            return;
        };
        valid_range_policy(r, &path.child("validRange"), capacity, &default, range);
    }
}

fn valid_values_policy(
    r: &mut Report<'_>,
    path: &FieldPath,
    capacity: &Quantity,
    default: &Quantity,
    values: &[WireQuantity],
) {
    let parsed: Vec<Option<Quantity>> = values
        .iter()
        .enumerate()
        .map(|(i, q)| quantity(r, &path.index(i), q))
        .collect();
    if parsed.iter().any(Option::is_none) {
        return;
    }
    let parsed: Vec<Quantity> = parsed.into_iter().flatten().collect();
    for i in 1..parsed.len() {
        if parsed[i - 1] > parsed[i] {
            r.error(
                &path.index(i),
                invalid(
                    quote(&parsed[i].to_string()),
                    "values must be sorted in ascending order",
                ),
            );
        }
    }
    let mut found_default = false;
    if !over_limit(
        r,
        path,
        parsed.len(),
        CAPACITY_REQUEST_POLICY_DISCRETE_MAX_OPTIONS,
    ) {
        for (i, option) in parsed.iter().enumerate() {
            if option > capacity {
                r.error(
                    &path.index(i),
                    invalid(
                        quote(&option.to_string()),
                        &format!("option is larger than capacity value: {capacity}"),
                    ),
                );
            }
            if option == default {
                found_default = true;
            }
        }
        // Duplicates by exact value (DRAFractionalCapacityRange, on by default in 1.37).
        duplicates(r, path, &parsed, |q| quote(&q.to_string()));
    }
    if !found_default {
        r.error(
            path,
            invalid(
                quote(&default.to_string()),
                "default value is not valid according to the requestPolicy",
            ),
        );
    }
}

fn valid_range_policy(
    r: &mut Report<'_>,
    path: &FieldPath,
    capacity: &Quantity,
    default: &Quantity,
    range: &k8s_openapi::api::resource::v1::CapacityRequestPolicyRange,
) {
    if range.min.0.trim().is_empty() {
        r.error(
            &path.child("min"),
            required("required when validRange is defined"),
        );
        return;
    }
    let Some(min) = quantity(r, &path.child("min"), &range.min) else {
        return;
    };
    let max = match &range.max {
        Some(q) => match quantity(r, &path.child("max"), q) {
            Some(m) => Some(m),
            None => return,
        },
        None => None,
    };
    let step = match &range.step {
        Some(q) => match quantity(r, &path.child("step"), q) {
            Some(s) => Some(s),
            None => return,
        },
        None => None,
    };
    if &min > capacity {
        r.error(
            &path.child("min"),
            invalid(
                quote(&min.to_string()),
                &format!("min is larger than capacity value: {capacity}"),
            ),
        );
    }
    if default < &min {
        r.error(
            &path.child("default"),
            invalid(
                quote(&default.to_string()),
                &format!("default is less than min: {min}"),
            ),
        );
    }
    if let Some(max) = &max {
        if &min > max {
            r.error(
                &path.child("max"),
                invalid(
                    quote(&min.to_string()),
                    &format!("min is larger than max: {max}"),
                ),
            );
        }
        if max > capacity {
            r.error(
                &path.child("max"),
                invalid(
                    quote(&max.to_string()),
                    &format!("max is larger than capacity value: {capacity}"),
                ),
            );
        }
        if default > max {
            r.error(
                &path.child("default"),
                invalid(
                    quote(&default.to_string()),
                    &format!("default is more than max: {max}"),
                ),
            );
        }
    }
    let is_fractional = |q: &Quantity| q.as_nanos() % 1_000_000_000 != 0;
    let named = [
        ("default", Some(default)),
        ("min", Some(&min)),
        ("max", max.as_ref()),
        ("step", step.as_ref()),
    ];
    // DRAFractionalCapacityRange (beta, on by default in 1.37): milli-unit arithmetic
    // as soon as any value has a fraction.
    let use_milli = [Some(&min), max.as_ref(), step.as_ref(), Some(default)]
        .into_iter()
        .flatten()
        .any(is_fractional);
    if use_milli {
        let mut unsafe_value = false;
        for (name, q) in named {
            if let Some(q) = q
                && i128::from(q.milli_value()) * 1_000_000 != q.as_nanos()
            {
                r.error(
                    &path.child(name),
                    invalid(
                        quote(&q.to_string()),
                        "value cannot be represented as a milli value",
                    ),
                );
                unsafe_value = true;
            }
        }
        if unsafe_value {
            return;
        }
    }
    let Some(step) = &step else { return };
    if step.sign() <= 0 {
        r.error(
            &path.child("step"),
            invalid(quote(&step.to_string()), "must be greater than zero"),
        );
        return;
    }
    if let Some(added) = min.checked_add(step)
        && &added > capacity
    {
        r.error(
            &path.child("step"),
            invalid(
                quote(&step.to_string()),
                &format!("one step {added} is larger than capacity value: {capacity}"),
            ),
        );
    }
    if !use_milli {
        let mut unsafe_value = false;
        for (name, q) in named {
            let Some(q) = q else { continue };
            if q.sign() < 0 {
                r.error(
                    &path.child(name),
                    invalid(quote(&q.to_string()), "must be greater than or equal to 0"),
                );
                unsafe_value = true;
            } else if q.as_nanos() > i128::from(i64::MAX) * 1_000_000_000 {
                r.error(
                    &path.child(name),
                    invalid(
                        quote(&q.to_string()),
                        "must not be larger than 9223372036854775807",
                    ),
                );
                unsafe_value = true;
            }
        }
        if unsafe_value {
            return;
        }
    }
    let units = |q: &Quantity| {
        if use_milli {
            q.milli_value()
        } else {
            q.value()
        }
    };
    let mut check = |value: &Quantity| {
        let step_units = units(step);
        if step_units != 0 && (units(value) - units(&min)) % step_units != 0 {
            r.error(
                &path.child("step"),
                invalid(
                    quote(&value.to_string()),
                    &format!("value is not a multiple of a given step ({step}) from ({min})"),
                ),
            );
        }
    };
    check(default);
    if let Some(max) = &max {
        check(max);
    }
}

// ---------------------------------------------------------------------------------
// ResourceClaim, ResourceClaimTemplate

/// Request names of a claim: a request, and for `firstAvailable` its subrequests.
struct RequestNames(BTreeMap<String, Option<BTreeSet<String>>>);

impl RequestNames {
    fn new(claim: &DeviceClaim) -> RequestNames {
        let mut names = BTreeMap::new();
        for request in claim.requests.iter().flatten() {
            let subs = request
                .first_available
                .as_ref()
                .filter(|f| !f.is_empty())
                .map(|f| f.iter().map(|s| s.name.clone()).collect());
            names.insert(request.name.clone(), subs);
        }
        RequestNames(names)
    }

    fn has(&self, reference: &str) -> bool {
        let segments: Vec<&str> = reference.split('/').collect();
        match segments.as_slice() {
            [request] => self.0.contains_key(*request),
            [request, sub] => self
                .0
                .get(*request)
                .is_some_and(|subs| subs.as_ref().is_some_and(|s| s.contains(*sub))),
            _ => false,
        }
    }
}

const REQUEST_REF: &str = "must be the name of a request in the claim or the name of a request and a subrequest separated by '/'";

fn request_refs(r: &mut Report<'_>, path: &FieldPath, refs: &[String], names: &RequestNames) {
    if over_limit(r, path, refs.len(), DEVICE_REQUESTS_MAX_SIZE) {
        return;
    }
    for (i, reference) in refs.iter().enumerate() {
        let p = path.index(i);
        let segments: Vec<&str> = reference.split('/').collect();
        if segments.len() > 2 {
            r.error(&p, invalid(quote(reference), REQUEST_REF));
            continue;
        }
        for segment in segments {
            r.name_rule(&p, segment, names::dns1123_label);
        }
        if !names.has(reference) {
            r.error(&p, invalid(quote(reference), REQUEST_REF));
        }
    }
    duplicates(r, path, refs, |s| quote(s));
}

/// Attribute names used by constraints, per targeted request ("" = all requests).
fn constraint_attributes(claim: &DeviceClaim) -> BTreeMap<String, BTreeSet<String>> {
    let mut attrs: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for constraint in claim.constraints.iter().flatten() {
        let Some(name) = constraint
            .match_attribute
            .as_ref()
            .or(constraint.distinct_attribute.as_ref())
        else {
            continue;
        };
        let requests = constraint.requests.as_deref().unwrap_or_default();
        if requests.is_empty() {
            attrs.entry(String::new()).or_default().insert(name.clone());
        }
        for request in requests {
            attrs
                .entry(request.clone())
                .or_default()
                .insert(name.clone());
        }
    }
    attrs
}

struct ClaimContext<'c> {
    names: RequestNames,
    constraint_attributes: BTreeMap<String, BTreeSet<String>>,
    admin: &'c AdminNamespaces<'c>,
}

pub(crate) fn resource_claim(
    r: &mut Report<'_>,
    claim: &ResourceClaim,
    admin: &AdminNamespaces<'_>,
) {
    let empty = DeviceClaim::default();
    let devices = claim
        .spec
        .as_ref()
        .and_then(|s| s.devices.as_ref())
        .unwrap_or(&empty);
    let ctx = ClaimContext {
        names: RequestNames::new(devices),
        constraint_attributes: constraint_attributes(devices),
        admin,
    };
    device_claim(r, &FieldPath::new("spec").child("devices"), devices, &ctx);
    if let Some(status) = &claim.status {
        claim_status(r, &FieldPath::new("status"), status, &ctx);
    }
}

pub(crate) fn resource_claim_template(
    r: &mut Report<'_>,
    template: &ResourceClaimTemplate,
    admin: &AdminNamespaces<'_>,
) {
    let spec_path = FieldPath::new("spec");
    let Some(spec) = &template.spec else { return };
    if let Some(meta) = &spec.metadata {
        let meta_path = spec_path.child("metadata");
        r.labels(&meta_path.child("labels"), meta.labels.as_ref());
        r.annotations(&meta_path.child("annotations"), meta.annotations.as_ref());
    }
    let empty = DeviceClaim::default();
    let devices = spec
        .spec
        .as_ref()
        .and_then(|s| s.devices.as_ref())
        .unwrap_or(&empty);
    let ctx = ClaimContext {
        names: RequestNames::new(devices),
        constraint_attributes: constraint_attributes(devices),
        admin,
    };
    device_claim(r, &spec_path.child("spec").child("devices"), devices, &ctx);
}

fn device_claim(r: &mut Report<'_>, path: &FieldPath, claim: &DeviceClaim, ctx: &ClaimContext<'_>) {
    let requests = claim.requests.as_deref().unwrap_or_default();
    let requests_path = path.child("requests");
    if !over_limit(r, &requests_path, requests.len(), DEVICE_REQUESTS_MAX_SIZE) {
        for (i, request) in requests.iter().enumerate() {
            device_request(r, &requests_path.index(i), request, ctx);
        }
        duplicates(r, &requests_path, requests, |q| quote(&q.name));
    }

    let constraints = claim.constraints.as_deref().unwrap_or_default();
    let constraints_path = path.child("constraints");
    if !over_limit(
        r,
        &constraints_path,
        constraints.len(),
        DEVICE_CONSTRAINTS_MAX_SIZE,
    ) {
        for (i, c) in constraints.iter().enumerate() {
            let p = constraints_path.index(i);
            request_refs(
                r,
                &p.child("requests"),
                c.requests.as_deref().unwrap_or_default(),
                &ctx.names,
            );
            match (&c.match_attribute, &c.distinct_attribute) {
                (Some(name), distinct) => {
                    fully_qualified_name(r, &p.child("matchAttribute"), name);
                    if distinct.is_some() {
                        r.warning(
                            &p,
                            "both matchAttribute and distinctAttribute are set; the API server accepts this and only matchAttribute is used".to_string(),
                        );
                    }
                }
                (None, Some(name)) => fully_qualified_name(r, &p.child("distinctAttribute"), name),
                (None, None) => r.error(
                    &p,
                    required("exactly one of `matchAttribute` or `distinctAttribute` is required"),
                ),
            }
        }
    }

    let config = claim.config.as_deref().unwrap_or_default();
    let config_path = path.child("config");
    if !over_limit(r, &config_path, config.len(), DEVICE_CONFIG_MAX_SIZE) {
        for (i, c) in config.iter().enumerate() {
            let p = config_path.index(i);
            request_refs(
                r,
                &p.child("requests"),
                c.requests.as_deref().unwrap_or_default(),
                &ctx.names,
            );
            opaque_config(r, &p, c.opaque.as_ref());
        }
    }
}

fn device_request(
    r: &mut Report<'_>,
    path: &FieldPath,
    request: &DeviceRequest,
    ctx: &ClaimContext<'_>,
) {
    r.name_rule(&path.child("name"), &request.name, names::dns1123_label);
    let first_available = request.first_available.as_deref().unwrap_or_default();
    match (request.exactly.as_ref(), first_available.is_empty()) {
        (None, true) => r.error(path, required("exactly one of `exactly` or `firstAvailable` is required")),
        (Some(_), false) => r.error(
            path,
            invalid("null", "exactly one of `exactly` or `firstAvailable` is required, but multiple fields are set"),
        ),
        (None, false) => {
            let p = path.child("firstAvailable");
            if !over_limit(r, &p, first_available.len(), FIRST_AVAILABLE_DEVICE_REQUEST_MAX_SIZE) {
                for (i, sub) in first_available.iter().enumerate() {
                    sub_request(r, &p.index(i), sub, &format!("{}/{}", request.name, sub.name), ctx);
                }
                duplicates(r, &p, first_available, |s| quote(&s.name));
            }
        }
        (Some(exact), true) => exact_request(r, &path.child("exactly"), exact, &request.name, ctx),
    }
}

fn exact_request(
    r: &mut Report<'_>,
    path: &FieldPath,
    request: &ExactDeviceRequest,
    name: &str,
    ctx: &ClaimContext<'_>,
) {
    device_class_name(
        r,
        &path.child("deviceClassName"),
        &request.device_class_name,
    );
    selectors(r, &path.child("selectors"), request.selectors.as_ref());
    derived_attributes(
        r,
        &path.child("derivedAttributes"),
        request.derived_attributes.as_deref(),
        name,
        ctx,
    );
    allocation_mode(r, path, request.allocation_mode.as_deref(), request.count);
    device_tolerations(r, &path.child("tolerations"), request.tolerations.as_ref());
    capacity_requests(
        r,
        &path.child("capacity").child("requests"),
        request.capacity.as_ref().and_then(|c| c.requests.as_ref()),
    );
    if request.admin_access == Some(true) {
        admin_access(r, &path.child("adminAccess"), ctx.admin);
    }
}

fn sub_request(
    r: &mut Report<'_>,
    path: &FieldPath,
    sub: &DeviceSubRequest,
    name: &str,
    ctx: &ClaimContext<'_>,
) {
    r.name_rule(&path.child("name"), &sub.name, names::dns1123_label);
    device_class_name(r, &path.child("deviceClassName"), &sub.device_class_name);
    selectors(r, &path.child("selectors"), sub.selectors.as_ref());
    derived_attributes(
        r,
        &path.child("derivedAttributes"),
        sub.derived_attributes.as_deref(),
        name,
        ctx,
    );
    allocation_mode(r, path, sub.allocation_mode.as_deref(), sub.count);
    device_tolerations(r, &path.child("tolerations"), sub.tolerations.as_ref());
    capacity_requests(
        r,
        &path.child("capacity").child("requests"),
        sub.capacity.as_ref().and_then(|c| c.requests.as_ref()),
    );
}

fn device_class_name(r: &mut Report<'_>, path: &FieldPath, name: &str) {
    if name.is_empty() {
        r.error(path, required(""));
    } else {
        r.name_rule(path, name, names::dns1123_subdomain);
    }
}

fn allocation_mode(r: &mut Report<'_>, path: &FieldPath, mode: Option<&str>, count: Option<i64>) {
    let mode = mode.unwrap_or_default();
    match mode {
        "All" => {
            if let Some(count) = count.filter(|&c| c != 0) {
                r.error(
                    &path.child("count"),
                    invalid(count, "must not be specified when allocationMode is 'All'"),
                );
            }
        }
        "ExactCount" => {
            let count = count.unwrap_or(0);
            if count <= 0 {
                r.error(
                    &path.child("count"),
                    invalid(count, "must be greater than zero"),
                );
            }
        }
        other => r.error(
            &path.child("allocationMode"),
            not_supported(other, ALLOCATION_MODES),
        ),
    }
}

fn capacity_requests(
    r: &mut Report<'_>,
    path: &FieldPath,
    requests: Option<&BTreeMap<String, WireQuantity>>,
) {
    for (key, q) in requests.into_iter().flatten() {
        quantity(r, &path.key(&truncated(key, ATTRIBUTE_KEY_MAX)), q);
    }
}

/// Alpha (DRADerivedAttributes): each derived attribute must be used by a constraint
/// that targets its request.
fn derived_attributes(
    r: &mut Report<'_>,
    path: &FieldPath,
    attrs: Option<&[k8s_openapi::api::resource::v1::DeviceDerivedAttribute]>,
    request: &str,
    ctx: &ClaimContext<'_>,
) {
    let attrs = attrs.unwrap_or_default();
    for (i, attr) in attrs.iter().enumerate() {
        let p = path.index(i);
        if attr.name.is_empty() {
            r.error(&p.child("name"), required(""));
        } else {
            let used = |key: &str| {
                ctx.constraint_attributes
                    .get(key)
                    .is_some_and(|s| s.contains(&attr.name))
            };
            let parent = request.split_once('/').map(|(parent, _)| parent);
            if !(used("") || used(request) || parent.is_some_and(used)) {
                r.error(
                    &p.child("name"),
                    invalid(
                        quote(&attr.name),
                        "must be referenced by at least one matchAttribute or distinctAttribute constraint targeting this request",
                    ),
                );
            }
        }
        if attr.expression.is_empty() {
            r.error(&p.child("expression"), required(""));
        } else if attr.expression.len() > CEL_SELECTOR_EXPRESSION_MAX_LENGTH {
            r.error(
                &p.child("expression"),
                too_long(CEL_SELECTOR_EXPRESSION_MAX_LENGTH),
            );
        }
    }
    duplicates(r, path, attrs, |a| quote(&a.name));
}

fn admin_access(r: &mut Report<'_>, path: &FieldPath, admin: &AdminNamespaces<'_>) {
    let namespace = r.namespace.clone();
    if admin.allows(&namespace) == Some(false) {
        r.error(
            path,
            forbidden(&format!(
                "admin access to devices requires the `{ADMIN_ACCESS_LABEL}: \"true\"` label on the containing namespace {namespace:?}"
            )),
        );
    }
}

fn claim_status(
    r: &mut Report<'_>,
    path: &FieldPath,
    status: &ResourceClaimStatus,
    ctx: &ClaimContext<'_>,
) {
    let reserved = status.reserved_for.as_deref().unwrap_or_default();
    let reserved_path = path.child("reservedFor");
    if !over_limit(
        r,
        &reserved_path,
        reserved.len(),
        RESOURCE_CLAIM_RESERVED_FOR_MAX_SIZE,
    ) {
        for (i, consumer) in reserved.iter().enumerate() {
            let p = reserved_path.index(i);
            for (field, value) in [
                ("resource", &consumer.resource),
                ("name", &consumer.name),
                ("uid", &consumer.uid),
            ] {
                if value.is_empty() {
                    r.error(&p.child(field), required(""));
                }
            }
        }
        duplicates(r, &reserved_path, reserved, |c| quote(&c.uid));
    }

    let allocated: BTreeSet<String> = status
        .allocation
        .as_ref()
        .and_then(|a| a.devices.as_ref())
        .and_then(|d| d.results.as_ref())
        .into_iter()
        .flatten()
        .map(|res| shared_device_id(&res.driver, &res.pool, &res.device, res.share_id.as_deref()))
        .collect();
    let devices = status.devices.as_deref().unwrap_or_default();
    let devices_path = path.child("devices");
    for (i, device) in devices.iter().enumerate() {
        let p = devices_path.index(i);
        driver_name(r, &p.child("driver"), &device.driver);
        pool_name(r, &p.child("pool"), &device.pool);
        device_name(r, &p.child("device"), &device.device);
        if let Some(share_id) = &device.share_id {
            uuid(r, &p.child("shareID"), share_id);
        }
        let id = shared_device_id(
            &device.driver,
            &device.pool,
            &device.device,
            device.share_id.as_deref(),
        );
        if !allocated.contains(&id) {
            r.error(
                &p,
                invalid(quote(&id), "must be an allocated device in the claim"),
            );
        }
        let conds = device.conditions.as_deref().unwrap_or_default();
        if conds.len() > ALLOCATED_DEVICE_STATUS_MAX_CONDITIONS {
            r.error(
                &p.child("conditions"),
                too_many(conds.len(), ALLOCATED_DEVICE_STATUS_MAX_CONDITIONS),
            );
        }
        conditions(r, &p.child("conditions"), conds);
        if let Some(data) = device.data.as_ref().filter(|d| !d.0.is_null()) {
            raw_extension(
                r,
                &p.child("data"),
                &data.0,
                ALLOCATED_DEVICE_STATUS_DATA_MAX_LENGTH,
            );
        }
        if let Some(network) = &device.network_data {
            let np = p.child("networkData");
            if network
                .interface_name
                .as_ref()
                .is_some_and(|n| n.len() > NETWORK_DEVICE_DATA_INTERFACE_NAME_MAX_LENGTH)
            {
                r.error(
                    &np.child("interfaceName"),
                    too_long(NETWORK_DEVICE_DATA_INTERFACE_NAME_MAX_LENGTH),
                );
            }
            if network
                .hardware_address
                .as_ref()
                .is_some_and(|a| a.len() > NETWORK_DEVICE_DATA_HARDWARE_ADDRESS_MAX_LENGTH)
            {
                r.error(
                    &np.child("hardwareAddress"),
                    too_long(NETWORK_DEVICE_DATA_HARDWARE_ADDRESS_MAX_LENGTH),
                );
            }
            let ips = network.ips.as_deref().unwrap_or_default();
            let ips_path = np.child("ips");
            if !over_limit(r, &ips_path, ips.len(), NETWORK_DEVICE_DATA_MAX_IPS) {
                for (j, ip) in ips.iter().enumerate() {
                    interface_address(r, &ips_path.index(j), ip);
                }
                duplicates(r, &ips_path, ips, |s| quote(s));
            }
        }
    }
    duplicates(r, &devices_path, devices, |d| {
        quote(&shared_device_id(
            &d.driver,
            &d.pool,
            &d.device,
            d.share_id.as_deref(),
        ))
    });

    if !reserved.is_empty() && status.allocation.is_none() {
        r.error(
            &reserved_path,
            forbidden("may not be specified when `allocated` is not set"),
        );
    }
    if let Some(allocation) = &status.allocation {
        allocation_result(r, &path.child("allocation"), allocation, ctx);
    }
}

/// An address in CIDR form, in canonical form (`10.9.8.7/24`, `2001:db8::1/64`).
fn interface_address(r: &mut Report<'_>, path: &FieldPath, value: &str) {
    let parsed = value.split_once('/').and_then(|(addr, prefix)| {
        let addr: IpAddr = addr.parse().ok()?;
        if prefix.is_empty() || !prefix.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let prefix: u8 = prefix
            .parse()
            .ok()
            .filter(|p: &u8| *p <= if addr.is_ipv4() { 32 } else { 128 })?;
        Some((addr, prefix))
    });
    match parsed {
        None => r.error(
            path,
            invalid(
                quote(value),
                "must be a valid address in CIDR form, (e.g. 10.9.8.7/24 or 2001:db8::1/64)",
            ),
        ),
        Some((addr, prefix)) => {
            let canonical = format!("{addr}/{prefix}");
            if canonical != value {
                r.error(
                    path,
                    invalid(
                        quote(value),
                        &format!("must be in canonical form ({canonical:?})"),
                    ),
                );
            }
        }
    }
}

fn allocation_result(
    r: &mut Report<'_>,
    path: &FieldPath,
    allocation: &AllocationResult,
    ctx: &ClaimContext<'_>,
) {
    let devices_path = path.child("devices");
    let devices = allocation.devices.as_ref();
    let results = devices
        .and_then(|d| d.results.as_deref())
        .unwrap_or_default();
    let results_path = devices_path.child("results");
    if !over_limit(r, &results_path, results.len(), ALLOCATION_RESULTS_MAX_SIZE) {
        for (i, result) in results.iter().enumerate() {
            let p = results_path.index(i);
            request_ref_single(r, &p.child("request"), &result.request, &ctx.names);
            driver_name(r, &p.child("driver"), &result.driver);
            pool_name(r, &p.child("pool"), &result.pool);
            device_name(r, &p.child("device"), &result.device);
            binding_conditions(
                r,
                &p,
                result.binding_conditions.as_deref().unwrap_or_default(),
                result
                    .binding_failure_conditions
                    .as_deref()
                    .unwrap_or_default(),
            );
            for (j, toleration) in result.tolerations.iter().flatten().enumerate() {
                device_toleration(r, &p.child("tolerations").index(j), toleration);
            }
            if let Some(share_id) = &result.share_id {
                uuid(r, &p.child("shareID"), share_id);
            }
            skip_node_operations(
                r,
                &p.child("skipNodeOperations"),
                result.skip_node_operations.as_ref(),
            );
            capacity_requests(
                r,
                &p.child("consumedCapacity"),
                result.consumed_capacity.as_ref(),
            );
            if result.admin_access == Some(true) {
                admin_access(r, &p.child("adminAccess"), ctx.admin);
            }
        }
    }
    let config = devices
        .and_then(|d| d.config.as_deref())
        .unwrap_or_default();
    let config_path = devices_path.child("config");
    if !over_limit(r, &config_path, config.len(), 2 * DEVICE_CONFIG_MAX_SIZE) {
        for (i, c) in config.iter().enumerate() {
            let p = config_path.index(i);
            match c.source.as_str() {
                "" => r.error(&p.child("source"), required("")),
                source if !CONFIG_SOURCES.contains(&source) => {
                    r.error(&p.child("source"), not_supported(source, CONFIG_SOURCES));
                }
                _ => {}
            }
            request_refs(
                r,
                &p.child("requests"),
                c.requests.as_deref().unwrap_or_default(),
                &ctx.names,
            );
            opaque_config(r, &p, c.opaque.as_ref());
        }
    }
    if let Some(selector) = &allocation.node_selector {
        node_selector(r, &path.child("nodeSelector"), selector);
    }
}

fn request_ref_single(r: &mut Report<'_>, path: &FieldPath, reference: &str, names: &RequestNames) {
    let segments: Vec<&str> = reference.split('/').collect();
    if segments.len() > 2 {
        r.error(path, invalid(quote(reference), REQUEST_REF));
        return;
    }
    for segment in segments {
        r.name_rule(path, segment, names::dns1123_label);
    }
    if !names.has(reference) {
        r.error(path, invalid(quote(reference), REQUEST_REF));
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
        let p = FieldPath::new("status").child("conditions");
        if conds.len() > DEVICE_TAINT_RULE_STATUS_MAX_CONDITIONS {
            r.error(
                &p,
                too_many(conds.len(), DEVICE_TAINT_RULE_STATUS_MAX_CONDITIONS),
            );
        }
        conditions(r, &p, conds);
    }
}
