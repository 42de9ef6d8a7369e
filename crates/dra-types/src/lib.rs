//! Pure value types with exact Kubernetes semantics, shared by every dra crate.
//!
//! * [`Quantity`]: `resource.Quantity` from k8s.io/apimachinery: parsing with every
//!   suffix and exponent, rounding up to nano units, the BinarySI cap, exact
//!   comparison and arithmetic, and the canonical string form the API server writes.
//! * [`Semver`]: a semantic version as `github.com/blang/semver/v4` parses (strict)
//!   and orders it (build metadata carries no precedence).
//! * [`parallel::map_in_order`]: a parallel map whose result does not depend on thread timing,
//!   shared by the loader and the simulation.
//! * [`bytes::equal`], [`bytes::starts_with`]: byte-string equality compared in the caller,
//!   eight bytes at a time, for the index's names and repeated device text.
//! * [`lists::reserve_first`]: room for exactly one element in lists that mostly hold one.
//! * [`json_subset::Cursor`]: a byte-level reader of a subset of JSON on which it agrees
//!   with serde_json, shared by the loader's first look at a document and the index's
//!   reading of ResourceSlice text.
//!
//! This crate has no knowledge of Kubernetes objects; `dra-api` and `dra-cel` build on it.
//!
//! Key decision: both types are hand-written to reproduce Go's behaviour, quirks
//! included (see the module docs), because values computed here are written back to
//! the API (`consumedCapacity`, counters) and compared with what Kubernetes computes.
//!
//! ```
//! use dra_types::{Format, Quantity, Semver};
//!
//! let q: Quantity = "1.5Gi".parse().unwrap();
//! assert_eq!(q.to_string(), "1536Mi");
//! assert_eq!(q, "1610612736".parse().unwrap());
//! assert_eq!(q.format(), Format::BinarySI);
//! let half = Quantity::parse("0.5").unwrap();
//! assert_eq!(half.to_string(), "500m");
//!
//! let a = Semver::parse("1.2.3-rc.1+build.5").unwrap();
//! assert!(a < Semver::parse("1.2.3").unwrap());
//! assert_eq!(a, Semver::parse("1.2.3-rc.1").unwrap()); // build metadata has no precedence
//! assert_eq!(Semver::parse_tolerant("v1.2").unwrap().to_string(), "1.2.0");
//! ```

pub mod bytes;
pub mod hashing;
pub mod json_subset;
pub mod lists;
pub mod parallel;
mod quantity;
mod semver;
pub mod shared_once;

pub use quantity::{Format, MAX_BINARY_FRACTION_DIGITS, Quantity, QuantityError};
pub use semver::{Semver, SemverError, VersionPart};
