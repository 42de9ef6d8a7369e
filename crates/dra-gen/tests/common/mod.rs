//! An independent checker of the API rules generated objects must follow (SPEC §1.2,
//! §1.3, §1.5–§1.7), used until `dra-api` validation can be called from here.

use std::collections::{BTreeMap, BTreeSet};

use dra_gen::Cluster;
use dra_types::{Quantity, Semver};
use k8s_openapi::api::resource::v1::{Device, DeviceAttribute, DeviceRequest, ResourceClaimSpec};

fn is_dns_label(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b[0] != b'-'
        && b[b.len() - 1] != b'-'
}

fn is_dns_subdomain(s: &str) -> bool {
    s.len() <= 253 && s.split('.').all(is_dns_label)
}

fn is_c_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && s.len() <= 32
}

fn is_qualified_name(s: &str) -> bool {
    match s.split_once('/') {
        Some((domain, id)) => domain.len() <= 63 && is_dns_subdomain(domain) && is_c_identifier(id),
        None => is_c_identifier(s),
    }
}

fn is_fully_qualified_name(s: &str) -> bool {
    s.contains('/') && is_qualified_name(s)
}

fn quantity_ok(q: &str) -> bool {
    Quantity::parse(q).is_ok()
}

fn check_attribute(errors: &mut Vec<String>, at: &str, attr: &DeviceAttribute) {
    let set = [
        attr.bool.is_some(),
        attr.int.is_some(),
        attr.string.is_some(),
        attr.version.is_some(),
        attr.bools.is_some(),
        attr.ints.is_some(),
        attr.strings.is_some(),
        attr.versions.is_some(),
    ];
    if set.iter().filter(|s| **s).count() != 1 {
        errors.push(format!("{at}: exactly one attribute value must be set"));
    }
    if let Some(s) = &attr.string
        && s.len() > 64
    {
        errors.push(format!("{at}: string longer than 64"));
    }
    if let Some(v) = &attr.version
        && (v.len() > 64 || Semver::parse(v).is_err())
    {
        errors.push(format!("{at}: {v:?} is not strict semver"));
    }
}

fn check_device(errors: &mut Vec<String>, at: &str, device: &Device) {
    if !is_dns_label(&device.name) {
        errors.push(format!(
            "{at}: device name {:?} is not a DNS label",
            device.name
        ));
    }
    let attributes = device.attributes.as_ref().map_or(0, BTreeMap::len);
    let capacities = device.capacity.as_ref().map_or(0, BTreeMap::len);
    if attributes + capacities > 32 {
        errors.push(format!("{at}: more than 32 attributes and capacities"));
    }
    for (name, attr) in device.attributes.iter().flatten() {
        if !is_qualified_name(name) {
            errors.push(format!("{at}: attribute {name:?} is not a qualified name"));
        }
        check_attribute(errors, &format!("{at}.attributes[{name}]"), attr);
    }
    for (name, cap) in device.capacity.iter().flatten() {
        if !is_qualified_name(name) {
            errors.push(format!("{at}: capacity {name:?} is not a qualified name"));
        }
        if !quantity_ok(&cap.value.0) {
            errors.push(format!("{at}: capacity {name} value {:?}", cap.value.0));
        }
        if let Some(policy) = &cap.request_policy {
            if device.allow_multiple_allocations != Some(true) {
                errors.push(format!(
                    "{at}: requestPolicy without allowMultipleAllocations"
                ));
            }
            let value = Quantity::parse(&cap.value.0).ok();
            if let (Some(default), Some(value)) = (&policy.default, &value) {
                match Quantity::parse(&default.0) {
                    Ok(d) if d.cmp_value(value).is_le() => {}
                    _ => errors.push(format!("{at}: capacity {name} default exceeds value")),
                }
            }
            if let Some(range) = &policy.valid_range {
                for q in [Some(&range.min), range.step.as_ref(), range.max.as_ref()]
                    .into_iter()
                    .flatten()
                {
                    if !quantity_ok(&q.0) {
                        errors.push(format!("{at}: capacity {name} range quantity {:?}", q.0));
                    }
                }
            }
        }
    }
    let consumptions = device.consumes_counters.as_deref().unwrap_or_default();
    if consumptions.len() > 2 {
        errors.push(format!("{at}: more than 2 consumesCounters entries"));
    }
    for c in consumptions {
        if c.counters.len() > 32 {
            errors.push(format!(
                "{at}: more than 32 counters consumed from {}",
                c.counter_set
            ));
        }
    }
}

fn request_names(spec: &ResourceClaimSpec) -> Vec<String> {
    let mut names = Vec::new();
    for r in spec
        .devices
        .iter()
        .flat_map(|d| d.requests.iter().flatten())
    {
        names.push(r.name.clone());
        for sub in r.first_available.iter().flatten() {
            names.push(format!("{}/{}", r.name, sub.name));
        }
    }
    names
}

fn check_request(errors: &mut Vec<String>, at: &str, r: &DeviceRequest, classes: &BTreeSet<&str>) {
    if !is_dns_label(&r.name) {
        errors.push(format!("{at}: request name {:?}", r.name));
    }
    let mut class_refs = Vec::new();
    match (&r.exactly, &r.first_available) {
        (Some(e), None) => {
            class_refs.push(e.device_class_name.as_str());
            if e.count.is_some_and(|c| c <= 0) || e.selectors.as_ref().is_some_and(|s| s.len() > 32)
            {
                errors.push(format!("{at}: bad count or too many selectors"));
            }
            for q in e.capacity.iter().flat_map(|c| c.requests.iter().flatten()) {
                if !quantity_ok(&q.1.0) {
                    errors.push(format!("{at}: capacity request {:?}", q.1.0));
                }
            }
        }
        (None, Some(subs)) => {
            if subs.is_empty() || subs.len() > 8 {
                errors.push(format!("{at}: firstAvailable must have 1 to 8 entries"));
            }
            let mut seen = BTreeSet::new();
            for s in subs {
                class_refs.push(s.device_class_name.as_str());
                if !is_dns_label(&s.name) || !seen.insert(&s.name) {
                    errors.push(format!("{at}: subrequest name {:?}", s.name));
                }
                if s.count.is_some_and(|c| c <= 0) {
                    errors.push(format!("{at}: subrequest count"));
                }
            }
        }
        _ => errors.push(format!("{at}: exactly one of exactly and firstAvailable")),
    }
    for class in class_refs {
        if !classes.contains(class) {
            errors.push(format!("{at}: unknown device class {class:?}"));
        }
    }
}

fn check_claim_spec(
    errors: &mut Vec<String>,
    at: &str,
    spec: &ResourceClaimSpec,
    classes: &BTreeSet<&str>,
) {
    let Some(devices) = &spec.devices else {
        errors.push(format!("{at}: no devices"));
        return;
    };
    let requests = devices.requests.as_deref().unwrap_or_default();
    if requests.is_empty() || requests.len() > 32 {
        errors.push(format!("{at}: 1 to 32 requests"));
    }
    let mut seen = BTreeSet::new();
    for r in requests {
        if !seen.insert(r.name.as_str()) {
            errors.push(format!("{at}: duplicate request {}", r.name));
        }
        check_request(errors, &format!("{at}.requests[{}]", r.name), r, classes);
    }
    let names = request_names(spec);
    for c in devices.constraints.iter().flatten() {
        let attribute = c
            .match_attribute
            .as_ref()
            .xor(c.distinct_attribute.as_ref());
        match attribute {
            Some(a) if is_fully_qualified_name(a) => {}
            _ => errors.push(format!(
                "{at}: constraint needs one fully qualified attribute"
            )),
        }
        for r in c.requests.iter().flatten() {
            if !names.contains(r) {
                errors.push(format!("{at}: constraint names unknown request {r:?}"));
            }
        }
    }
}

/// Every API rule violation found in `cluster`, as readable lines.
pub fn api_problems(cluster: &Cluster) -> Vec<String> {
    let mut errors = Vec::new();
    let classes: BTreeSet<&str> = cluster
        .device_classes
        .iter()
        .filter_map(|c| c.metadata.name.as_deref())
        .collect();
    for c in &cluster.device_classes {
        let name = c.metadata.name.as_deref().unwrap_or_default();
        if !is_dns_subdomain(name) {
            errors.push(format!("DeviceClass {name:?}: name"));
        }
    }
    let priority_classes: BTreeSet<&str> = cluster
        .priority_classes
        .iter()
        .filter_map(|c| c.metadata.name.as_deref())
        .collect();

    // Nodes.
    let mut nodes = BTreeSet::new();
    for n in &cluster.nodes {
        let name = n.metadata.name.as_deref().unwrap_or_default();
        nodes.insert(name);
        let hostname = n
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get("kubernetes.io/hostname"));
        if !is_dns_subdomain(name) || hostname.map(String::as_str) != Some(name) || name.len() > 63
        {
            errors.push(format!("Node {name:?}: name or hostname label"));
        }
        for (k, q) in n.status.iter().flat_map(|s| s.allocatable.iter().flatten()) {
            if !quantity_ok(&q.0) {
                errors.push(format!("Node {name}: allocatable {k} = {:?}", q.0));
            }
        }
    }

    // Slices, grouped into pools by (driver, pool).
    struct PoolInfo {
        slices: usize,
        declared: BTreeSet<i64>,
        generations: BTreeSet<i64>,
        devices: BTreeSet<String>,
        counters: BTreeMap<String, BTreeSet<String>>,
        node: Option<String>,
    }
    let mut pools: BTreeMap<(String, String), PoolInfo> = BTreeMap::new();
    let mut consumptions = Vec::new();
    for s in &cluster.resource_slices {
        let name = s.metadata.name.as_deref().unwrap_or_default();
        let at = format!("ResourceSlice {name}");
        let spec = &s.spec;
        if !is_dns_subdomain(name) || !is_dns_subdomain(&spec.driver) || spec.driver.len() > 63 {
            errors.push(format!("{at}: name or driver"));
        }
        let selection = [
            spec.node_name.is_some(),
            spec.node_selector.is_some(),
            spec.all_nodes == Some(true),
            spec.per_device_node_selection == Some(true),
        ];
        if selection.iter().filter(|s| **s).count() != 1 {
            errors.push(format!("{at}: exactly one node selection field"));
        }
        if let Some(node) = &spec.node_name
            && !nodes.contains(node.as_str())
        {
            errors.push(format!("{at}: nodeName {node} has no Node"));
        }
        let devices = spec.devices.as_deref().unwrap_or_default();
        let sets = spec.shared_counters.as_deref().unwrap_or_default();
        if !devices.is_empty() && !sets.is_empty() {
            errors.push(format!("{at}: devices and sharedCounters in one slice"));
        }
        let advanced = devices
            .iter()
            .any(|d| d.consumes_counters.is_some() || d.taints.is_some());
        let limit = if advanced { 64 } else { 128 };
        if devices.len() > limit {
            errors.push(format!("{at}: {} devices, limit {limit}", devices.len()));
        }
        if sets.len() > 8 {
            errors.push(format!("{at}: more than 8 counter sets"));
        }
        let pool = pools
            .entry((spec.driver.clone(), spec.pool.name.clone()))
            .or_insert_with(|| PoolInfo {
                slices: 0,
                declared: BTreeSet::new(),
                generations: BTreeSet::new(),
                devices: BTreeSet::new(),
                counters: BTreeMap::new(),
                node: spec.node_name.clone(),
            });
        pool.slices += 1;
        pool.declared.insert(spec.pool.resource_slice_count);
        pool.generations.insert(spec.pool.generation);
        for set in sets {
            if !is_dns_label(&set.name) || set.counters.len() > 32 {
                errors.push(format!("{at}: counter set {}", set.name));
            }
            for (counter, value) in &set.counters {
                if !is_dns_label(counter) || !quantity_ok(&value.value.0) {
                    errors.push(format!("{at}: counter {counter}"));
                }
            }
            let previous = pool
                .counters
                .insert(set.name.clone(), set.counters.keys().cloned().collect());
            if previous.is_some() {
                errors.push(format!(
                    "{at}: counter set {} defined twice in the pool",
                    set.name
                ));
            }
        }
        for d in devices {
            check_device(&mut errors, &format!("{at} device {}", d.name), d);
            if !pool.devices.insert(d.name.clone()) {
                errors.push(format!("{at}: device {} twice in the pool", d.name));
            }
            for c in d.consumes_counters.iter().flatten() {
                consumptions.push((
                    (spec.driver.clone(), spec.pool.name.clone()),
                    c.counter_set.clone(),
                    c.counters.keys().cloned().collect::<Vec<_>>(),
                    format!("{at} device {}", d.name),
                ));
            }
        }
    }
    for (key, set, counters, at) in consumptions {
        match pools[&key].counters.get(&set) {
            None => errors.push(format!("{at}: unknown counter set {set}")),
            Some(known) => {
                for c in counters {
                    if !known.contains(&c) {
                        errors.push(format!("{at}: unknown counter {c} in {set}"));
                    }
                }
            }
        }
    }
    for ((driver, pool), info) in &pools {
        if info.declared.len() != 1
            || info.declared.first().copied() != Some(info.slices as i64)
            || info.generations.len() != 1
        {
            errors.push(format!(
                "pool {driver}/{pool}: {} slices but resourceSliceCount {:?}",
                info.slices, info.declared
            ));
        }
    }

    // Templates and claims.
    let mut templates = BTreeSet::new();
    for t in &cluster.resource_claim_templates {
        let name = t.metadata.name.as_deref().unwrap_or_default();
        templates.insert(name);
        match t.spec.as_ref().and_then(|s| s.spec.as_ref()) {
            Some(spec) => check_claim_spec(
                &mut errors,
                &format!("ResourceClaimTemplate {name}"),
                spec,
                &classes,
            ),
            None => errors.push(format!("ResourceClaimTemplate {name}: no spec")),
        }
    }
    let pods: BTreeMap<&str, &k8s_openapi::api::core::v1::Pod> = cluster
        .pods
        .iter()
        .map(|p| (p.metadata.name.as_deref().unwrap_or_default(), p))
        .collect();
    let mut claims = BTreeSet::new();
    let mut allocated = BTreeSet::new();
    for c in &cluster.resource_claims {
        let name = c.metadata.name.as_deref().unwrap_or_default();
        claims.insert(name);
        let at = format!("ResourceClaim {name}");
        let Some(spec) = &c.spec else {
            errors.push(format!("{at}: no spec"));
            continue;
        };
        check_claim_spec(&mut errors, &at, spec, &classes);
        let requests = request_names(spec);
        let Some(status) = &c.status else { continue };
        let Some(allocation) = &status.allocation else {
            if status.reserved_for.is_some() {
                errors.push(format!("{at}: reservedFor without allocation"));
            }
            continue;
        };
        let node = allocation
            .node_selector
            .as_ref()
            .and_then(|s| s.node_selector_terms.first())
            .and_then(|t| t.match_fields.as_ref())
            .and_then(|f| f.first())
            .and_then(|f| f.values.as_ref())
            .and_then(|v| v.first())
            .cloned();
        let results = allocation
            .devices
            .as_ref()
            .and_then(|d| d.results.as_deref())
            .unwrap_or_default();
        if results.is_empty() || results.len() > 32 {
            errors.push(format!("{at}: 1 to 32 results"));
        }
        for r in results {
            if !requests.contains(&r.request) {
                errors.push(format!("{at}: result for unknown request {}", r.request));
            }
            match pools.get(&(r.driver.clone(), r.pool.clone())) {
                Some(pool) if pool.devices.contains(&r.device) => {
                    if pool.node != node {
                        errors.push(format!(
                            "{at}: device {} is not on the selected node",
                            r.device
                        ));
                    }
                }
                _ => errors.push(format!(
                    "{at}: no device {}/{}/{}",
                    r.driver, r.pool, r.device
                )),
            }
            if !allocated.insert((r.driver.clone(), r.pool.clone(), r.device.clone())) {
                errors.push(format!("{at}: device {} allocated twice", r.device));
            }
        }
        for consumer in status.reserved_for.iter().flatten() {
            let pod = pods.get(consumer.name.as_str());
            let ok = consumer.resource == "pods"
                && pod.is_some_and(|p| {
                    p.metadata.uid.as_deref() == Some(consumer.uid.as_str())
                        && p.spec.as_ref().and_then(|s| s.node_name.clone()) == node
                });
            if !ok {
                errors.push(format!(
                    "{at}: reservedFor {} is not a pod bound to its node",
                    consumer.name
                ));
            }
        }
    }

    // Pods.
    let mut uids = BTreeSet::new();
    for p in &cluster.pods {
        match p.metadata.uid.as_deref() {
            Some(uid) if uid.len() == 36 && uids.insert(uid) => {}
            other => errors.push(format!(
                "Pod {:?}: missing or repeated uid {other:?}",
                p.metadata.name
            )),
        }
        let name = p.metadata.name.as_deref().unwrap_or_default();
        let at = format!("Pod {name}");
        if !is_dns_subdomain(name) {
            errors.push(format!("{at}: name"));
        }
        let Some(spec) = &p.spec else {
            errors.push(format!("{at}: no spec"));
            continue;
        };
        let mut pod_claims = BTreeSet::new();
        for c in spec.resource_claims.iter().flatten() {
            pod_claims.insert(c.name.as_str());
            match (&c.resource_claim_name, &c.resource_claim_template_name) {
                (Some(claim), None) if claims.contains(claim.as_str()) => {}
                (None, Some(t)) if templates.contains(t.as_str()) => {}
                _ => errors.push(format!("{at}: claim {} references nothing", c.name)),
            }
        }
        for container in &spec.containers {
            for c in container
                .resources
                .iter()
                .flat_map(|r| r.claims.iter().flatten())
            {
                if !pod_claims.contains(c.name.as_str()) {
                    errors.push(format!("{at}: container uses unknown claim {}", c.name));
                }
            }
        }
        if let Some(class) = &spec.priority_class_name
            && !priority_classes.contains(class.as_str())
        {
            errors.push(format!("{at}: unknown priority class {class}"));
        }
        if let Some(node) = &spec.node_name
            && !nodes.contains(node.as_str())
        {
            errors.push(format!("{at}: bound to unknown node {node}"));
        }
    }
    errors
}
