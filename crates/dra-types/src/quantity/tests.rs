//! Golden tables derived from the behaviour of k8s.io/apimachinery `resource.Quantity`
//! (its sources and the cases its tests pin), plus property tests.

use super::*;
use proptest::prelude::*;

const GI: i128 = 1 << 30;
const N: i128 = NANOS_PER_UNIT;

fn q(s: &str) -> Quantity {
    Quantity::parse(s).unwrap_or_else(|e| panic!("{s:?} should parse: {e}"))
}

/// input, exact value in nano units, format, what Go's String() prints.
#[rustfmt::skip]
const PARSE_CASES: &[(&str, i128, Format, &str)] = &[
    ("0", 0, Format::DecimalSI, "0"),
    ("0n", 0, Format::DecimalSI, "0"),
    ("0m", 0, Format::DecimalSI, "0"),
    ("0Ki", 0, Format::BinarySI, "0"),
    ("0Ti", 0, Format::BinarySI, "0"),
    ("1", N, Format::DecimalSI, "1"),
    ("9", 9 * N, Format::DecimalSI, "9"),
    // binary suffixes
    ("1Ki", 1024 * N, Format::BinarySI, "1Ki"),
    ("8Ki", 8 * 1024 * N, Format::BinarySI, "8Ki"),
    ("7Mi", 7 * (1 << 20) * N, Format::BinarySI, "7Mi"),
    ("6Gi", 6 * GI * N, Format::BinarySI, "6Gi"),
    ("5Ti", 5 * (1 << 40) * N, Format::BinarySI, "5Ti"),
    ("4Pi", 4 * (1 << 50) * N, Format::BinarySI, "4Pi"),
    ("3Ei", 3 * (1 << 60) * N, Format::BinarySI, "3Ei"),
    ("100Ti", 100 * (1 << 40) * N, Format::BinarySI, "100Ti"),
    ("1024Mi", GI * N, Format::BinarySI, "1Gi"),
    ("1.5Gi", 1536 * (1 << 20) * N, Format::BinarySI, "1536Mi"),
    ("0.5Mi", 512 * 1024 * N, Format::BinarySI, "512Ki"),
    ("100.035Ki", 102_435_840 * 1_000_000, Format::BinarySI, "102435840m"),
    ("0.05Gi", 536_870_912 * 100_000_000, Format::BinarySI, "53687091200m"),
    (".001Ki", 1_024_000_000, Format::BinarySI, "1024m"),
    (".000001Ki", 1_024_000, Format::DecimalSI, "1024u"),
    (".000000001Ki", 1024, Format::DecimalSI, "1024n"),
    // below one unit a binary quantity turns decimal; 1.024e-9 rounds up to 2n
    (".000000000001Ki", 2, Format::DecimalSI, "2n"),
    ("0.000000000001Ki", 2, Format::DecimalSI, "2n"),
    // decimal suffixes
    ("5n", 5, Format::DecimalSI, "5n"),
    ("4u", 4_000, Format::DecimalSI, "4u"),
    ("3m", 3_000_000, Format::DecimalSI, "3m"),
    ("8k", 8_000 * N, Format::DecimalSI, "8k"),
    ("50k", 50_000 * N, Format::DecimalSI, "50k"),
    ("7M", 7_000_000 * N, Format::DecimalSI, "7M"),
    ("6G", 6_000_000_000 * N, Format::DecimalSI, "6G"),
    ("40T", 40_000_000_000_000 * N, Format::DecimalSI, "40T"),
    ("2P", 2_000_000_000_000_000 * N, Format::DecimalSI, "2P"),
    ("1E", 1_000_000_000_000_000_000 * N, Format::DecimalSI, "1E"),
    ("12E", 12_000_000_000_000_000_000 * N, Format::DecimalSI, "12E"),
    ("1000M", 1_000_000_000 * N, Format::DecimalSI, "1G"),
    ("1.5", 1_500_000_000, Format::DecimalSI, "1500m"),
    ("100.035k", 100_035 * N, Format::DecimalSI, "100.035k"), // Go keeps the text
    ("10.035M", 10_035_000 * N, Format::DecimalSI, "10.035M"),
    ("9.01", 9_010_000_000, Format::DecimalSI, "9010m"),
    ("8.1k", 8_100 * N, Format::DecimalSI, "8100"),
    ("6.987654321G", 6_987_654_321 * N, Format::DecimalSI, "6.987654321G"),
    ("10.0350M", 10_035_000 * N, Format::DecimalSI, "10035k"),
    ("1.01E", 1_010_000_000_000_000_000 * N, Format::DecimalSI, "1010P"),
    ("0.001", 1_000_000, Format::DecimalSI, "1m"),
    ("0.0005k", 500_000_000, Format::DecimalSI, "500m"),
    ("0.00500", 5_000_000, Format::DecimalSI, "5m"),
    ("1080m", 1_080_000_000, Format::DecimalSI, "1080m"),
    ("1.08", 1_080_000_000, Format::DecimalSI, "1080m"),
    ("1000u", 1_000_000, Format::DecimalSI, "1m"),
    ("1080000000n", 1_080_000_000, Format::DecimalSI, "1080m"),
    // decimal exponents
    ("1E-3", 1_000_000, Format::DecimalExponent, "1E-3"),
    ("1.0E-3", 1_000_000, Format::DecimalExponent, "1e-3"),
    ("1e3", 1_000 * N, Format::DecimalExponent, "1e3"),
    ("1e9", 1_000_000_000 * N, Format::DecimalExponent, "1e9"),
    ("1e13", 10_000_000_000_000 * N, Format::DecimalExponent, "10e12"),
    ("1.2e3", 1_200 * N, Format::DecimalExponent, "1200"),
    ("1.3E+6", 1_300_000 * N, Format::DecimalExponent, "1300e3"),
    ("0.5e-1", 50_000_000, Format::DecimalExponent, "50e-3"),
    (".001e12", 1_000_000_000 * N, Format::DecimalExponent, "1e9"),
    ("0.001e0", 1_000_000, Format::DecimalExponent, "1e-3"),
    ("1000e-12", 1, Format::DecimalExponent, "1e-9"),
    ("80e-3", 80_000_000, Format::DecimalExponent, "80e-3"),
    ("00", 0, Format::DecimalSI, "0"),
    // rounding up to nano units
    ("3.001n", 4, Format::DecimalSI, "4n"),
    ("1.1E-9", 2, Format::DecimalExponent, "2e-9"),
    ("0.0000000001", 1, Format::DecimalSI, "1n"),
    ("0.00000000050", 1, Format::DecimalSI, "1n"),
    ("0.9n", 1, Format::DecimalSI, "1n"),
    ("0.00000012345", 124, Format::DecimalSI, "124n"),
    ("1e-1000000", 1, Format::DecimalExponent, "1e-9"),
    ("-1e-10", -1, Format::DecimalExponent, "-1e-9"),
    // the BinarySI cap at 2^63-1
    ("9Ei", i64::MAX as i128 * N, Format::BinarySI, "9223372036854775807"),
    ("9223372036854775807Ki", i64::MAX as i128 * N, Format::BinarySI, "9223372036854775807"),
    ("-9Ei", -(i64::MAX as i128) * N, Format::BinarySI, "-9223372036854775807"),
    ("8Ei", i64::MAX as i128 * N, Format::BinarySI, "9223372036854775807"),
    ("7Ei", 7 * (1 << 60) * N, Format::BinarySI, "7Ei"),
    // large decimal values are not capped
    ("10E", 10_000_000_000_000_000_000 * N, Format::DecimalSI, "10E"),
    ("9999999999999999999", 9_999_999_999_999_999_999 * N, Format::DecimalSI, "9999999999999999999"),
    ("9223372036854775808.1", 9_223_372_036_854_775_808_100_000_000, Format::DecimalSI, "9223372036854775808100m"),
    ("-1000000000000000000", -1_000_000_000_000_000_000 * N, Format::DecimalSI, "-1E"),
    // odd forms Go accepts
    (".001", 1_000_000, Format::DecimalSI, "1m"),
    (".0001k", 100_000_000, Format::DecimalSI, "100m"),
    ("1.", N, Format::DecimalSI, "1."),
    ("1.G", 1_000_000_000 * N, Format::DecimalSI, "1.G"),
    ("-", 0, Format::DecimalSI, "0"),
    ("+", 0, Format::DecimalSI, "0"),
    (".", 0, Format::DecimalSI, "0"),
    ("-.", 0, Format::DecimalSI, "0"),
    ("Ki", 0, Format::BinarySI, "0"),
    ("e5", 0, Format::DecimalExponent, "0"),
    ("m", 0, Format::DecimalSI, "0"),
    ("0e-20", 0, Format::DecimalExponent, "0"),
    // Go keeps the input text when its fast path finds it canonical
    ("+1", N, Format::DecimalSI, "+1"),
    ("01", N, Format::DecimalSI, "01"),
    ("1E3", 1_000 * N, Format::DecimalExponent, "1E3"),
    ("1e+3", 1_000 * N, Format::DecimalExponent, "1e+3"),
    ("1.500k", 1_500 * N, Format::DecimalSI, "1.500k"),
    ("+1Ki", 1024 * N, Format::BinarySI, "+1Ki"),
    ("1025Ki", 1025 * 1024 * N, Format::BinarySI, "1025Ki"),
    ("1536Ki", 1536 * 1024 * N, Format::BinarySI, "1536Ki"),
    ("2048Ki", 2 * (1 << 20) * N, Format::BinarySI, "2Mi"),
    ("-1Ki", -1024 * N, Format::BinarySI, "-1Ki"),
    ("-1.5Gi", -1536 * (1 << 20) * N, Format::BinarySI, "-1536Mi"),
    ("-0", 0, Format::DecimalSI, "0"),
    // Go prints no suffix above E (a Go bug, kept): 1000E prints as "1"
    ("1000E", 1_000_000_000_000_000_000_000 * N, Format::DecimalSI, "1"),
    ("1e21", 1_000_000_000_000_000_000_000 * N, Format::DecimalExponent, "1e21"),
];

#[test]
fn parse_golden_table() {
    for &(input, nanos, format, text) in PARSE_CASES {
        let got = q(input);
        assert_eq!(got.as_nanos(), nanos, "{input}: value");
        assert_eq!(got.format(), format, "{input}: format");
        assert_eq!(got.to_string(), text, "{input}: String()");
        assert_eq!(
            got.to_canonical_string(),
            text,
            "{input}: to_canonical_string"
        );
    }
}

#[test]
fn negated_inputs_parse_to_negated_values() {
    for &(input, nanos, format, _) in PARSE_CASES {
        if input.starts_with(['-', '+']) {
            continue;
        }
        let got = q(&format!("-{input}"));
        assert_eq!(got.as_nanos(), -nanos, "-{input}");
        assert_eq!(got.format(), format, "-{input}");
        let got = q(&format!("+{input}"));
        assert_eq!(got.as_nanos(), nanos, "+{input}");
    }
}

#[test]
fn invalid_inputs() {
    use QuantityError as E;
    let cases: &[(&str, QuantityError)] = &[
        ("", E::Format),
        ("1.1.M", E::Format),
        ("1+1.0M", E::Format),
        ("0.1mi", E::Suffix),
        ("0.1am", E::Format),
        ("aoeu", E::Format),
        (".5i", E::Suffix),
        ("1i", E::Suffix),
        ("-3.01i", E::Suffix),
        ("-3.01e-", E::Suffix),
        (" 1", E::Format),
        ("1 ", E::Format),
        ("1e", E::Suffix),
        ("1K", E::Suffix),
        ("1Kib", E::Format),
        ("1ee3", E::Suffix),
        ("1e3.5", E::Format),
        ("1Mi-", E::Suffix),
        ("1e99999999999999999999", E::Suffix),
        ("Non-Numeric", E::Format),
        ("1,5", E::Format),
        ("½", E::Format),
        // no digit on Go's slow path
        (".e-20", E::Numeric),
        ("+e-20", E::Numeric),
        ("e-10", E::Numeric),
        // beyond the documented range of this implementation
        ("1e30", E::OutOfRange),
        ("200000000000000000000P", E::OutOfRange),
        ("1.5e-2147483648", E::OutOfRange), // Go's int32 scale arithmetic wraps to a huge value
    ];
    for (input, want) in cases {
        assert_eq!(
            Quantity::parse(input).err().as_ref(),
            Some(want),
            "{input:?}"
        );
    }
}

#[test]
fn huge_binary_numbers_are_capped_not_rejected() {
    let long = format!("{}Ki", "9".repeat(200));
    assert_eq!(q(&long).as_nanos(), BINARY_CAP_NANOS);
    let long_fraction = format!("0.{}1Ei", "0".repeat(50));
    // 2^60 · 10^-51 is far below one nano: rounds up to 1n and turns decimal
    let got = q(&long_fraction);
    assert_eq!((got.as_nanos(), got.format()), (1, Format::DecimalSI));
    let too_long = format!("1.{}1Ki", "0".repeat(MAX_BINARY_FRACTION_DIGITS));
    assert_eq!(
        Quantity::parse(&too_long).err(),
        Some(QuantityError::TooManyDigits)
    );
    // a long decimal fraction needs no big arithmetic and has no limit
    let long_decimal = format!("1.{}1", "0".repeat(100_000));
    assert_eq!(q(&long_decimal).as_nanos(), N + 1);
}

#[test]
fn binary_fractions_below_nano_are_exact() {
    // 1.0000000001Ki = 1024 + 1.024e-7 → 1024000000103 nano units after rounding up
    assert_eq!(q("1.0000000001Ki").as_nanos(), 1_024_000_000_103);
    // 0.1Ki = 102.4 exactly
    assert_eq!(q("0.1Ki").as_nanos(), 102_400_000_000);
    assert_eq!(q("0.1Ki").to_string(), "102400m");
}

#[test]
fn constructors_print_like_go() {
    let cases: &[(Quantity, &str)] = &[
        (Quantity::from_i64(1 << 30, Format::BinarySI), "1Gi"),
        (Quantity::from_i64(300 << 20, Format::BinarySI), "300Mi"),
        (Quantity::from_i64(6 * 1024, Format::BinarySI), "6Ki"),
        (Quantity::from_i64(1001 << 30, Format::BinarySI), "1001Gi"),
        (Quantity::from_i64(5, Format::BinarySI), "5"),
        (Quantity::from_i64(1025, Format::BinarySI), "1025"),
        (
            Quantity::from_i64(3_000_000_000, Format::BinarySI),
            "3000000000",
        ),
        (Quantity::from_milli(500, Format::BinarySI), "500m"),
        (
            Quantity::from_milli(1_234_567, Format::BinarySI),
            "1234567m",
        ),
        (Quantity::from_milli(1_500, Format::BinarySI), "1500m"),
        (Quantity::from_i64(1_000_000_000, Format::DecimalSI), "1G"),
        (Quantity::from_i64(3_000, Format::DecimalSI), "3k"),
        (Quantity::from_i64(3_000, Format::DecimalExponent), "3e3"),
        (
            Quantity::from_i64(1_234_567, Format::DecimalExponent),
            "1234567",
        ),
        (Quantity::from_milli(80, Format::DecimalExponent), "80e-3"),
        (Quantity::from_milli(1, Format::DecimalSI), "1m"),
        (Quantity::from_i64(0, Format::BinarySI), "0"),
        (Quantity::from_i64(-1 << 30, Format::BinarySI), "-1Gi"),
        (
            Quantity::from_i64(i64::MIN, Format::DecimalSI),
            "-9223372036854775808",
        ),
        (Quantity::zero(), "0"),
    ];
    for (quantity, want) in cases {
        assert_eq!(quantity.to_string(), *want, "{quantity:?}");
    }
}

#[test]
fn binary_values_above_ei_print_without_suffix_like_go() {
    // 2^70 is 1024^7: Go has no suffix for it and prints "1".
    let ei = q("1Ei");
    let mut sum = Quantity::from_i64(0, Format::BinarySI);
    for _ in 0..1024 {
        sum = sum.checked_add(&ei).unwrap();
    }
    assert_eq!(sum.as_nanos(), (1i128 << 70) * N);
    assert_eq!(sum.to_string(), "1");
    assert_eq!(ei.checked_add(&ei).unwrap().to_string(), "2Ei");
}

#[test]
fn as_i64_follows_go_fast_path() {
    let cases: &[(&str, Option<i64>)] = &[
        ("0", Some(0)),
        ("1", Some(1)),
        ("1k", Some(1000)),
        ("1E", Some(1_000_000_000_000_000_000)),
        ("1.0E", Some(1_000_000_000_000_000_000)),
        ("-1E", Some(-1_000_000_000_000_000_000)),
        ("999999999999999999", Some(999_999_999_999_999_999)),
        ("1Ki", Some(1024)),
        ("7Ei", None), // too many digits for Go's binary fast path
        ("1e3", Some(1000)),
        ("0e100", Some(0)),
        // exact integers that Go holds with a negative scale or as inf.Dec
        ("1000m", None),
        ("0m", None),
        ("1.0", None),
        ("1000000000000000000", None),
        ("9223372036854775807", None),
        ("1.5Ki", None),
        ("10E", None),
        ("1.5", None),
        ("1e19", None), // int64Amount{1, 19} overflows when scaled
    ];
    for (input, want) in cases {
        assert_eq!(q(input).as_i64(), *want, "{input}");
        assert_eq!(q(input).is_integer(), want.is_some(), "{input}");
    }
    assert_eq!(Quantity::from_i64(42, Format::DecimalSI).as_i64(), Some(42));
    assert_eq!(Quantity::from_milli(2000, Format::DecimalSI).as_i64(), None);
    assert_eq!(q("1000m").to_i64_exact(), Some(1));
    assert_eq!(q("1.5Ki").to_i64_exact(), Some(1536));
    assert_eq!(q("1.5").to_i64_exact(), None);
}

#[test]
fn as_i64_after_arithmetic() {
    let one = q("1");
    let milli = q("1m");
    // int64Amount{1,0} + int64Amount{1,-3} = int64Amount{1001,-3}
    assert_eq!(one.checked_add(&milli).unwrap().as_i64(), None);
    // the zero operand keeps the other's scale
    assert_eq!(q("0m").checked_add(&one).unwrap().as_i64(), Some(1));
    assert_eq!(one.checked_add(&q("0m")).unwrap().as_i64(), Some(1));
    // anything involving inf.Dec stays inf.Dec
    assert_eq!(q("1.5Ki").checked_sub(&q("0.5Ki")).unwrap().as_i64(), None);
    // an int64 overflow moves to inf.Dec
    let big = q("9E");
    assert_eq!(big.checked_add(&big).unwrap().as_i64(), None);
    assert_eq!(
        q("4E").checked_add(&q("4E")).unwrap().as_i64(),
        Some(8_000_000_000_000_000_000)
    );
}

#[test]
fn value_and_milli_value_round_away_from_zero() {
    let cases: &[(&str, i64, i64)] = &[
        ("0", 0, 0),
        ("1", 1, 1000),
        ("1.1", 2, 1100),
        ("1n", 1, 1),
        ("999m", 1, 999),
        ("1001m", 2, 1001),
        ("-1.1", -2, -1100),
        ("-1n", -1, -1),
        ("1Gi", 1 << 30, 1000 << 30),
        ("9Ei", i64::MAX, i64::MAX),
        ("100E", i64::MAX, i64::MAX),
        ("-100E", i64::MIN, i64::MIN),
    ];
    for &(input, value, milli) in cases {
        assert_eq!(q(input).value(), value, "{input} value");
        assert_eq!(q(input).milli_value(), milli, "{input} milli");
    }
}

#[test]
fn equality_ordering_and_hash_use_exact_values() {
    use std::collections::hash_map::DefaultHasher;
    let hash = |x: &Quantity| {
        let mut h = DefaultHasher::new();
        x.hash(&mut h);
        h.finish()
    };
    let pairs = [
        ("1Gi", "1073741824"),
        ("1k", "1e3"),
        ("1000m", "1"),
        ("+1", "01"),
        ("0Ki", "0"),
    ];
    for (a, b) in pairs {
        assert_eq!(q(a), q(b), "{a} == {b}");
        assert_eq!(hash(&q(a)), hash(&q(b)), "hash {a} {b}");
        assert_eq!(q(a).cmp_value(&q(b)), Ordering::Equal);
    }
    assert!(q("1Ki") > q("1k"));
    assert!(q("-1") < q("1n"));
    assert!(q("1.1E") > q("1E"));
    assert_eq!(q("1").sign(), 1);
    assert_eq!(q("-1m").sign(), -1);
    assert_eq!(q("-0").sign(), 0);
}

#[test]
fn add_and_sub_keep_formats_like_go() {
    // a zero receiver takes the other operand's format; otherwise the receiver's
    for text in ["100m", "1Gi"] {
        let value = q(text);
        assert_eq!(
            value.checked_add(&Quantity::zero()).unwrap().to_string(),
            text
        );
        assert_eq!(
            Quantity::zero().checked_add(&value).unwrap().to_string(),
            text
        );
        assert_eq!(
            value.checked_sub(&Quantity::zero()).unwrap().to_string(),
            text
        );
        assert_eq!(
            Quantity::zero().checked_sub(&value).unwrap().to_string(),
            value.neg().to_string()
        );
    }
    assert_eq!(
        q("1Gi").checked_add(&q("512Mi")).unwrap().to_string(),
        "1536Mi"
    );
    assert_eq!(q("1k").checked_add(&q("1Ki")).unwrap().to_string(), "2024");
    assert_eq!(q("1Ki").checked_add(&q("1k")).unwrap().to_string(), "2024");
    assert_eq!(q("1Gi").checked_sub(&q("1Gi")).unwrap().to_string(), "0");
    assert_eq!(
        q("1").checked_sub(&q("1500m")).unwrap().to_string(),
        "-500m"
    );
    // kept input text does not survive arithmetic
    assert_eq!(
        q("+1").checked_add(&Quantity::zero()).unwrap().to_string(),
        "1"
    );
    // overflow of the supported range
    let max = q("100000000000P");
    assert!(max.checked_add(&max).is_some());
    let mut big = max.clone();
    let mut overflowed = false;
    for _ in 0..2000 {
        match big.checked_add(&max) {
            Some(next) => big = next,
            None => {
                overflowed = true;
                break;
            }
        }
    }
    assert!(overflowed, "i128 range must end in None, not a panic");
}

#[test]
fn approximate_float_matches_go() {
    let cases: &[(&str, f64)] = &[
        ("0", 0.0),
        ("1", 1.0),
        ("1Ki", 1024.0),
        ("7340032", 7340032.0),
        ("734003.2", 7340032.0 * 0.1), // Go multiplies by Pow10(-1), not divides by 10
        ("1.5", 15.0 * 0.1),
        ("9Ei", 9223372036854775807.0),
        ("12E", 1.2e19),
        ("1m", 1e-3),
        ("0.1", 0.1),
        ("-12E", -1.2e19),
    ];
    for &(input, want) in cases {
        assert_eq!(
            q(input).as_approximate_f64().to_bits(),
            want.to_bits(),
            "{input}"
        );
    }
    // The inf.Dec form (scale -9) is used for slow-path values.
    let slow = q("1.5Ki");
    assert_eq!(slow.as_approximate_f64(), 1536.0);
    assert_eq!(go_pow10(-1), 1.0 / 10.0);
    assert_eq!(go_pow10(309), f64::INFINITY);
    assert_eq!(go_pow10(-400), 0.0);
}

#[test]
fn serde_uses_the_string_form() {
    let got: Quantity = serde_json::from_str("\"1.5Gi\"").unwrap();
    assert_eq!(got.to_string(), "1536Mi");
    assert_eq!(serde_json::to_string(&got).unwrap(), "\"1536Mi\"");
    let got: Quantity = serde_json::from_str("\" 10 \"").unwrap();
    assert_eq!(got, q("10"));
    let got: Quantity = serde_json::from_str("10").unwrap();
    assert_eq!(got.to_string(), "10");
    let got: Quantity = serde_json::from_str("1.5").unwrap();
    assert_eq!(got.to_string(), "1500m");
    let got: Quantity = serde_json::from_str("-3").unwrap();
    assert_eq!(got.to_string(), "-3");
    let err = serde_json::from_str::<Quantity>("\"abc\"")
        .unwrap_err()
        .to_string();
    assert!(err.contains("quantities must match"), "{err}");
    assert!(serde_json::from_str::<Quantity>("true").is_err());
    assert!(serde_json::from_str::<Quantity>("null").is_err());
}

// ---------------------------------------------------------------------------------
// properties

fn any_format() -> impl Strategy<Value = Format> {
    prop_oneof![
        Just(Format::DecimalSI),
        Just(Format::BinarySI),
        Just(Format::DecimalExponent)
    ]
}

/// Quantities whose canonical form Go can print without the over-E suffix gap.
fn printable_quantity() -> impl Strategy<Value = Quantity> {
    prop_oneof![
        (any::<i64>(), any_format()).prop_map(|(v, f)| Quantity::from_i64(v, f)),
        (any::<i64>(), any_format()).prop_map(|(v, f)| Quantity::from_milli(v, f)),
        (-1_000_000i64..1_000_000, 0u32..4, any_format())
            .prop_map(|(v, shift, f)| { Quantity::from_i64(v << (10 * shift), f) }),
        "[+-]?[0-9]{1,12}(\\.[0-9]{0,12})?(n|u|m|k|M|G|T|P|Ki|Mi|Gi|Ti|Pi|Ei|e-?[0-9])?"
            .prop_filter_map("parseable", |s| Quantity::parse(&s).ok()),
    ]
    .prop_filter(
        "Go prints multiples of 1e21 in DecimalSI without a suffix",
        |x| {
            !(x.format() != Format::DecimalExponent
                && x.as_nanos() != 0
                && x.as_nanos() % POW10_I128[30] == 0)
        },
    )
}

fn canonical_of(x: &Quantity) -> String {
    canonical(x.nanos, x.format)
}

proptest! {
    #[test]
    fn canonical_text_parses_back_to_the_same_value(x in printable_quantity()) {
        let text = x.to_string();
        let back = Quantity::parse(&text).unwrap();
        prop_assert_eq!(&back, &x, "{} -> {}", text, back);
        let canonical_text = canonical_of(&x);
        let again = Quantity::parse(&canonical_text).unwrap();
        prop_assert_eq!(&again, &x, "{} -> {}", canonical_text, again);
        // printing is stable after one round trip
        let stable = canonical_of(&again);
        prop_assert_eq!(canonical_of(&Quantity::parse(&stable).unwrap()), stable);
    }

    #[test]
    fn add_then_sub_is_identity(a in printable_quantity(), b in printable_quantity()) {
        let sum = a.checked_add(&b).unwrap();
        prop_assert_eq!(sum.checked_sub(&b).unwrap(), a.clone());
        prop_assert_eq!(sum.checked_sub(&a).unwrap(), b.clone());
        prop_assert_eq!(a.checked_add(&b), b.checked_add(&a));
    }

    #[test]
    fn ordering_agrees_with_the_sign_of_the_difference(a in printable_quantity(), b in printable_quantity()) {
        let diff = a.checked_sub(&b).unwrap();
        let expected = match diff.sign() { -1 => Ordering::Less, 0 => Ordering::Equal, _ => Ordering::Greater };
        prop_assert_eq!(a.cmp(&b), expected);
        prop_assert_eq!(a.cmp_value(&b), expected);
        prop_assert_eq!(a == b, expected == Ordering::Equal);
    }

    #[test]
    fn parsing_never_panics(s in "\\PC{0,40}") {
        let _ = Quantity::parse(&s);
    }

    #[test]
    fn parsing_shaped_garbage_never_panics(s in "[-+]?[0-9.]{0,30}[eEinumkKMGTP]{0,3}[-+]?[0-9]{0,12}") {
        if let Ok(x) = Quantity::parse(&s) {
            let _ = (x.to_string(), x.value(), x.milli_value(), x.as_i64(), x.as_approximate_f64());
        }
    }

    #[test]
    fn value_is_the_ceiling_of_the_magnitude(x in printable_quantity()) {
        let v = i128::from(x.value()) * N;
        if x.value() != i64::MAX && x.value() != i64::MIN {
            prop_assert!(v.abs() >= x.as_nanos().abs());
            prop_assert!(v.abs() - x.as_nanos().abs() < N);
        }
    }
}

/// `canonical` in plain i128 arithmetic, as it was written before it moved to 32-bit limbs:
/// the oracle for the faster one.
fn canonical_by_i128(nanos: i128, format: Format) -> String {
    if nanos == 0 {
        return "0".to_string();
    }
    let binary = format == Format::BinarySI
        && !(nanos.abs() < 1024 * NANOS_PER_UNIT || nanos % NANOS_PER_UNIT != 0);
    if binary {
        let (mut mantissa, mut times) = (nanos / NANOS_PER_UNIT, 0usize);
        while mantissa.abs() >= 1024 && mantissa % 1024 == 0 {
            mantissa /= 1024;
            times += 1;
        }
        let suffix = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"]
            .get(times)
            .unwrap_or(&"");
        return format!("{mantissa}{suffix}");
    }
    let (mut mantissa, mut exponent) = (nanos, -9i32);
    while mantissa % 10 == 0 {
        mantissa /= 10;
        exponent += 1;
    }
    while exponent % 3 != 0 {
        mantissa *= 10;
        exponent -= 1;
    }
    if format == Format::DecimalExponent {
        return if exponent == 0 {
            mantissa.to_string()
        } else {
            format!("{mantissa}e{exponent}")
        };
    }
    let suffixes = ["n", "u", "m", "", "k", "M", "G", "T", "P", "E"];
    let suffix = usize::try_from((exponent + 9) / 3)
        .ok()
        .and_then(|i| suffixes.get(i))
        .unwrap_or(&"");
    format!("{mantissa}{suffix}")
}

#[test]
fn div_rem_small_divides_across_limbs() {
    for n in [
        0u128,
        1,
        999_999_999,
        1_000_000_000,
        u128::from(u64::MAX) * 3 + 7,
        u128::MAX,
    ] {
        for d in [1u32, 7, 10, 1024, 1_000_000_000, u32::MAX] {
            let (q, r) = div_rem_small(n, d);
            assert_eq!((q, u128::from(r)), (n / u128::from(d), n % u128::from(d)));
        }
    }
}

proptest! {
    #[test]
    fn canonical_matches_plain_i128_arithmetic(
        nanos in prop_oneof![
            any::<i64>().prop_map(i128::from),
            (any::<i64>(), 0u32..4).prop_map(|(v, k)| i128::from(v) * POW10_I128[9 + 3 * k as usize]),
            (-1_000_000i128..1_000_000, 0u32..7).prop_map(|(v, k)| (v * NANOS_PER_UNIT) << (10 * k)),
            (-(1i128 << 100))..(1i128 << 100),
        ],
        format in any_format(),
    ) {
        prop_assert_eq!(canonical(nanos, format), canonical_by_i128(nanos, format));
    }
}
