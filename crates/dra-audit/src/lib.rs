//! `dra-audit`: checks a platform team runs before and during a move to DRA.
//!
//! * [`lint`]: what the API server would reject ([`dra_api::validate`]), CEL selectors that do
//!   not compile or exceed the cost budget (compiled as the API server compiles new
//!   expressions), and cross-object problems no single object shows (a claim naming a missing
//!   DeviceClass, two classes claiming one `extendedResourceName`, pools with missing slices).
//!
//! Every finding is a [`dra_api::Diagnostic`] naming file:line, object and field.

mod lint;

pub use lint::{LintOptions, lint};
