//! ResourceSlice: node selection, devices, attributes, capacities and their request
//! policies, counters.

use super::*;

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

fn slice_node_selector(r: &mut Report<'_>, path: &FieldPath<'_>, selector: &NodeSelector) {
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
    path: &FieldPath<'_>,
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
            &attr_path.key_truncated(key, ATTRIBUTE_KEY_MAX),
            attribute,
        );
    }
    let allow_multiple = device.allow_multiple_allocations == Some(true);
    let cap_path = path.child("capacity");
    for (key, cap) in capacity.into_iter().flatten() {
        qualified_name(r, &cap_path, key);
        let p = cap_path.key_truncated(key, ATTRIBUTE_KEY_MAX);
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

fn device_attribute(r: &mut Report<'_>, path: &FieldPath<'_>, a: &DeviceAttribute) {
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

fn attribute_string(r: &mut Report<'_>, path: &FieldPath<'_>, s: &str) {
    if s.len() > DEVICE_ATTRIBUTE_MAX_VALUE_LENGTH {
        r.error(path, too_long(DEVICE_ATTRIBUTE_MAX_VALUE_LENGTH));
    }
}

/// The API server checks versions with a semver.org 2.0.0 regular expression; it
/// accepts numbers too large for 64 bits, which a strict parse rejects.
fn attribute_version(r: &mut Report<'_>, path: &FieldPath<'_>, v: &str) {
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

fn counter_set(r: &mut Report<'_>, path: &FieldPath<'_>, set: &CounterSet) {
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

fn counter_consumption(r: &mut Report<'_>, path: &FieldPath<'_>, c: &DeviceCounterConsumption) {
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
    path: &FieldPath<'_>,
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
            &path.key_truncated(name, 63).child("value"),
            &counter.value,
        );
    }
}

fn partition_type_attribute(
    r: &mut Report<'_>,
    path: &FieldPath<'_>,
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
        let devices_path = path.child("devices");
        let device_path = devices_path.index(i);
        let attributes_path = device_path.child("attributes");
        let p = attributes_path.key(name);
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

fn node_allocatable_resources(r: &mut Report<'_>, path: &FieldPath<'_>, device: &Device) {
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

fn positive(r: &mut Report<'_>, path: &FieldPath<'_>, q: &WireQuantity) {
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
    path: &FieldPath<'_>,
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
    path: &FieldPath<'_>,
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
    path: &FieldPath<'_>,
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
