//! Node fit checks besides DRA.

use dra_alloc::node_selector::NodeFacts;
use k8s_openapi::api::core::v1::Pod;

/// `spec.nodeName` (equal name) and `spec.nodeSelector` (every label present and equal): the
/// filters of the reference loop.
pub fn pod_node_name_and_selector_fit(pod: &Pod, node: &NodeFacts) -> bool {
    let Some(spec) = &pod.spec else {
        return true;
    };
    if let Some(name) = spec.node_name.as_deref()
        && !name.is_empty()
        && name != node.name
    {
        return false;
    }
    spec.node_selector
        .iter()
        .flatten()
        .all(|(key, value)| node.labels.get(key) == Some(value))
}
