//! Findings about the input: load problems and API validation errors.

use std::fmt;

use crate::source::{ObjectRef, Source};

/// How bad a finding is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Severity {
    /// The API server would reject the object, or the input cannot be read.
    Error,
    /// Suspicious but accepted (unknown kinds, documented rules the API server
    /// does not enforce).
    Warning,
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
        })
    }
}

/// One finding, printed as
/// `FILE:LINE: error: Kind namespace/name: field.path: message`
/// (parts that are unknown are left out).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Diagnostic {
    pub severity: Severity,
    pub source: Option<Source>,
    pub object: Option<ObjectRef>,
    /// Field path in Kubernetes notation: `spec.devices[3].attributes["x"]`.
    pub field: Option<String>,
    /// For validation errors, Kubernetes' wording: `Invalid value: 0: must be greater than zero`.
    pub message: String,
}

impl Diagnostic {
    pub fn error(message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            severity: Severity::Error,
            source: None,
            object: None,
            field: None,
            message: message.into(),
        }
    }

    pub fn warning(message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            severity: Severity::Warning,
            ..Diagnostic::error(message)
        }
    }

    pub fn at(mut self, source: Source) -> Diagnostic {
        self.source = Some(source);
        self
    }

    pub fn on(mut self, object: ObjectRef) -> Diagnostic {
        self.object = Some(object);
        self
    }

    pub fn field(mut self, field: impl Into<String>) -> Diagnostic {
        self.field = Some(field.into());
        self
    }

    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(source) = &self.source {
            write!(f, "{source}: ")?;
        }
        write!(f, "{}: ", self.severity)?;
        if let Some(object) = &self.object {
            write!(f, "{object}: ")?;
        }
        if let Some(field) = &self.field {
            write!(f, "{field}: ")?;
        }
        f.write_str(&self.message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_leaves_out_unknown_parts() {
        let full = Diagnostic::error("Invalid value: 0: must be greater than zero")
            .at(Source::new("a.yaml", 12))
            .on(ObjectRef::new("ResourceClaim", Some("default"), "gpu"))
            .field("spec.devices.requests[0].exactly.count");
        assert_eq!(
            full.to_string(),
            "a.yaml:12: error: ResourceClaim default/gpu: spec.devices.requests[0].exactly.count: Invalid value: 0: must be greater than zero"
        );
        assert_eq!(
            Diagnostic::warning("skipped").to_string(),
            "warning: skipped"
        );
        let slice = Diagnostic::error("x").on(ObjectRef::new("ResourceSlice", None, ""));
        assert_eq!(slice.to_string(), "error: ResourceSlice <unnamed>: x");
    }
}
