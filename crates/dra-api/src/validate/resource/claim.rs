//! ResourceClaim and ResourceClaimTemplate: requests, constraints, config, admin
//! access and status.

use super::*;

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

fn request_refs(r: &mut Report<'_>, path: &FieldPath<'_>, refs: &[String], names: &RequestNames) {
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

fn device_claim(
    r: &mut Report<'_>,
    path: &FieldPath<'_>,
    claim: &DeviceClaim,
    ctx: &ClaimContext<'_>,
) {
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
    path: &FieldPath<'_>,
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
    path: &FieldPath<'_>,
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
    path: &FieldPath<'_>,
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

fn device_class_name(r: &mut Report<'_>, path: &FieldPath<'_>, name: &str) {
    if name.is_empty() {
        r.error(path, required(""));
    } else {
        r.name_rule(path, name, names::dns1123_subdomain);
    }
}

fn allocation_mode(
    r: &mut Report<'_>,
    path: &FieldPath<'_>,
    mode: Option<&str>,
    count: Option<i64>,
) {
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
    path: &FieldPath<'_>,
    requests: Option<&BTreeMap<String, WireQuantity>>,
) {
    for (key, q) in requests.into_iter().flatten() {
        quantity(r, &path.key_truncated(key, ATTRIBUTE_KEY_MAX), q);
    }
}

/// Alpha (DRADerivedAttributes): each derived attribute must be used by a constraint
/// that targets its request.
fn derived_attributes(
    r: &mut Report<'_>,
    path: &FieldPath<'_>,
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

fn admin_access(r: &mut Report<'_>, path: &FieldPath<'_>, admin: &AdminNamespaces<'_>) {
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
    path: &FieldPath<'_>,
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
fn interface_address(r: &mut Report<'_>, path: &FieldPath<'_>, value: &str) {
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
    path: &FieldPath<'_>,
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

fn request_ref_single(
    r: &mut Report<'_>,
    path: &FieldPath<'_>,
    reference: &str,
    names: &RequestNames,
) {
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
