//! Small constructors for the k8s-openapi types, so the shape modules read like the
//! YAML they produce.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{NodeSelector, NodeSelectorRequirement, NodeSelectorTerm};
use k8s_openapi::api::resource::v1::{CELDeviceSelector, DeviceAttribute, DeviceSelector};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

pub(crate) fn cluster_meta(name: impl Into<String>) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.into()),
        ..ObjectMeta::default()
    }
}

pub(crate) fn namespaced_meta(name: impl Into<String>, namespace: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.into()),
        namespace: Some(namespace.to_owned()),
        ..ObjectMeta::default()
    }
}

pub(crate) fn quantity(value: impl Into<String>) -> Quantity {
    Quantity(value.into())
}

pub(crate) fn string_attr(value: impl Into<String>) -> DeviceAttribute {
    DeviceAttribute {
        string: Some(value.into()),
        ..DeviceAttribute::default()
    }
}

pub(crate) fn int_attr(value: i64) -> DeviceAttribute {
    DeviceAttribute {
        int: Some(value),
        ..DeviceAttribute::default()
    }
}

pub(crate) fn bool_attr(value: bool) -> DeviceAttribute {
    DeviceAttribute {
        bool: Some(value),
        ..DeviceAttribute::default()
    }
}

/// A `version` attribute; callers pass strict semver strings only.
pub(crate) fn version_attr(value: impl Into<String>) -> DeviceAttribute {
    DeviceAttribute {
        version: Some(value.into()),
        ..DeviceAttribute::default()
    }
}

pub(crate) fn cel(expression: impl Into<String>) -> DeviceSelector {
    DeviceSelector {
        cel: Some(CELDeviceSelector {
            expression: expression.into(),
        }),
    }
}

/// The node selector the scheduler writes into an allocation for node-local devices.
pub(crate) fn single_node_selector(node: &str) -> NodeSelector {
    NodeSelector {
        node_selector_terms: vec![NodeSelectorTerm {
            match_fields: Some(vec![NodeSelectorRequirement {
                key: "metadata.name".to_owned(),
                operator: "In".to_owned(),
                values: Some(vec![node.to_owned()]),
            }]),
            ..NodeSelectorTerm::default()
        }],
    }
}

pub(crate) fn quantities<const N: usize>(entries: [(&str, &str); N]) -> BTreeMap<String, Quantity> {
    entries
        .into_iter()
        .map(|(k, v)| (k.to_owned(), quantity(v)))
        .collect()
}

/// Quotes `value` as a CEL single-quoted string literal.
pub(crate) fn cel_string(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 2);
    out.push('\'');
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            '\n' => out.push_str("\\n"),
            _ => out.push(c),
        }
    }
    out.push('\'');
    out
}

/// RFC 1123 label: what Kubernetes requires of node-name components, device names,
/// request names and counter names.
pub(crate) fn is_dns_label(s: &str) -> bool {
    let bytes = s.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= 63
        && bytes
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
        && bytes[0] != b'-'
        && bytes[bytes.len() - 1] != b'-'
}

/// RFC 1123 subdomain (dot-separated labels, at most 253 bytes).
pub(crate) fn is_dns_subdomain(s: &str) -> bool {
    s.len() <= 253 && s.split('.').all(is_dns_label)
}

/// `<domain>/<name>`: what `resources.limits` keys and `extendedResourceName` take.
pub(crate) fn is_extended_resource_name(name: &str) -> bool {
    name.split_once('/').is_some_and(|(domain, id)| {
        is_dns_subdomain(domain)
            && !id.is_empty()
            && id.len() <= 63
            && id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
            && id.as_bytes()[0].is_ascii_alphanumeric()
            && id.as_bytes()[id.len() - 1].is_ascii_alphanumeric()
    })
}

/// `<prefix>-<index>` with the index zero-padded to `width` digits.
pub(crate) fn indexed_name(prefix: &str, index: u32, width: usize) -> String {
    format!("{prefix}-{index:0width$}")
}

/// Digits needed so that `count` indexed names sort in index order: at least four, so
/// names stay the same for every size up to 10,000.
pub(crate) fn index_width(count: u32) -> usize {
    let mut width = 1;
    let mut rest = count.saturating_sub(1) / 10;
    while rest > 0 {
        width += 1;
        rest /= 10;
    }
    width.max(4)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dns_names() {
        for ok in ["a", "gpu-0", "hgx-h100-0001", "0a"] {
            assert!(is_dns_label(ok), "{ok}");
        }
        for bad in ["", "-a", "a-", "A", "a.b", "a_b", &"x".repeat(64)] {
            assert!(!is_dns_label(bad), "{bad}");
        }
        assert!(is_dns_subdomain("mig-1g.10gb.gpu.example.com"));
        assert!(!is_dns_subdomain("a..b"));
    }

    #[test]
    fn cel_strings_are_escaped() {
        assert_eq!(cel_string("NVIDIA H100"), "'NVIDIA H100'");
        assert_eq!(cel_string("it's"), r"'it\'s'");
        assert_eq!(cel_string(r"a\b"), r"'a\\b'");
    }

    #[test]
    fn indexed_names_sort_in_index_order() {
        for count in [1, 10, 10_000, 10_001, 123_456] {
            let width = index_width(count);
            let indices: std::collections::BTreeSet<u32> =
                [0, 9, 10, 999, 9_999, 10_000, count - 1]
                    .into_iter()
                    .filter(|&i| i < count)
                    .collect();
            let names: Vec<String> = indices
                .into_iter()
                .map(|i| indexed_name("n", i, width))
                .collect();
            assert!(names.windows(2).all(|w| w[0] < w[1]), "{names:?}");
        }
        assert_eq!(indexed_name("n", 7, index_width(10_000)), "n-0007");
        assert_eq!(indexed_name("n", 7, index_width(10_001)), "n-00007");
    }
}
