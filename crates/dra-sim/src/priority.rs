//! Pod priority as the `Priority` admission plugin resolves it.
//!
//! `spec.priority` is what the scheduler reads; admission fills it in from
//! `spec.priorityClassName` (or the `globalDefault` class, the one with the lowest value if
//! several claim it), or 0. Pods read from a live cluster already carry it; hand-written pods
//! usually only name the class.

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::scheduling::v1::PriorityClass;

/// The built-in classes every cluster has.
const SYSTEM_CLASSES: [(&str, i32); 2] = [
    ("system-cluster-critical", 2_000_000_000),
    ("system-node-critical", 2_000_001_000),
];

/// The pod's priority, or the admission error when its class does not exist.
pub fn pod_priority(pod: &Pod, classes: &[&PriorityClass]) -> Result<i32, String> {
    let spec = pod.spec.as_ref();
    if let Some(priority) = spec.and_then(|s| s.priority) {
        return Ok(priority);
    }
    if let Some(name) = spec
        .and_then(|s| s.priority_class_name.as_deref())
        .filter(|n| !n.is_empty())
    {
        if let Some(class) = classes
            .iter()
            .find(|c| c.metadata.name.as_deref() == Some(name))
        {
            return Ok(class.value.unwrap_or(0));
        }
        if let Some((_, value)) = SYSTEM_CLASSES.iter().find(|(n, _)| *n == name) {
            return Ok(*value);
        }
        return Err(format!("no PriorityClass with name {name} was found"));
    }
    Ok(classes
        .iter()
        .filter(|c| c.global_default == Some(true))
        .map(|c| c.value.unwrap_or(0))
        .min()
        .unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolution_order() {
        let loaded = dra_api::load_str(
            "t.yaml",
            "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: high}\nvalue: 1000\n---\n\
             apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: default-a}\nvalue: 50\nglobalDefault: true\n---\n\
             apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: default-b}\nvalue: 10\nglobalDefault: true\n---\n\
             apiVersion: v1\nkind: Pod\nmetadata: {name: by-class}\nspec: {priorityClassName: high, containers: [{name: c}]}\n---\n\
             apiVersion: v1\nkind: Pod\nmetadata: {name: explicit}\nspec: {priorityClassName: high, priority: 7, containers: [{name: c}]}\n---\n\
             apiVersion: v1\nkind: Pod\nmetadata: {name: default}\nspec: {containers: [{name: c}]}\n---\n\
             apiVersion: v1\nkind: Pod\nmetadata: {name: system}\nspec: {priorityClassName: system-node-critical, containers: [{name: c}]}\n---\n\
             apiVersion: v1\nkind: Pod\nmetadata: {name: missing}\nspec: {priorityClassName: nope, containers: [{name: c}]}\n",
        );
        let classes: Vec<&PriorityClass> = loaded
            .cluster
            .priority_classes
            .iter()
            .map(|c| &*c.object)
            .collect();
        let got: Vec<Result<i32, String>> = loaded
            .cluster
            .pods
            .iter()
            .map(|p| pod_priority(&p.object, &classes))
            .collect();
        assert_eq!(
            got,
            vec![
                Ok(1000),
                Ok(7),
                Ok(10),
                Ok(2_000_001_000),
                Err("no PriorityClass with name nope was found".to_string()),
            ]
        );
    }
}
