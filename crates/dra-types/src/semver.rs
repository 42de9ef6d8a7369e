//! Semantic versions as `github.com/blang/semver/v4` parses and orders them.
//!
//! Kubernetes validates DRA `version` attributes with blang's strict `Parse` and the
//! CEL `semver()` function uses it too, so both the accepted syntax and the ordering
//! follow blang, not the `semver` crate: build metadata carries no precedence (two
//! versions differing only in build metadata are equal) and the error cases are
//! blang's (empty identifiers, leading zeros, characters outside `[0-9A-Za-z-]`).

use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::str::FromStr;

/// A parsed semantic version. Equality, ordering and hashing follow semver precedence
/// (blang `Version.Compare`): build metadata is ignored.
#[derive(Clone, Debug)]
pub struct Semver {
    major: u64,
    minor: u64,
    patch: u64,
    pre: Vec<PreRelease>,
    build: Vec<String>,
}

/// One dot-separated pre-release identifier.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum PreRelease {
    Numeric(u64),
    Alphanumeric(String),
}

impl Ord for PreRelease {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (PreRelease::Numeric(a), PreRelease::Numeric(b)) => a.cmp(b),
            (PreRelease::Numeric(_), PreRelease::Alphanumeric(_)) => Ordering::Less,
            (PreRelease::Alphanumeric(_), PreRelease::Numeric(_)) => Ordering::Greater,
            // Go compares strings bytewise, as Rust does.
            (PreRelease::Alphanumeric(a), PreRelease::Alphanumeric(b)) => a.cmp(b),
        }
    }
}

impl PartialOrd for PreRelease {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Display for PreRelease {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PreRelease::Numeric(n) => write!(f, "{n}"),
            PreRelease::Alphanumeric(s) => f.write_str(s),
        }
    }
}

/// Which of the three version numbers an error is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VersionPart {
    Major,
    Minor,
    Patch,
}

impl fmt::Display for VersionPart {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            VersionPart::Major => "major",
            VersionPart::Minor => "minor",
            VersionPart::Patch => "patch",
        })
    }
}

/// Why a string is not a semantic version (blang's error cases).
///
/// The messages are blang's own words, capital letters included (and Go's `strconv` errors
/// where blang passes them through), because users compare them with what the scheduler and
/// the API server print.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SemverError {
    #[error("Version string empty")]
    Empty,
    #[error("No Major.Minor.Patch elements found")]
    MissingParts,
    #[error("Invalid character(s) found in {part} number {text:?}")]
    InvalidNumber { part: VersionPart, text: String },
    #[error("{} number must not contain leading zeroes {text:?}", part.capitalized())]
    LeadingZeroes { part: VersionPart, text: String },
    #[error("strconv.ParseUint: parsing \"\": invalid syntax")]
    EmptyNumber { part: VersionPart },
    #[error("strconv.ParseUint: parsing {text:?}: value out of range")]
    NumberOutOfRange { part: VersionPart, text: String },
    #[error("Prerelease is empty")]
    EmptyPreRelease,
    #[error("Numeric PreRelease version must not contain leading zeroes {0:?}")]
    PreReleaseLeadingZeroes(String),
    #[error("Invalid character(s) found in prerelease {0:?}")]
    InvalidPreRelease(String),
    #[error("strconv.ParseUint: parsing {0:?}: value out of range")]
    PreReleaseOutOfRange(String),
    #[error("Build meta data is empty")]
    EmptyBuild,
    #[error("Invalid character(s) found in build meta data {0:?}")]
    InvalidBuild(String),
    #[error("Short version cannot contain PreRelease/Build meta data")]
    ShortVersionWithMetadata,
}

impl VersionPart {
    fn capitalized(&self) -> &'static str {
        match self {
            VersionPart::Major => "Major",
            VersionPart::Minor => "Minor",
            VersionPart::Patch => "Patch",
        }
    }
}

fn only_digits(s: &str) -> bool {
    s.bytes().all(|b| b.is_ascii_digit())
}

fn only_alphanumeric(s: &str) -> bool {
    s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
}

fn has_leading_zero(s: &str) -> bool {
    s.len() > 1 && s.starts_with('0')
}

fn parse_number(text: &str, part: VersionPart) -> Result<u64, SemverError> {
    if !only_digits(text) {
        return Err(SemverError::InvalidNumber {
            part,
            text: text.to_string(),
        });
    }
    if has_leading_zero(text) {
        return Err(SemverError::LeadingZeroes {
            part,
            text: text.to_string(),
        });
    }
    if text.is_empty() {
        return Err(SemverError::EmptyNumber { part });
    }
    text.parse().map_err(|_| SemverError::NumberOutOfRange {
        part,
        text: text.to_string(),
    })
}

fn parse_pre_release(text: &str) -> Result<PreRelease, SemverError> {
    if text.is_empty() {
        return Err(SemverError::EmptyPreRelease);
    }
    if only_digits(text) {
        if has_leading_zero(text) {
            return Err(SemverError::PreReleaseLeadingZeroes(text.to_string()));
        }
        return text
            .parse()
            .map(PreRelease::Numeric)
            .map_err(|_| SemverError::PreReleaseOutOfRange(text.to_string()));
    }
    if only_alphanumeric(text) {
        return Ok(PreRelease::Alphanumeric(text.to_string()));
    }
    Err(SemverError::InvalidPreRelease(text.to_string()))
}

impl Semver {
    /// blang `semver.Parse`: strict `MAJOR.MINOR.PATCH[-PRE][+BUILD]`.
    pub fn parse(s: &str) -> Result<Semver, SemverError> {
        if s.is_empty() {
            return Err(SemverError::Empty);
        }
        let mut parts = s.splitn(3, '.');
        let (Some(major), Some(minor), Some(rest)) = (parts.next(), parts.next(), parts.next())
        else {
            return Err(SemverError::MissingParts);
        };
        let major = parse_number(major, VersionPart::Major)?;
        let minor = parse_number(minor, VersionPart::Minor)?;

        let mut patch = rest;
        let mut build_text = None;
        if let Some(i) = patch.find('+') {
            build_text = Some(&patch[i + 1..]);
            patch = &patch[..i];
        }
        let mut pre_text = None;
        if let Some(i) = patch.find('-') {
            pre_text = Some(&patch[i + 1..]);
            patch = &patch[..i];
        }
        let patch = parse_number(patch, VersionPart::Patch)?;

        let pre = match pre_text {
            Some(text) => text
                .split('.')
                .map(parse_pre_release)
                .collect::<Result<_, _>>()?,
            None => Vec::new(),
        };
        let build = match build_text {
            Some(text) => text
                .split('.')
                .map(|id| {
                    if id.is_empty() {
                        Err(SemverError::EmptyBuild)
                    } else if !only_alphanumeric(id) {
                        Err(SemverError::InvalidBuild(id.to_string()))
                    } else {
                        Ok(id.to_string())
                    }
                })
                .collect::<Result<_, _>>()?,
            None => Vec::new(),
        };
        Ok(Semver {
            major,
            minor,
            patch,
            pre,
            build,
        })
    }

    /// CEL `semver(s, true)` (Kubernetes `normalizeAndParse`): strips one leading `v`,
    /// leading zeros of each of the first three dot-separated parts, and pads a
    /// missing minor or patch number with `0`, then parses strictly.
    pub fn parse_tolerant(s: &str) -> Result<Semver, SemverError> {
        let s = s.strip_prefix('v').unwrap_or(s);
        let mut parts: Vec<String> = s
            .splitn(3, '.')
            .map(|part| {
                if part.len() <= 1 {
                    return part.to_string();
                }
                let trimmed = part.trim_start_matches('0');
                if trimmed.as_bytes().first().is_some_and(u8::is_ascii_digit) {
                    trimmed.to_string()
                } else {
                    format!("0{trimmed}")
                }
            })
            .collect();
        if parts.len() < 3 {
            if parts.last().is_some_and(|p| p.contains(['+', '-'])) {
                return Err(SemverError::ShortVersionWithMetadata);
            }
            parts.resize(3, "0".to_string());
        }
        Semver::parse(&parts.join("."))
    }

    pub fn major(&self) -> u64 {
        self.major
    }

    pub fn minor(&self) -> u64 {
        self.minor
    }

    pub fn patch(&self) -> u64 {
        self.patch
    }

    /// True when the version has pre-release identifiers (`1.0.0-rc.1`).
    pub fn is_pre_release(&self) -> bool {
        !self.pre.is_empty()
    }
}

impl FromStr for Semver {
    type Err = SemverError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Semver::parse(s)
    }
}

impl fmt::Display for Semver {
    /// blang `Version.String()`; for a strictly parsed version this is the input.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)?;
        for (i, id) in self.pre.iter().enumerate() {
            f.write_str(if i == 0 { "-" } else { "." })?;
            write!(f, "{id}")?;
        }
        for (i, id) in self.build.iter().enumerate() {
            f.write_str(if i == 0 { "+" } else { "." })?;
            f.write_str(id)?;
        }
        Ok(())
    }
}

impl Ord for Semver {
    /// blang `Version.Compare`: numbers, then pre-release (a version without one is
    /// greater; identifiers compare pairwise, a longer list wins a tie); build
    /// metadata is ignored.
    fn cmp(&self, other: &Self) -> Ordering {
        (self.major, self.minor, self.patch)
            .cmp(&(other.major, other.minor, other.patch))
            .then_with(|| match (self.pre.is_empty(), other.pre.is_empty()) {
                (true, true) => Ordering::Equal,
                (true, false) => Ordering::Greater,
                (false, true) => Ordering::Less,
                (false, false) => self.pre.cmp(&other.pre),
            })
    }
}

impl PartialOrd for Semver {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Semver {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Semver {}

impl Hash for Semver {
    fn hash<H: Hasher>(&self, state: &mut H) {
        (self.major, self.minor, self.patch).hash(state);
        self.pre.hash(state);
    }
}

#[cfg(test)]
mod tests;
