//! Pods and nodes of the common shape read straight from their JSON text into their
//! k8s-openapi types, without serde's visitor per node: for a stream of a few hundred pods,
//! serde's decode was most of the loader's time (gpu-selector's 400 pods: 1.3 ms of a 2.25 ms
//! load on two threads).
//!
//! [`read_pod`] and [`read_node`] read only a narrow part of what the wire types accept: the
//! fields a workload's pod usually has (name, namespace, uid, labels and annotations;
//! containers with a name, an image and resources; the pod's resource claims, node name and
//! selector, priority, priority class and scheduler), and a node's name and labels, its
//! allocatable and capacity quantities and its conditions' types and statuses; each at most
//! once, without `null`, escapes or any other field. For anything else they answer `None`
//! and the caller decodes the text with serde as before, so what they answer is always what
//! serde answers for the same text (tested against serde with every node of a full object
//! replaced in turn).

use std::collections::BTreeMap;

use dra_types::json_subset::{Cursor, Seen, Token};
use k8s_openapi::api::core::v1::{
    Container, Node, NodeCondition, NodeStatus, Pod, PodResourceClaim, PodSpec, ResourceClaim,
    ResourceRequirements,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

/// The (`apiVersion`, `kind`) of the objects this module reads: [`read_pod`]'s and
/// [`read_node`]'s.
pub(crate) const READ_IN_FULL: [(&str, &str); 2] = [("v1", "Pod"), ("v1", "Node")];

/// The pod the JSON object `text` holds, as serde decodes it, when it is of the shape this
/// module reads (see the module overview); `None` otherwise.
pub(crate) fn read_pod(text: &str) -> Option<Box<Pod>> {
    read_object(
        text,
        "Pod",
        |pod: &mut Pod| &mut pod.metadata,
        |pod, cursor, name, depth| match name {
            "spec" => {
                spec(pod.spec.insert(PodSpec::default()), cursor, depth)?;
                Some(3)
            }
            _ => None,
        },
    )
}

/// The node the JSON object `text` holds, as serde decodes it, when it is of the shape this
/// module reads (see the module overview); `None` otherwise.
pub(crate) fn read_node(text: &str) -> Option<Box<Node>> {
    read_object(
        text,
        "Node",
        |node: &mut Node| &mut node.metadata,
        |node, cursor, name, depth| match name {
            "status" => {
                node_status(node.status.insert(NodeStatus::default()), cursor, depth)?;
                Some(3)
            }
            _ => None,
        },
    )
}

/// The `v1` object of `kind` that the whole of `text` holds: its `apiVersion` and `kind`
/// checked, its metadata read into `metadata_of` it, and its other members read by `member`
/// (their field numbers from 3 on, see [`fields`]). Read in place in its box, as its parts
/// are: the wire types are large (a pod 2.5 KB, a container 2.3 KB), and moving each into
/// its place once read was a visible part of reading a pod.
fn read_object<T: Default>(
    text: &str,
    kind: &str,
    metadata_of: fn(&mut T) -> &mut ObjectMeta,
    mut member: impl FnMut(&mut T, &mut Cursor<'_>, &str, usize) -> Option<u32>,
) -> Option<Box<T>> {
    let mut cursor = Cursor::new(text);
    cursor.skip_whitespace();
    let mut object = Box::<T>::default();
    fields(&mut cursor, 0, |cursor, name, depth| match name {
        "apiVersion" => (string(cursor, depth)? == "v1").then_some(0),
        "kind" => (string(cursor, depth)? == kind).then_some(1),
        "metadata" => {
            metadata(metadata_of(&mut object), cursor, depth)?;
            Some(2)
        }
        _ => member(&mut object, cursor, name, depth),
    })?;
    cursor.skip_whitespace();
    (cursor.pos() == text.len()).then_some(object)
}

fn node_status(status: &mut NodeStatus, cursor: &mut Cursor<'_>, depth: usize) -> Option<()> {
    fields(cursor, depth, |cursor, name, depth| {
        let (field, map) = match name {
            "conditions" => {
                status.conditions = Some(list(cursor, depth, node_condition)?);
                return Some(0);
            }
            "allocatable" => (1, &mut status.allocatable),
            "capacity" => (2, &mut status.capacity),
            _ => return None,
        };
        *map = Some(quantities(cursor, depth)?);
        Some(field)
    })
}

fn node_condition(
    condition: &mut NodeCondition,
    cursor: &mut Cursor<'_>,
    depth: usize,
) -> Option<()> {
    fields(cursor, depth, |cursor, name, depth| {
        // Both required strings: the wire type's default when missing.
        let (field, text) = match name {
            "type" => (0, &mut condition.type_),
            "status" => (1, &mut condition.status),
            _ => return None,
        };
        *text = owned(cursor, depth)?;
        Some(field)
    })
}

/// The object at the cursor, `depth` containers deep: `member` reads each member's value,
/// given its name and the depth of the value, and answers which of the object's known fields
/// it is (a number below 32), or `None` for a member it does not read. A field given twice
/// is refused (the wire type keeps the last).
fn fields(
    cursor: &mut Cursor<'_>,
    depth: usize,
    mut member: impl FnMut(&mut Cursor<'_>, &str, usize) -> Option<u32>,
) -> Option<()> {
    let mut seen = Seen::default();
    let inner = depth + 1;
    cursor.members(inner, |cursor, key| {
        let key = cursor.plain_str(key)?;
        let field = member(cursor, key, inner)?;
        seen.first(field)
    })
}

/// A string without escapes (not `null`) at the cursor, `depth` containers deep.
fn string<'a>(cursor: &mut Cursor<'a>, depth: usize) -> Option<&'a str> {
    let token = cursor.value(depth)?;
    cursor.plain_str(token)
}

fn owned(cursor: &mut Cursor<'_>, depth: usize) -> Option<String> {
    string(cursor, depth).map(str::to_string)
}

/// A mapping of strings to strings, each key once.
fn string_map(cursor: &mut Cursor<'_>, depth: usize) -> Option<BTreeMap<String, String>> {
    map_of_strings(cursor, depth, |value| value)
}

/// A mapping of strings to strings, each key once, each value made a `V` by `make`.
fn map_of_strings<V>(
    cursor: &mut Cursor<'_>,
    depth: usize,
    make: fn(String) -> V,
) -> Option<BTreeMap<String, V>> {
    let mut map = BTreeMap::new();
    cursor.members(depth + 1, |cursor, key| {
        let key = cursor.plain_str(key)?.to_string();
        let value = make(owned(cursor, depth + 1)?);
        map.insert(key, value).is_none().then_some(())
    })?;
    Some(map)
}

/// The objects of the list at the cursor, each read by `element` into its place in the
/// list, a default value at first.
fn list<T: Default>(
    cursor: &mut Cursor<'_>,
    depth: usize,
    mut element: impl FnMut(&mut T, &mut Cursor<'_>, usize) -> Option<()>,
) -> Option<Vec<T>> {
    let mut items = Vec::new();
    cursor.elements(depth + 1, |cursor| {
        // Most lists of a pod or node hold one element (a claim, a condition).
        dra_types::lists::reserve_first(&mut items);
        items.push(T::default());
        element(items.last_mut()?, cursor, depth + 1)
    })?;
    Some(items)
}

fn metadata(meta: &mut ObjectMeta, cursor: &mut Cursor<'_>, depth: usize) -> Option<()> {
    fields(cursor, depth, |cursor, name, depth| {
        let field = match name {
            "name" => (0, &mut meta.name),
            "namespace" => (1, &mut meta.namespace),
            "uid" => (2, &mut meta.uid),
            "generateName" => (3, &mut meta.generate_name),
            "labels" => {
                meta.labels = Some(string_map(cursor, depth)?);
                return Some(4);
            }
            "annotations" => {
                meta.annotations = Some(string_map(cursor, depth)?);
                return Some(5);
            }
            _ => return None,
        };
        *field.1 = Some(owned(cursor, depth)?);
        Some(field.0)
    })
}

fn spec(spec: &mut PodSpec, cursor: &mut Cursor<'_>, depth: usize) -> Option<()> {
    fields(cursor, depth, |cursor, name, depth| {
        let field = match name {
            "containers" => {
                spec.containers = list(cursor, depth, container)?;
                return Some(0);
            }
            "resourceClaims" => {
                spec.resource_claims = Some(list(cursor, depth, pod_claim)?);
                return Some(1);
            }
            "nodeSelector" => {
                spec.node_selector = Some(string_map(cursor, depth)?);
                return Some(2);
            }
            "priority" => {
                spec.priority = Some(match cursor.value(depth)? {
                    Token::Integer { start, end } => cursor.slice(start..end).parse().ok()?,
                    _ => return None,
                });
                return Some(3);
            }
            "nodeName" => (4, &mut spec.node_name),
            "priorityClassName" => (5, &mut spec.priority_class_name),
            "schedulerName" => (6, &mut spec.scheduler_name),
            _ => return None,
        };
        *field.1 = Some(owned(cursor, depth)?);
        Some(field.0)
    })
}

fn container(container: &mut Container, cursor: &mut Cursor<'_>, depth: usize) -> Option<()> {
    fields(cursor, depth, |cursor, name, depth| match name {
        // A required string: the wire type's default when missing.
        "name" => {
            container.name = owned(cursor, depth)?;
            Some(0)
        }
        "image" => {
            container.image = Some(owned(cursor, depth)?);
            Some(1)
        }
        "resources" => {
            resources(
                container.resources.insert(ResourceRequirements::default()),
                cursor,
                depth,
            )?;
            Some(2)
        }
        _ => None,
    })
}

fn resources(
    resources: &mut ResourceRequirements,
    cursor: &mut Cursor<'_>,
    depth: usize,
) -> Option<()> {
    fields(cursor, depth, |cursor, name, depth| {
        let (field, map) = match name {
            "claims" => {
                resources.claims = Some(list(cursor, depth, container_claim)?);
                return Some(0);
            }
            "limits" => (1, &mut resources.limits),
            "requests" => (2, &mut resources.requests),
            _ => return None,
        };
        *map = Some(quantities(cursor, depth)?);
        Some(field)
    })
}

/// Quantities given as strings (the wire type also takes numbers, printed its own way).
fn quantities(cursor: &mut Cursor<'_>, depth: usize) -> Option<BTreeMap<String, Quantity>> {
    map_of_strings(cursor, depth, Quantity)
}

fn container_claim(claim: &mut ResourceClaim, cursor: &mut Cursor<'_>, depth: usize) -> Option<()> {
    fields(cursor, depth, |cursor, name, depth| match name {
        "name" => {
            claim.name = owned(cursor, depth)?;
            Some(0)
        }
        "request" => {
            claim.request = Some(owned(cursor, depth)?);
            Some(1)
        }
        _ => None,
    })
}

fn pod_claim(claim: &mut PodResourceClaim, cursor: &mut Cursor<'_>, depth: usize) -> Option<()> {
    fields(cursor, depth, |cursor, name, depth| {
        let field = match name {
            "name" => {
                claim.name = owned(cursor, depth)?;
                return Some(0);
            }
            "resourceClaimName" => (1, &mut claim.resource_claim_name),
            "resourceClaimTemplateName" => (2, &mut claim.resource_claim_template_name),
            _ => return None,
        };
        *field.1 = Some(owned(cursor, depth)?);
        Some(field.0)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pod with every field the reader reads.
    const FULL: &str = r#"{"apiVersion":"v1","kind":"Pod",
        "metadata":{"name":"p","namespace":"ns","uid":"u-1","generateName":"p-",
          "labels":{"app":"a","tier":""},"annotations":{"note":"x"}},
        "spec":{"containers":[
            {"name":"main","image":"img:1","resources":{
               "claims":[{"name":"gpu"},{"name":"nic","request":"r"}],
               "limits":{"example.com/gpu":"1"},"requests":{"cpu":"500m","memory":"1Gi"}}},
            {"name":"side"}],
          "resourceClaims":[{"name":"gpu","resourceClaimTemplateName":"t"},
            {"name":"nic","resourceClaimName":"c"}],
          "nodeName":"n1","nodeSelector":{"zone":"a"},"priority":-7,
          "priorityClassName":"high","schedulerName":"default-scheduler"}}"#;

    /// A node with every field the reader reads.
    const NODE: &str = r#"{"apiVersion":"v1","kind":"Node",
        "metadata":{"name":"n","labels":{"zone":"a","gpu":""}},
        "status":{"allocatable":{"cpu":"224","memory":"2Ti"},"capacity":{"pods":"110"},
          "conditions":[{"status":"True","type":"Ready"},{"type":"DiskPressure"}]}}"#;

    /// Whatever `read` answers for `text`, serde answers the same.
    fn agrees_with<T>(read: fn(&str) -> Option<T>, text: &str) -> bool
    where
        T: serde::de::DeserializeOwned + PartialEq + std::fmt::Debug,
    {
        match read(text) {
            Some(object) => {
                let wire: T = serde_json::from_str(text).expect("serde decodes what we read");
                assert_eq!(object, wire, "{text}");
                true
            }
            None => false,
        }
    }

    fn agrees(text: &str) -> bool {
        agrees_with(read_pod, text)
    }

    #[test]
    fn reads_the_common_shape_as_serde_does() {
        assert!(agrees(FULL));
        for text in [
            r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"}}"#,
            r#"{"kind":"Pod","metadata":{},"spec":{"containers":[]}}"#,
            r#" {"metadata":{"labels":{}},"spec":{"resourceClaims":[]},"apiVersion":"v1"} "#,
        ] {
            assert!(agrees(text), "{text}");
        }
    }

    #[test]
    fn leaves_everything_else_to_serde() {
        let others = [
            // Fields it does not read, at each level.
            FULL.replacen(r#""kind":"Pod","#, r#""kind":"Pod","status":{},"#, 1),
            FULL.replacen(
                r#""uid":"u-1","#,
                r#""uid":"u-1","resourceVersion":"3","#,
                1,
            ),
            FULL.replacen(
                r#""nodeName":"n1","#,
                r#""nodeName":"n1","hostNetwork":true,"#,
                1,
            ),
            FULL.replacen(
                r#""image":"img:1","#,
                r#""image":"img:1","command":["a"],"#,
                1,
            ),
            FULL.replacen(r#""limits""#, r#""x":{},"limits""#, 1),
            FULL.replacen(r#""request":"r""#, r#""request":"r","x":1"#, 1),
            FULL.replacen(
                r#""resourceClaimName":"c""#,
                r#""resourceClaimName":"c","x":1"#,
                1,
            ),
            // A field given twice, `null`, an escape, a number for a quantity or a string.
            FULL.replacen(r#""name":"p","#, r#""name":"p","name":"q","#, 1),
            FULL.replacen(
                r#""labels":{"app":"a","#,
                r#""labels":{"app":"a","app":"b","#,
                1,
            ),
            FULL.replacen(r#""nodeName":"n1""#, r#""nodeName":null"#, 1),
            FULL.replacen(r#""name":"side""#, r#""name":"s\u0069de""#, 1),
            FULL.replacen(r#""cpu":"500m""#, r#""cpu":2"#, 1),
            FULL.replacen(r#""priority":-7"#, r#""priority":"7""#, 1),
            FULL.replacen(r#""priority":-7"#, r#""priority":4294967296"#, 1),
            // Another kind or version, and text after the object.
            FULL.replacen(r#""kind":"Pod""#, r#""kind":"Node""#, 1),
            FULL.replacen(r#""apiVersion":"v1""#, r#""apiVersion":"v2""#, 1),
            format!("{FULL} {{}}"),
        ];
        for text in &others {
            assert!(read_pod(text).is_none(), "{text}");
        }
    }

    /// Every node of a full object replaced in turn by each of a set of values: wherever the
    /// reader answers, serde answers the same; the number of variants it reads.
    fn replaced_nodes_agree<T>(read: fn(&str) -> Option<T>, full: &str) -> (usize, usize)
    where
        T: serde::de::DeserializeOwned + PartialEq + std::fmt::Debug,
    {
        let original: serde_json::Value = serde_json::from_str(full).expect("json");
        let replacements = [
            "null",
            "0",
            "-1",
            "2147483648",
            "true",
            "\"\"",
            "\"x\"",
            "\"1Gi\"",
            "[]",
            "[{}]",
            "[{\"name\":\"a\"}]",
            "{}",
            "{\"a\":\"b\"}",
            "{\"name\":\"z\"}",
        ];
        let mut read_count = 0;
        let mut n = 0;
        loop {
            let mut changed = false;
            for with in replacements {
                let with: serde_json::Value = serde_json::from_str(with).expect("json");
                let mut value = original.clone();
                let mut k = n;
                if !replace_nth(&mut value, &mut k, &with) {
                    continue;
                }
                changed = true;
                if agrees_with(read, &value.to_string()) {
                    read_count += 1;
                }
            }
            if !changed {
                break;
            }
            n += 1;
        }
        (n, read_count)
    }

    #[test]
    fn any_node_replaced_reads_as_serde_reads() {
        let (nodes, read) = replaced_nodes_agree(read_pod, FULL);
        assert!(nodes > 40, "{nodes} nodes");
        assert!(read > 40, "only {read} variants read");
        let (nodes, read) = replaced_nodes_agree(read_node, NODE);
        assert!(nodes > 15, "{nodes} nodes");
        assert!(read > 15, "only {read} variants read");
    }

    #[test]
    fn a_list_of_one_holds_room_for_one() {
        let pod = read_pod(FULL).expect("reads");
        let spec = pod.spec.expect("spec");
        assert_eq!(spec.containers.capacity(), 2);
        let claims = spec.resource_claims.expect("claims");
        assert_eq!((claims.len(), claims.capacity()), (2, 4));
        let one = r#"{"kind":"Pod","metadata":{"name":"p"},"spec":{
            "containers":[{"name":"c","resources":{"claims":[{"name":"gpu"}]}}],
            "resourceClaims":[{"name":"gpu","resourceClaimTemplateName":"t"}]}}"#;
        assert!(agrees(one));
        let spec = read_pod(one).expect("reads").spec.expect("spec");
        assert_eq!(spec.containers.capacity(), 1);
        let claims = spec.containers[0]
            .resources
            .as_ref()
            .and_then(|r| r.claims.as_ref());
        assert_eq!(claims.map(Vec::capacity), Some(1));
        assert_eq!(spec.resource_claims.map(|c| c.capacity()), Some(1));
    }

    #[test]
    fn reads_nodes_as_serde_does_and_leaves_the_rest() {
        assert!(agrees_with(read_node, NODE));
        assert!(agrees_with(
            read_node,
            r#"{"apiVersion":"v1","kind":"Node","metadata":{"name":"n"}}"#
        ));
        for text in [
            NODE.replacen(r#""kind":"Node","#, r#""kind":"Node","spec":{},"#, 1),
            NODE.replacen(r#""capacity""#, r#""nodeInfo":{},"capacity""#, 1),
            NODE.replacen(
                r#"{"type":"DiskPressure"}"#,
                r#"{"type":"D","reason":"r"}"#,
                1,
            ),
            NODE.replacen(r#""cpu":"224""#, r#""cpu":224"#, 1),
            NODE.replacen(r#""kind":"Node""#, r#""kind":"Pod""#, 1),
        ] {
            assert!(read_node(&text).is_none(), "{text}");
        }
    }

    /// Replaces the `n`th node (in document order, the root excluded) of `value`.
    fn replace_nth(value: &mut serde_json::Value, n: &mut usize, with: &serde_json::Value) -> bool {
        let children: Vec<&mut serde_json::Value> = match value {
            serde_json::Value::Object(map) => map.values_mut().collect(),
            serde_json::Value::Array(items) => items.iter_mut().collect(),
            _ => return false,
        };
        for child in children {
            if *n == 0 {
                *child = with.clone();
                return true;
            }
            *n -= 1;
            if replace_nth(child, n, with) {
                return true;
            }
        }
        false
    }
}
