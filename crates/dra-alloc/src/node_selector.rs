//! `core/v1` NodeSelector matching with the semantics of
//! `k8s.io/component-helpers/scheduling/corev1/nodeaffinity.NewNodeSelector(..).Match(node)`.
//!
//! Terms are ORed; inside a term, `matchExpressions` (on labels) and `matchFields` (only
//! `metadata.name`) are ANDed. A term without requirements selects nothing. Parsing is strict:
//! a selector with an invalid requirement is an error as a whole, as upstream reports it when it
//! builds the selector (the allocator turns that into a fatal error).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{NodeSelector, NodeSelectorRequirement};

/// The parts of a node that node selectors look at.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeFacts {
    pub name: String,
    pub labels: BTreeMap<String, String>,
}

/// A requirement that could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct NodeSelectorError {
    pub message: String,
}

fn invalid(message: String) -> NodeSelectorError {
    NodeSelectorError { message }
}

/// Whether `node` matches `selector`; an error when the selector cannot be parsed.
pub fn node_selector_matches(
    selector: &NodeSelector,
    node: &NodeFacts,
) -> Result<bool, NodeSelectorError> {
    // Upstream parses every term first and fails on any parse error, even when an earlier
    // term would match.
    let mut errors = Vec::new();
    let mut parsed = Vec::with_capacity(selector.node_selector_terms.len());
    for term in &selector.node_selector_terms {
        let expressions = term.match_expressions.as_deref().unwrap_or_default();
        let fields = term.match_fields.as_deref().unwrap_or_default();
        if expressions.is_empty() && fields.is_empty() {
            // A nil or empty term selects no objects.
            continue;
        }
        for requirement in expressions {
            if let Err(e) = check_label_requirement(requirement) {
                errors.push(e.message);
            }
        }
        for requirement in fields {
            if let Err(e) = check_field_requirement(requirement) {
                errors.push(e.message);
            }
        }
        parsed.push((expressions, fields));
    }
    if !errors.is_empty() {
        return Err(invalid(errors.join(", ")));
    }
    Ok(parsed.iter().any(|(expressions, fields)| {
        expressions
            .iter()
            .all(|r| label_requirement_matches(r, &node.labels))
            && fields.iter().all(|r| field_requirement_matches(r, node))
    }))
}

fn values(requirement: &NodeSelectorRequirement) -> &[String] {
    requirement.values.as_deref().unwrap_or_default()
}

fn check_label_requirement(requirement: &NodeSelectorRequirement) -> Result<(), NodeSelectorError> {
    let values = values(requirement);
    if requirement.key.is_empty() {
        return Err(invalid(
            "key: Invalid value: \"\": name part must be non-empty".into(),
        ));
    }
    match requirement.operator.as_str() {
        "In" | "NotIn" => {
            if values.is_empty() {
                return Err(invalid(format!(
                    "values: Invalid value: []: for 'in', 'notin' operators, values set can't be empty (key {})",
                    requirement.key
                )));
            }
        }
        "Exists" | "DoesNotExist" => {
            if !values.is_empty() {
                return Err(invalid(format!(
                    "values: Invalid value: {values:?}: values set must be empty for exists and does not exist (key {})",
                    requirement.key
                )));
            }
        }
        "Gt" | "Lt" => {
            if values.len() != 1 {
                return Err(invalid(format!(
                    "values: Invalid value: {values:?}: for 'Gt', 'Lt' operators, exactly one value is required (key {})",
                    requirement.key
                )));
            }
            if values[0].parse::<i64>().is_err() {
                return Err(invalid(format!(
                    "values[0]: Invalid value: {:?}: for 'Gt', 'Lt' operators, the value must be an integer (key {})",
                    values[0], requirement.key
                )));
            }
        }
        other => {
            return Err(invalid(format!(
                "{other:?} is not a valid label selector operator"
            )));
        }
    }
    Ok(())
}

fn check_field_requirement(requirement: &NodeSelectorRequirement) -> Result<(), NodeSelectorError> {
    match requirement.operator.as_str() {
        "In" | "NotIn" => {
            if values(requirement).len() != 1 {
                return Err(invalid(format!(
                    "unexpected number of value ({}) for node field selector operator {:?}",
                    values(requirement).len(),
                    requirement.operator
                )));
            }
            Ok(())
        }
        other => Err(invalid(format!(
            "{other:?} is not a valid node field selector operator"
        ))),
    }
}

fn label_requirement_matches(
    requirement: &NodeSelectorRequirement,
    labels: &BTreeMap<String, String>,
) -> bool {
    let label = labels.get(&requirement.key);
    let values = values(requirement);
    match requirement.operator.as_str() {
        "In" => label.is_some_and(|v| values.contains(v)),
        "NotIn" => label.is_none_or(|v| !values.contains(v)),
        "Exists" => label.is_some(),
        "DoesNotExist" => label.is_none(),
        "Gt" | "Lt" => {
            let (Some(label), Ok(bound)) = (label, values[0].parse::<i64>()) else {
                return false;
            };
            let Ok(actual) = label.parse::<i64>() else {
                return false;
            };
            if requirement.operator == "Gt" {
                actual > bound
            } else {
                actual < bound
            }
        }
        _ => false,
    }
}

fn field_requirement_matches(requirement: &NodeSelectorRequirement, node: &NodeFacts) -> bool {
    // Only `metadata.name` is a node field; any other key reads as the empty string.
    let actual = if requirement.key == "metadata.name" {
        node.name.as_str()
    } else {
        ""
    };
    let wanted = values(requirement)[0].as_str();
    match requirement.operator.as_str() {
        "In" => actual == wanted,
        "NotIn" => actual != wanted,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::NodeSelectorTerm;

    fn req(key: &str, op: &str, values: &[&str]) -> NodeSelectorRequirement {
        NodeSelectorRequirement {
            key: key.into(),
            operator: op.into(),
            values: if values.is_empty() {
                None
            } else {
                Some(values.iter().map(|v| v.to_string()).collect())
            },
        }
    }

    fn node() -> NodeFacts {
        NodeFacts {
            name: "node-a".into(),
            labels: [("zone", "a"), ("gpus", "8")]
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        }
    }

    fn selector(
        terms: Vec<(Vec<NodeSelectorRequirement>, Vec<NodeSelectorRequirement>)>,
    ) -> NodeSelector {
        NodeSelector {
            node_selector_terms: terms
                .into_iter()
                .map(|(e, f)| NodeSelectorTerm {
                    match_expressions: Some(e),
                    match_fields: Some(f),
                })
                .collect(),
        }
    }

    #[test]
    fn operators() {
        let cases: &[(NodeSelectorRequirement, bool)] = &[
            (req("zone", "In", &["a", "b"]), true),
            (req("zone", "In", &["b"]), false),
            (req("zone", "NotIn", &["b"]), true),
            (req("missing", "NotIn", &["b"]), true),
            (req("zone", "Exists", &[]), true),
            (req("zone", "DoesNotExist", &[]), false),
            (req("gpus", "Gt", &["4"]), true),
            (req("gpus", "Lt", &["4"]), false),
            (req("zone", "Gt", &["4"]), false),
        ];
        for (requirement, want) in cases {
            let s = selector(vec![(vec![requirement.clone()], vec![])]);
            assert_eq!(
                node_selector_matches(&s, &node()),
                Ok(*want),
                "{requirement:?}"
            );
        }
    }

    #[test]
    fn fields_and_terms() {
        let by_name = selector(vec![(
            vec![],
            vec![req("metadata.name", "In", &["node-a"])],
        )]);
        assert_eq!(node_selector_matches(&by_name, &node()), Ok(true));
        let other = selector(vec![
            (vec![], vec![req("metadata.name", "In", &["node-b"])]),
            (vec![req("zone", "In", &["a"])], vec![]),
        ]);
        assert_eq!(node_selector_matches(&other, &node()), Ok(true));
        let empty_term = selector(vec![(vec![], vec![])]);
        assert_eq!(node_selector_matches(&empty_term, &node()), Ok(false));
    }

    #[test]
    fn parse_errors_fail_the_whole_selector() {
        let bad = selector(vec![
            (vec![req("zone", "In", &["a"])], vec![]),
            (vec![req("zone", "Gt", &["x"])], vec![]),
        ]);
        assert!(node_selector_matches(&bad, &node()).is_err());
        let bad_field = selector(vec![(
            vec![],
            vec![req("metadata.name", "In", &["a", "b"])],
        )]);
        assert!(node_selector_matches(&bad_field, &node()).is_err());
        let bad_op = selector(vec![(vec![req("zone", "Like", &["a"])], vec![])]);
        assert!(node_selector_matches(&bad_op, &node()).is_err());
    }
}
