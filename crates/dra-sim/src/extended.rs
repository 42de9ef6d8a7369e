//! Extended resources backed by DRA (KEP-5004, GA in 1.37): which DeviceClass serves an
//! extended resource name, and the special claim the scheduler builds for a pod on a node.
//!
//! The mapping follows the scheduler's `ExtendedResourceCache`
//! (`k8s.io/dynamic-resource-allocation/deviceclass/extendedresourcecache`): every class serves
//! its implicit name `deviceclass.resource.kubernetes.io/<class>` and, if set, its
//! `extendedResourceName`. Two classes with one `extendedResourceName` are resolved newest
//! `creationTimestamp` first, then the smaller name. The cache applies that rule as class events
//! arrive, and a class that loses at the moment it arrives also loses its implicit name (SPEC.md
//! §4.7 quirk). The simulation replays the events in creation order (`creationTimestamp`, then
//! name), as a scheduler sees them when it runs while the classes are created; after a
//! scheduler restart the informer lists classes by name and the outcome for the implicit names
//! of losing classes may differ. Both outcomes are reported.

use std::collections::{BTreeMap, BTreeSet};

use dra_alloc::hashing::WordHashMap;
use k8s_openapi::api::core::v1::{ContainerExtendedResourceRequest, Pod};
use k8s_openapi::api::resource::v1::{DeviceClass, DeviceRequest, ExactDeviceRequest};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Serialize;

/// Prefix of the implicit extended resource name of a class.
pub const DEVICE_CLASS_PREFIX: &str = "deviceclass.resource.kubernetes.io/";
/// Annotation on the claim the scheduler creates for a pod's extended resources.
pub const EXTENDED_RESOURCE_CLAIM_ANNOTATION: &str =
    "resource.kubernetes.io/extended-resource-claim";
/// Suffix of the special claim's name in the simulation: `<pod>-extended-resources`. The API
/// server appends a random suffix to the real one (`generateName`); a simulation must be
/// reproducible.
pub const EXTENDED_RESOURCE_CLAIM_SUFFIX: &str = "-extended-resources";

/// Among classes that set the same `extendedResourceName`, the one the scheduler uses: the
/// newest `creationTimestamp`, then the lexicographically smaller name. A class without a
/// timestamp counts as oldest.
pub fn extended_resource_winner<'a>(
    classes: impl IntoIterator<Item = &'a ObjectMeta>,
) -> Option<&'a ObjectMeta> {
    classes.into_iter().reduce(|best, candidate| {
        if beats(candidate, best) {
            candidate
        } else {
            best
        }
    })
}

/// Whether `candidate` wins the explicit name against the current holder `holder`.
fn beats(candidate: &ObjectMeta, holder: &ObjectMeta) -> bool {
    let time = |m: &ObjectMeta| m.creation_timestamp.as_ref().map(|t| t.0);
    match time(candidate).cmp(&time(holder)) {
        std::cmp::Ordering::Greater => true,
        std::cmp::Ordering::Less => false,
        std::cmp::Ordering::Equal => {
            candidate.name.as_deref().unwrap_or_default()
                < holder.name.as_deref().unwrap_or_default()
        }
    }
}

/// `v1helper.IsExtendedResourceName`: a resource outside the `kubernetes.io` namespace, not a
/// quota `requests.` name, with a qualified name.
pub fn is_extended_resource_name(name: &str) -> bool {
    let Some((prefix, local)) = name.split_once('/') else {
        return false;
    };
    if prefix == "kubernetes.io"
        || prefix.ends_with(".kubernetes.io")
        || name.starts_with("requests.")
    {
        return false;
    }
    !prefix.is_empty() && is_qualified_name_part(local) && local.len() <= 63
}

fn is_qualified_name_part(part: &str) -> bool {
    let bytes = part.as_bytes();
    !bytes.is_empty()
        && bytes[0].is_ascii_alphanumeric()
        && bytes[bytes.len() - 1].is_ascii_alphanumeric()
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// `schedutil.IsDRAExtendedResourceName`: an extended resource name, or an implicit
/// `deviceclass.resource.kubernetes.io/<class>` name.
pub fn is_dra_extended_resource_name(name: &str) -> bool {
    is_extended_resource_name(name) || name.starts_with(DEVICE_CLASS_PREFIX)
}

/// Classes that set the same `extendedResourceName`, and what the scheduler makes of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DuplicateExtendedResourceName {
    pub resource_name: String,
    /// The class that serves the name.
    pub winner: String,
    /// The other classes that set it, by name.
    pub ignored: Vec<String>,
    /// Losing classes whose implicit `deviceclass.resource.kubernetes.io/<class>` name the
    /// scheduler's cache dropped as well (they lost at the moment they arrived).
    pub implicit_name_lost: Vec<String>,
}

/// The mapping from extended resource names to DeviceClasses.
#[derive(Debug, Clone, Default)]
pub struct ExtendedResourceMapping {
    /// Resource name -> class, hashed: the node filters ask [`Self::class_for`] for every node
    /// class and every extended resource a pod requests, and with thousands of classes whose
    /// names share a long prefix a B-tree lookup was a dozen string comparisons.
    /// [`Self::entries`] sorts what it lists.
    by_resource: WordHashMap<String, String>,
    duplicates: Vec<DuplicateExtendedResourceName>,
}

impl ExtendedResourceMapping {
    /// Replays the class events in creation order through the cache's update rule.
    pub fn build(classes: &[&DeviceClass]) -> ExtendedResourceMapping {
        let mut order: Vec<&DeviceClass> = classes.to_vec();
        order.sort_by(|a, b| {
            let time = |c: &DeviceClass| c.metadata.creation_timestamp.as_ref().map(|t| t.0);
            time(a)
                .cmp(&time(b))
                .then_with(|| a.metadata.name.cmp(&b.metadata.name))
        });
        let mut by_resource: WordHashMap<String, String> = WordHashMap::default();
        let mut holders: BTreeMap<String, &ObjectMeta> = BTreeMap::new();
        let mut lost_on_arrival: BTreeSet<String> = BTreeSet::new();
        let mut seen: BTreeSet<&str> = BTreeSet::new();
        for class in order {
            let name = class.metadata.name.as_deref().unwrap_or_default();
            if !seen.insert(name) {
                // A duplicate object; the loader reports it and the first one counts.
                continue;
            }
            let explicit = class
                .spec
                .as_ref()
                .and_then(|s| s.extended_resource_name.as_deref());
            if let Some(resource) = explicit
                && let Some(holder) = holders.get(resource)
                && !beats(&class.metadata, holder)
            {
                // The cache returns early: neither the explicit nor the implicit name.
                lost_on_arrival.insert(name.to_string());
                continue;
            }
            if let Some(resource) = explicit {
                by_resource.insert(resource.to_string(), name.to_string());
                holders.insert(resource.to_string(), &class.metadata);
            }
            by_resource.insert(format!("{DEVICE_CLASS_PREFIX}{name}"), name.to_string());
        }
        let mut setters: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        for class in classes {
            if let Some(resource) = class
                .spec
                .as_ref()
                .and_then(|s| s.extended_resource_name.as_deref())
            {
                setters
                    .entry(resource)
                    .or_default()
                    .push(class.metadata.name.as_deref().unwrap_or_default());
            }
        }
        let duplicates = setters
            .into_iter()
            .filter(|(_, names)| names.len() > 1)
            .map(|(resource, names)| {
                let winner = by_resource.get(resource).cloned().unwrap_or_default();
                let mut ignored: Vec<String> = names
                    .iter()
                    .filter(|n| **n != winner)
                    .map(|n| n.to_string())
                    .collect();
                ignored.sort();
                ignored.dedup();
                let implicit_name_lost = ignored
                    .iter()
                    .filter(|n| lost_on_arrival.contains(*n))
                    .cloned()
                    .collect();
                DuplicateExtendedResourceName {
                    resource_name: resource.to_string(),
                    winner,
                    ignored,
                    implicit_name_lost,
                }
            })
            .collect();
        ExtendedResourceMapping {
            by_resource,
            duplicates,
        }
    }

    /// The class serving `resource`, if any (`DeviceClassResolver.GetDeviceClass`).
    pub fn class_for(&self, resource: &str) -> Option<&str> {
        self.by_resource.get(resource).map(String::as_str)
    }

    /// Every mapped resource name with its class, by resource name.
    pub fn entries(&self) -> impl Iterator<Item = (&str, &str)> {
        let mut entries: Vec<(&str, &str)> = self
            .by_resource
            .iter()
            .map(|(r, c)| (r.as_str(), c.as_str()))
            .collect();
        entries.sort_unstable();
        entries.into_iter()
    }

    pub fn duplicates(&self) -> &[DuplicateExtendedResourceName] {
        &self.duplicates
    }
}

/// The requests of a node's special claim and the container mappings that go with them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SpecialClaimPlan {
    /// Sorted by name.
    pub requests: Vec<DeviceRequest>,
    pub mappings: Vec<ContainerExtendedResourceRequest>,
}

/// One container's request for one resource: upstream `createResourceRequestAndMappings`.
/// `reusable` are requests of long-lived containers that an ordinary init container may use
/// before it needs devices of its own (it runs before them, alone).
fn container_request(
    index: usize,
    container: &k8s_openapi::api::core::v1::Container,
    resource: &str,
    class: &str,
    reusable: &[Option<DeviceRequest>],
) -> (Option<DeviceRequest>, Vec<ContainerExtendedResourceRequest>) {
    let requests = crate::resources::container_requests(container);
    let Some(quantity) = requests.get(resource) else {
        return (None, Vec::new());
    };
    // `AsInt64`: only exact integers in Go's fast form count.
    let Some(wanted) = quantity.as_i64().filter(|v| *v != 0) else {
        return (None, Vec::new());
    };
    let mapping = |request: &str| ContainerExtendedResourceRequest {
        container_name: container.name.clone(),
        resource_name: resource.to_string(),
        request_name: request.to_string(),
    };
    let mut mappings = Vec::new();
    let mut sum = 0i64;
    for request in reusable.iter().flatten() {
        sum += request.exactly.as_ref().and_then(|e| e.count).unwrap_or(0);
        mappings.push(mapping(&request.name));
        if sum >= wanted {
            return (None, mappings);
        }
    }
    // The request's index among the container's request names, sorted.
    let position = requests.keys().position(|k| k == resource).unwrap_or(0);
    let name = format!("container-{index}-request-{position}");
    mappings.push(mapping(&name));
    let request = DeviceRequest {
        name,
        exactly: Some(ExactDeviceRequest {
            device_class_name: class.to_string(),
            allocation_mode: Some("ExactCount".to_string()),
            count: Some(wanted - sum),
            ..ExactDeviceRequest::default()
        }),
        ..DeviceRequest::default()
    };
    (Some(request), mappings)
}

/// Upstream `createRequestsAndMappings`: one request per (container, DRA-served resource) over
/// init containers then containers, ordinary init containers reusing the devices of later
/// sidecars and containers and sharing one request for the largest of them.
pub fn special_claim_plan(
    pod: &Pod,
    dra_resources: &BTreeSet<String>,
    mapping: &ExtendedResourceMapping,
) -> SpecialClaimPlan {
    let Some(spec) = &pod.spec else {
        return SpecialClaimPlan::default();
    };
    let num_init = spec.init_containers.as_ref().map_or(0, Vec::len);
    let containers: Vec<&k8s_openapi::api::core::v1::Container> = spec
        .init_containers
        .iter()
        .flatten()
        .chain(spec.containers.iter())
        .collect();
    let short_lived = |i: usize| i < num_init && !crate::resources::is_sidecar(containers[i]);
    let mut requests: Vec<DeviceRequest> = Vec::new();
    let mut mappings: Vec<ContainerExtendedResourceRequest> = Vec::new();
    for resource in dra_resources {
        let Some(class) = mapping.class_for(resource) else {
            continue;
        };
        let mut long_lived: Vec<Option<DeviceRequest>> = vec![None; containers.len()];
        let mut long_lived_mappings = Vec::new();
        for (i, container) in containers.iter().enumerate() {
            if short_lived(i) {
                continue;
            }
            let (request, m) = container_request(i, container, resource, class, &[]);
            long_lived[i] = request;
            long_lived_mappings.extend(m);
        }
        let mut largest_short: Option<DeviceRequest> = None;
        let mut short_names: BTreeSet<String> = BTreeSet::new();
        let mut short_mappings = Vec::new();
        for (i, container) in containers.iter().enumerate() {
            if !short_lived(i) {
                continue;
            }
            let (request, m) = container_request(i, container, resource, class, &long_lived[i..]);
            if let Some(request) = request {
                short_names.insert(request.name.clone());
                let count =
                    |r: &DeviceRequest| r.exactly.as_ref().and_then(|e| e.count).unwrap_or(0);
                if largest_short
                    .as_ref()
                    .is_none_or(|l| count(l) < count(&request))
                {
                    largest_short = Some(request);
                }
            }
            short_mappings.extend(m);
        }
        if let Some(largest) = &largest_short
            && short_names.len() > 1
        {
            short_names.remove(&largest.name);
            for m in &mut short_mappings {
                if short_names.contains(&m.request_name) {
                    m.request_name = largest.name.clone();
                }
            }
        }
        requests.extend(largest_short);
        requests.extend(long_lived.into_iter().flatten());
        mappings.extend(long_lived_mappings);
        mappings.extend(short_mappings);
    }
    requests.sort_by(|a, b| a.name.cmp(&b.name));
    SpecialClaimPlan { requests, mappings }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(yaml: &str) -> dra_api::Cluster {
        let loaded = dra_api::load_str("t.yaml", yaml);
        assert!(loaded.diagnostics.is_empty(), "{:?}", loaded.diagnostics);
        loaded.cluster
    }

    fn class(name: &str, resource: Option<&str>, created: Option<&str>) -> String {
        let mut s = format!(
            "---\napiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata:\n  name: {name}\n"
        );
        if let Some(c) = created {
            s.push_str(&format!("  creationTimestamp: \"{c}\"\n"));
        }
        s.push_str("spec:\n  selectors: [{cel: {expression: 'true'}}]\n");
        if let Some(r) = resource {
            s.push_str(&format!("  extendedResourceName: {r}\n"));
        }
        s
    }

    #[test]
    fn names() {
        let cases = [
            ("example.com/gpu", true, true),
            ("nvidia.com/gpu", true, true),
            ("cpu", false, false),
            ("kubernetes.io/foo", false, false),
            ("node.kubernetes.io/foo", false, false),
            ("requests.example.com/gpu", false, false),
            ("deviceclass.resource.kubernetes.io/gpu", false, true),
            ("hugepages-2Mi", false, false),
        ];
        for (name, extended, dra) in cases {
            assert_eq!(is_extended_resource_name(name), extended, "{name}");
            assert_eq!(is_dra_extended_resource_name(name), dra, "{name}");
        }
    }

    #[test]
    fn newest_class_wins_and_equal_times_go_to_the_smaller_name() {
        let cluster = load(&format!(
            "{}{}{}{}",
            class("old", Some("example.com/gpu"), Some("2026-01-01T00:00:00Z")),
            class("new", Some("example.com/gpu"), Some("2026-02-01T00:00:00Z")),
            class(
                "b-tie",
                Some("example.com/nic"),
                Some("2026-01-01T00:00:00Z")
            ),
            class(
                "a-tie",
                Some("example.com/nic"),
                Some("2026-01-01T00:00:00Z")
            ),
        ));
        let classes: Vec<&DeviceClass> =
            cluster.device_classes.iter().map(|c| &*c.object).collect();
        let mapping = ExtendedResourceMapping::build(&classes);
        assert_eq!(mapping.class_for("example.com/gpu"), Some("new"));
        assert_eq!(mapping.class_for("example.com/nic"), Some("a-tie"));
        // "old" arrived first and was overtaken: it keeps its implicit name. "b-tie" arrived
        // after "a-tie" and lost on arrival: the cache dropped its implicit name too.
        assert_eq!(
            mapping.class_for("deviceclass.resource.kubernetes.io/old"),
            Some("old")
        );
        assert_eq!(
            mapping.class_for("deviceclass.resource.kubernetes.io/b-tie"),
            None
        );
        let duplicates = mapping.duplicates();
        assert_eq!(duplicates.len(), 2);
        assert_eq!(duplicates[0].resource_name, "example.com/gpu");
        assert_eq!(duplicates[0].ignored, vec!["old".to_string()]);
        assert!(duplicates[0].implicit_name_lost.is_empty());
        assert_eq!(duplicates[1].implicit_name_lost, vec!["b-tie".to_string()]);
        // Listed by resource name, whatever order the lookups keep them in.
        let listed: Vec<(&str, &str)> = mapping.entries().collect();
        assert_eq!(
            listed,
            [
                ("deviceclass.resource.kubernetes.io/a-tie", "a-tie"),
                ("deviceclass.resource.kubernetes.io/new", "new"),
                ("deviceclass.resource.kubernetes.io/old", "old"),
                ("example.com/gpu", "new"),
                ("example.com/nic", "a-tie"),
            ]
        );
        // The lint helper agrees on the winner.
        let metas: Vec<&ObjectMeta> = classes.iter().map(|c| &c.metadata).collect();
        let winner = extended_resource_winner(metas[..2].iter().copied()).unwrap();
        assert_eq!(winner.name.as_deref(), Some("new"));
    }

    #[test]
    fn request_names_and_init_container_reuse() {
        let cluster = load(&format!(
            "{}---\napiVersion: v1\nkind: Pod\nmetadata: {{name: p}}\nspec:\n  initContainers:\n  - {{name: ic1, resources: {{limits: {{example.com/gpu: 1}}}}}}\n  - {{name: side, restartPolicy: Always, resources: {{limits: {{example.com/gpu: 1}}}}}}\n  - {{name: ic2, resources: {{limits: {{example.com/gpu: 2}}}}}}\n  containers:\n  - {{name: c1, resources: {{requests: {{cpu: '1'}}, limits: {{example.com/gpu: 1}}}}}}\n",
            class("gpu", Some("example.com/gpu"), None)
        ));
        let classes: Vec<&DeviceClass> =
            cluster.device_classes.iter().map(|c| &*c.object).collect();
        let mapping = ExtendedResourceMapping::build(&classes);
        let plan = special_claim_plan(
            &cluster.pods[0].object,
            &BTreeSet::from(["example.com/gpu".to_string()]),
            &mapping,
        );
        let requests: Vec<(String, i64)> = plan
            .requests
            .iter()
            .map(|r| (r.name.clone(), r.exactly.as_ref().unwrap().count.unwrap()))
            .collect();
        // ic1 (1) runs before the sidecar starts and reuses its device; ic2 (2) runs while the
        // sidecar runs, reuses c1's device and needs 1 more: 3 devices, as PodRequests counts.
        // c1's gpu is its second request name ("cpu" < "example.com/gpu").
        assert_eq!(
            requests,
            vec![
                ("container-1-request-0".to_string(), 1),
                ("container-2-request-0".to_string(), 1),
                ("container-3-request-1".to_string(), 1),
            ]
        );
        let mappings: Vec<(String, String)> = plan
            .mappings
            .iter()
            .map(|m| (m.container_name.clone(), m.request_name.clone()))
            .collect();
        assert_eq!(
            mappings,
            vec![
                ("side".to_string(), "container-1-request-0".to_string()),
                ("c1".to_string(), "container-3-request-1".to_string()),
                ("ic1".to_string(), "container-1-request-0".to_string()),
                ("ic2".to_string(), "container-3-request-1".to_string()),
                ("ic2".to_string(), "container-2-request-0".to_string()),
            ]
        );
    }
}
