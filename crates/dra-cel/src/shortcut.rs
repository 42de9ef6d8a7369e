//! Selectors whose answer needs no CEL view of the device.
//!
//! Most DeviceClasses select by driver (`device.driver == "gpu.example.com"`) or by one
//! attribute compared with a constant (`device.attributes["gpu.example.com"].type == "gpu"`).
//! Building the CEL view of a device (every attribute converted, versions parsed) costs far more
//! than such a comparison, so a caller that already holds the device's driver and attributes in
//! another form can answer these selectors directly, provided it follows the rules of
//! [`Shortcut`]: whenever they do not settle the answer, the caller evaluates the selector as
//! usual, so results and errors never differ from [`Selector::evaluate`](crate::Selector).

use crate::program::{Const, Node};

/// A selector that is one equality between the driver or one attribute and a constant
/// (either operand order), found by [`Selector::shortcut`](crate::Selector::shortcut).
///
/// Valid only for a device whose CEL view converts without error: no attribute without a
/// value and every `version`/`versions` attribute a valid semantic version. Otherwise every
/// evaluation fails, as [`DeviceInput::new`](crate::DeviceInput::new) documents, and the caller
/// must evaluate the selector.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Shortcut {
    /// `device.driver == "<driver>"`: the answer is the comparison of the driver names.
    DriverIs(Box<str>),
    /// `device.attributes["<domain>"].<id> == <value>`. The attribute is looked up as
    /// `lookupAttribute` does: `<domain>/<id>`, else the bare `<id>` when `<domain>` is the
    /// device's driver (neither part contains a `/`). When the attribute holds a value of the
    /// constant's kind the answer is their equality; when it is missing (a runtime error) or of
    /// another kind (CEL's heterogeneous equality) the caller must evaluate.
    AttributeIs {
        /// `<domain>/<id>`.
        qualified_name: Box<str>,
        value: ShortcutValue,
    },
}

/// The constant of an [`Shortcut::AttributeIs`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ShortcutValue {
    Bool(bool),
    Int(i64),
    Str(Box<str>),
}

/// Cost of the shortcut's operations, an upper bound: the lookup (4) plus the equality
/// (a tenth of the shorter string, rounded up).
fn worst_cost(constant_len: usize) -> u64 {
    5 + constant_len as u64
}

/// The shortcut for a planned program, if it is one and cannot exceed `cost_limit`.
pub(crate) fn find(program: &Node, cost_limit: u64) -> Option<Shortcut> {
    let Node::Eq(a, b) = program else {
        return None;
    };
    let (operand, constant) = match (&**a, &**b) {
        (Node::Const(c), other) | (other, Node::Const(c)) => (other, c),
        _ => return None,
    };
    let shortcut = match (operand, constant) {
        (Node::Driver, Const::Str(name)) => {
            (worst_cost(name.len()) <= cost_limit).then(|| Shortcut::DriverIs(name.clone()))?
        }
        (Node::Attr(domain, id), constant) => {
            let plain = |s: &str| !s.is_empty() && !s.contains('/');
            if !plain(domain) || !plain(id) {
                return None;
            }
            let (value, len) = match constant {
                Const::Bool(b) => (ShortcutValue::Bool(*b), 0),
                Const::Int(i) => (ShortcutValue::Int(*i), 0),
                Const::Str(s) => (ShortcutValue::Str(s.clone()), s.len()),
                _ => return None,
            };
            if worst_cost(len) > cost_limit {
                return None;
            }
            Shortcut::AttributeIs {
                qualified_name: format!("{domain}/{id}").into(),
                value,
            }
        }
        _ => return None,
    };
    Some(shortcut)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Compiler, CompilerOptions};

    fn shortcut_of(expression: &str) -> Option<Shortcut> {
        let selector = Compiler::default().compile(expression).expect("compiles");
        selector.shortcut().cloned()
    }

    fn attribute_is(qualified_name: &str, value: ShortcutValue) -> Option<Shortcut> {
        Some(Shortcut::AttributeIs {
            qualified_name: qualified_name.into(),
            value,
        })
    }

    #[test]
    fn plain_comparisons_are_recognized_in_either_order() {
        let driver = Some(Shortcut::DriverIs("gpu.example.com".into()));
        assert_eq!(shortcut_of("device.driver == 'gpu.example.com'"), driver);
        assert_eq!(shortcut_of("\"gpu.example.com\" == device.driver"), driver);
        assert_eq!(
            shortcut_of("device.attributes['gpu.example.com'].type == 'gpu'"),
            attribute_is("gpu.example.com/type", ShortcutValue::Str("gpu".into()))
        );
        assert_eq!(
            shortcut_of("7 == device.attributes[\"dom\"][\"index\"]"),
            attribute_is("dom/index", ShortcutValue::Int(7))
        );
        assert_eq!(
            shortcut_of("device.attributes['dom'].healthy == true"),
            attribute_is("dom/healthy", ShortcutValue::Bool(true))
        );
    }

    #[test]
    fn anything_else_is_left_to_evaluation() {
        for expression in [
            "device.driver != 'gpu.example.com'",
            "device.driver == 'a' && device.driver == 'b'",
            "device.driver.startsWith('gpu')",
            "device.attributes['dom'].type == device.driver",
            "device.attributes['dom'].version == semver('1.0.0')",
            "device.attributes['dom'].ratio == 1.5",
            "device.attributes['a/b'].c == 'x'",
            "device.attributes['dom']['a/b'] == 'x'",
            "device.capacity['dom'].memory == quantity('1Gi')",
            "has(device.attributes['dom'].type)",
            "true",
        ] {
            assert_eq!(shortcut_of(expression), None, "{expression}");
        }
    }

    #[test]
    fn a_cost_limit_the_comparison_could_exceed_disables_the_shortcut() {
        let compiler = Compiler::new(CompilerOptions {
            cost_limit: 4,
            ..CompilerOptions::default()
        });
        let selector = compiler
            .compile("device.driver == 'gpu.example.com'")
            .expect("compiles");
        assert_eq!(selector.shortcut(), None);
    }
}
