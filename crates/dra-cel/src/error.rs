//! Typed errors. `Display` gives only the CEL part, worded like upstream; the caller adds
//! the object context with [`SelectorContext`].

use std::fmt;

use crate::ast::{Position, Source};

/// One problem found while parsing or type-checking, with its place in the expression.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Issue {
    /// The message as cel-go words it, e.g. `undefined field 'nosuchfield'`.
    pub message: String,
    /// Where it is.
    pub position: Position,
}

impl Issue {
    pub(crate) fn at(source: &Source, offset: usize, message: String) -> Issue {
        Issue {
            message,
            position: source.position_of_offset(offset),
        }
    }
}

/// Formats issues like cel-go's `Issues.String()`: `ERROR: <input>:L:C: msg`, the source
/// line and a caret line, issues sorted by position.
pub(crate) fn format_issues(source: &Source, issues: &[Issue]) -> String {
    let mut sorted: Vec<&Issue> = issues.iter().collect();
    sorted.sort_by_key(|i| (i.position.line, i.position.column));
    let mut out = Vec::new();
    for issue in sorted {
        let pos = issue.position;
        let mut text = format!(
            "ERROR: <input>:{}:{}: {}",
            pos.line,
            pos.column + 1,
            issue.message
        );
        if let Some(line) = source.line_text(pos.line)
            && line.len() <= 16384
        {
            let line = line.replace('\t', " ");
            text.push_str("\n | ");
            text.push_str(&line);
            text.push_str("\n | ");
            let mut chars = line.chars();
            for _ in 0..pos.column {
                match chars.next() {
                    Some(c) if c.len_utf8() > 1 => text.push('\u{ff0e}'),
                    Some(_) => text.push('.'),
                    None => break,
                }
            }
            match chars.next() {
                Some(c) if c.len_utf8() > 1 => text.push('\u{ff3e}'),
                _ => text.push('^'),
            }
        }
        out.push(text);
    }
    out.join("\n")
}

/// Why an expression could not be compiled.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CompileError {
    /// Syntax or type errors, displayed like the API server's
    /// `compilation failed: ERROR: <input>:1:7: undefined field 'x' ...`.
    #[error("compilation failed: {display}")]
    Invalid {
        /// Each problem with its position (for `dra lint`).
        issues: Vec<Issue>,
        /// cel-go's rendering of all issues (with source line and caret).
        display: String,
    },
    /// The expression type-checks but its result is neither `bool` nor the attribute type.
    #[error("must evaluate to bool or the unknown type, not {found}")]
    ResultType {
        /// The result type as cel-go prints it (`string`, `list(int)`, ...).
        found: String,
    },
    /// A constant argument is rejected when the program is built (an invalid regular
    /// expression in `find`/`findAll`).
    #[error("program instantiation failed: {message}")]
    Program {
        /// The reason.
        message: String,
        /// Where the offending argument is.
        position: Position,
    },
    /// Longer than `CELSelectorExpressionMaxLength` (API validation, new expressions only).
    #[error("Too long: may not be more than {limit} bytes")]
    TooLong {
        /// Length of the expression in bytes.
        length: usize,
        /// The limit (10240).
        limit: usize,
    },
}

impl CompileError {
    /// The position of the first issue, where known.
    pub fn position(&self) -> Option<Position> {
        match self {
            CompileError::Invalid { issues, .. } => issues
                .iter()
                .min_by_key(|i| (i.position.line, i.position.column))
                .map(|i| i.position),
            CompileError::Program { position, .. } => Some(*position),
            CompileError::ResultType { .. } | CompileError::TooLong { .. } => None,
        }
    }
}

/// The estimated worst case exceeds the budget (API validation).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("too complex, exceeds cost limit")]
pub struct CostExceeded {
    /// The estimated maximum cost.
    pub estimated_max: u64,
    /// The budget it was checked against.
    pub limit: u64,
}

/// An error while evaluating a selector against one device; `Display` is upstream's text,
/// e.g. `no such key: model. consider using CEL optional chaining ...`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct RuntimeError {
    message: String,
    kind: RuntimeErrorKind,
}

/// Broad class of a runtime error, for callers that branch on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RuntimeErrorKind {
    /// A map key or field is absent (`no such key: x`).
    NoSuchKey,
    /// No function implementation matches the argument types.
    NoSuchOverload,
    /// The runtime cost limit was reached.
    CostLimitExceeded,
    /// The result is not a bool.
    NotBool,
    /// A device attribute could not be converted (bad version string).
    Attribute,
    /// Anything else (overflow, division by zero, bad conversion, ...).
    Other,
}

pub(crate) const NO_SUCH_KEY_HINT: &str = ". consider using CEL optional chaining (.? followed by orValue()) or guarding the check with has() for optional fields";

impl RuntimeError {
    pub(crate) fn new(kind: RuntimeErrorKind, message: String) -> RuntimeError {
        // cel.EnhanceRuntimeError: any message mentioning a missing key gets the hint.
        let message = if message.contains("no such key:") {
            format!("{message}{NO_SUCH_KEY_HINT}")
        } else {
            message
        };
        RuntimeError { message, kind }
    }

    /// What kind of error this is.
    pub fn kind(&self) -> RuntimeErrorKind {
        self.kind
    }

    /// The message (same as `Display`).
    pub fn message(&self) -> &str {
        &self.message
    }
}

/// Which object a selector belongs to, for upstream's error prefixes (SPEC §2.5).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SelectorOwner<'a> {
    /// A DeviceClass, by name.
    Class(&'a str),
    /// A ResourceClaim, by namespace and name.
    Claim {
        /// Namespace of the claim.
        namespace: &'a str,
        /// Name of the claim.
        name: &'a str,
    },
}

impl fmt::Display for SelectorOwner<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SelectorOwner::Class(name) => write!(f, "class {name}"),
            SelectorOwner::Claim { namespace, name } => write!(f, "claim {namespace}/{name}"),
        }
    }
}

/// A selector's place: its owner and index among the owner's selectors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SelectorContext<'a> {
    /// The class or claim.
    pub owner: SelectorOwner<'a>,
    /// Index of the selector in the owner's list.
    pub index: usize,
}

impl SelectorContext<'_> {
    /// `class <name>: selector #<i>: CEL compile error: <err>`.
    pub fn compile_error(&self, err: &CompileError) -> String {
        format!(
            "{}: selector #{}: CEL compile error: {err}",
            self.owner, self.index
        )
    }

    /// `claim <ns>/<name>: selector #<i> on device <driver>/<pool>/<device>: CEL runtime error: <err>`.
    pub fn runtime_error(
        &self,
        driver: &str,
        pool: &str,
        device: &str,
        err: &RuntimeError,
    ) -> String {
        format!(
            "{}: selector #{} on device {driver}/{pool}/{device}: CEL runtime error: {err}",
            self.owner, self.index
        )
    }
}
