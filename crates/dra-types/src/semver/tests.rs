//! Golden tables from the behaviour of github.com/blang/semver/v4 (strict `Parse`,
//! `Compare`) and the Kubernetes CEL normalizing `semver(s, true)`.

use super::*;
use proptest::prelude::*;

fn v(s: &str) -> Semver {
    Semver::parse(s).unwrap_or_else(|e| panic!("{s:?} should parse: {e}"))
}

#[test]
fn valid_versions_print_back_unchanged() {
    let cases = [
        "1.2.3",
        "0.0.1",
        "0.0.0",
        "0.0.1-alpha.preview+123.456",
        "1.2.3-alpha.1+123.456",
        "1.2.3-alpha.1",
        "1.2.3+123.456",
        "1.2.3-alpha.b-eta+123.b-uild",
        "1.2.3-0a",
        "1.2.3-a-",
        "1.2.3--",
        "1.2.3+01",
        "1.2.3+build-x",
        "18446744073709551615.0.0",
        "1.0.0-0.3.7",
        "1.0.0-x.7.z.92",
        "1.0.0+20130313144700",
        "1.0.0-beta+exp.sha.5114f85",
    ];
    for s in cases {
        assert_eq!(v(s).to_string(), s);
    }
    let parsed = v("1.2.3-alpha.1+b");
    assert_eq!((parsed.major(), parsed.minor(), parsed.patch()), (1, 2, 3));
    assert!(parsed.is_pre_release());
    assert!(!v("1.2.3+b").is_pre_release());
}

#[test]
fn invalid_versions() {
    use SemverError as E;
    use VersionPart::{Major, Minor, Patch};
    let s = |x: &str| x.to_string();
    let cases: Vec<(&str, SemverError)> = vec![
        ("", E::Empty),
        (".", E::MissingParts),
        ("1.", E::MissingParts),
        (".1", E::MissingParts),
        ("1", E::MissingParts),
        ("1.2", E::MissingParts),
        (
            "a.b.c",
            E::InvalidNumber {
                part: Major,
                text: s("a"),
            },
        ),
        (
            "1.a.b",
            E::InvalidNumber {
                part: Minor,
                text: s("a"),
            },
        ),
        (
            "1.1.a",
            E::InvalidNumber {
                part: Patch,
                text: s("a"),
            },
        ),
        ("..", E::EmptyNumber { part: Major }),
        ("1..", E::EmptyNumber { part: Minor }),
        ("1.1.", E::EmptyNumber { part: Patch }),
        ("1.1.+123", E::EmptyNumber { part: Patch }),
        ("1.1.-beta", E::EmptyNumber { part: Patch }),
        (
            "-1.1.1",
            E::InvalidNumber {
                part: Major,
                text: s("-1"),
            },
        ),
        (
            "1.-1.1",
            E::InvalidNumber {
                part: Minor,
                text: s("-1"),
            },
        ),
        ("1.1.-1", E::EmptyNumber { part: Patch }),
        (
            "v1.2.3",
            E::InvalidNumber {
                part: Major,
                text: s("v1"),
            },
        ),
        (
            " 1.2.3",
            E::InvalidNumber {
                part: Major,
                text: s(" 1"),
            },
        ),
        (
            "1.2.3.4",
            E::InvalidNumber {
                part: Patch,
                text: s("3.4"),
            },
        ),
        (
            "20000000000000000000.1.1",
            E::NumberOutOfRange {
                part: Major,
                text: s("20000000000000000000"),
            },
        ),
        (
            "1.20000000000000000000.1",
            E::NumberOutOfRange {
                part: Minor,
                text: s("20000000000000000000"),
            },
        ),
        (
            "1.1.20000000000000000000",
            E::NumberOutOfRange {
                part: Patch,
                text: s("20000000000000000000"),
            },
        ),
        (
            "1.1.1-20000000000000000000",
            E::PreReleaseOutOfRange(s("20000000000000000000")),
        ),
        (
            "01.1.1",
            E::LeadingZeroes {
                part: Major,
                text: s("01"),
            },
        ),
        (
            "1.001.1",
            E::LeadingZeroes {
                part: Minor,
                text: s("001"),
            },
        ),
        (
            "1.1.01",
            E::LeadingZeroes {
                part: Patch,
                text: s("01"),
            },
        ),
        ("1.1.1-01", E::PreReleaseLeadingZeroes(s("01"))),
        ("1.1.1-beta.001", E::PreReleaseLeadingZeroes(s("001"))),
        ("0.0.0-!", E::InvalidPreRelease(s("!"))),
        ("0.0.0+!", E::InvalidBuild(s("!"))),
        ("0.0.0-.alpha", E::EmptyPreRelease),
        ("0.0.0-", E::EmptyPreRelease),
        ("0.0.0-alpha..1", E::EmptyPreRelease),
        ("0.0.0-alpha+", E::EmptyBuild),
        ("0.0.0+a..b", E::EmptyBuild),
        ("1.2.3-a+b+c", E::InvalidBuild(s("b+c"))),
        ("1.2.3-é", E::InvalidPreRelease(s("é"))),
        (
            "1.2.3 ",
            E::InvalidNumber {
                part: Patch,
                text: s("3 "),
            },
        ),
    ];
    for (input, want) in cases {
        assert_eq!(Semver::parse(input).err(), Some(want), "{input:?}");
    }
}

#[test]
fn precedence_follows_blang() {
    // each version is lower than the next (semver.org §11 plus blang specifics)
    let ascending = [
        "0.0.1",
        "0.1.0",
        "1.0.0-0",
        "1.0.0-2",
        "1.0.0-10",
        "1.0.0-10.1",
        "1.0.0-A",
        "1.0.0-Z",
        "1.0.0-a",
        "1.0.0-alpha",
        "1.0.0-alpha.1",
        "1.0.0-alpha.beta",
        "1.0.0-beta",
        "1.0.0-beta.2",
        "1.0.0-beta.11",
        "1.0.0-rc.1",
        "1.0.0",
        "1.0.1",
        "1.1.0",
        "2.0.0",
        "2.1.0",
        "2.1.1",
        "10.0.0",
    ];
    for pair in ascending.windows(2) {
        assert!(v(pair[0]) < v(pair[1]), "{} < {}", pair[0], pair[1]);
        assert!(v(pair[1]) > v(pair[0]), "{} > {}", pair[1], pair[0]);
    }
}

#[test]
fn build_metadata_has_no_precedence() {
    use std::collections::hash_map::DefaultHasher;
    let hash = |x: &Semver| {
        let mut h = DefaultHasher::new();
        x.hash(&mut h);
        h.finish()
    };
    let a = v("1.2.3+build.1");
    let b = v("1.2.3+build.2");
    let c = v("1.2.3");
    assert_eq!(a, b);
    assert_eq!(a, c);
    assert_eq!(a.cmp(&b), Ordering::Equal);
    assert_eq!(hash(&a), hash(&b));
    assert_eq!(hash(&a), hash(&c));
    // ... but Display keeps it
    assert_eq!(a.to_string(), "1.2.3+build.1");
    assert_eq!(v("1.0.0-rc.1+x"), v("1.0.0-rc.1+y"));
    assert!(v("1.0.0-rc.1+zzz") < v("1.0.0-rc.2+aaa"));
}

#[test]
fn tolerant_parsing_normalizes_like_kubernetes_cel() {
    let cases = [
        ("v1.2.3", "1.2.3"),
        ("1.2.0-alpha", "1.2.0-alpha"),
        ("1.2.00", "1.2.0"),
        ("01.02.03", "1.2.3"),
        ("00.0.03", "0.0.3"),
        ("000.0.03", "0.0.3"),
        ("1.2", "1.2.0"),
        ("1", "1.0.0"),
        ("v1", "1.0.0"),
        ("v01.010", "1.10.0"),
        ("1.2.03-beta+b", "1.2.3-beta+b"),
        ("1.2.0-rc", "1.2.0-rc"),
    ];
    for (input, want) in cases {
        let got = Semver::parse_tolerant(input).unwrap_or_else(|e| panic!("{input}: {e}"));
        assert_eq!(got.to_string(), want, "{input}");
    }
    let errors = [
        ("1.2-beta", SemverError::ShortVersionWithMetadata),
        ("1+b", SemverError::ShortVersionWithMetadata),
        // unlike blang ParseTolerant, the CEL variant does not trim spaces
        (
            " 1.2.3",
            SemverError::InvalidNumber {
                part: VersionPart::Major,
                text: "0 1".into(),
            },
        ),
        (
            "vv1.2.3",
            SemverError::InvalidNumber {
                part: VersionPart::Major,
                text: "0v1".into(),
            },
        ),
        (
            "",
            SemverError::EmptyNumber {
                part: VersionPart::Major,
            },
        ),
        (
            "v",
            SemverError::EmptyNumber {
                part: VersionPart::Major,
            },
        ),
        (
            "1.2.3-01",
            SemverError::PreReleaseLeadingZeroes("01".into()),
        ),
    ];
    for (input, want) in errors {
        assert_eq!(Semver::parse_tolerant(input).err(), Some(want), "{input:?}");
    }
}

fn version_text() -> impl Strategy<Value = String> {
    let number = prop_oneof![Just("0".to_string()), "[1-9][0-9]{0,5}"];
    let identifier = prop_oneof![
        "0|[1-9][0-9]{0,3}",
        "[0-9A-Za-z-]{0,3}[A-Za-z-][0-9A-Za-z-]{0,3}"
    ];
    (
        number.clone(),
        number.clone(),
        number,
        proptest::option::of(proptest::collection::vec(identifier, 1..4)),
        proptest::option::of(proptest::collection::vec("[0-9A-Za-z-]{1,4}", 1..3)),
    )
        .prop_map(|(a, b, c, pre, build)| {
            let mut s = format!("{a}.{b}.{c}");
            if let Some(pre) = pre {
                s.push('-');
                s.push_str(&pre.join("."));
            }
            if let Some(build) = build {
                s.push('+');
                s.push_str(&build.join("."));
            }
            s
        })
}

proptest! {
    #[test]
    fn valid_text_round_trips(s in version_text()) {
        let parsed = Semver::parse(&s).unwrap();
        prop_assert_eq!(parsed.to_string(), s.clone());
        prop_assert_eq!(Semver::parse_tolerant(&s).unwrap().to_string(), s);
    }

    #[test]
    fn ordering_is_total_and_consistent(a in version_text(), b in version_text(), c in version_text()) {
        let (a, b, c) = (v(&a), v(&b), v(&c));
        prop_assert_eq!(a.cmp(&b), b.cmp(&a).reverse());
        prop_assert_eq!(a == b, a.cmp(&b) == Ordering::Equal);
        if a <= b && b <= c {
            prop_assert!(a <= c);
        }
    }

    #[test]
    fn parsing_never_panics(s in "\\PC{0,30}") {
        let _ = Semver::parse(&s);
        let _ = Semver::parse_tolerant(&s);
    }
}
