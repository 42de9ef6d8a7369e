//! Kubernetes `resource.Quantity` (k8s.io/apimachinery/pkg/api/resource) with the
//! exact semantics of the Go implementation.
//!
//! # Representation
//!
//! A value is held as an exact count of nano units (`i128`). Every quantity Go can
//! produce by parsing is a multiple of 10⁻⁹ (non-zero values are rounded up to nano
//! units), and sums of such values stay multiples, so the representation is exact.
//! The supported magnitude is `i128::MAX` nano units, about 1.7·10²⁹. Go accepts
//! larger `DecimalSI`/`DecimalExponent` values (it switches to arbitrary precision);
//! here parsing such a value returns [`QuantityError::OutOfRange`] and arithmetic
//! that leaves the range returns `None`. Nothing is silently truncated.
//!
//! Next to the value a quantity remembers three things only Go's behaviour depends on:
//! the [`Format`] (which suffix family to print), whether Go would hold it as an
//! `int64Amount` or as an `inf.Dec` (Go's `AsInt64`, and so CEL's `isInteger()` and
//! `asInteger()`, and `AsApproximateFloat64` depend on that), and the input text
//! Go keeps and prints back verbatim for some inputs (for example `+1` or `1.500k`).
//! Equality, ordering and hashing look at the exact value only, so
//! `Quantity::parse("1Gi") == Quantity::parse("1073741824")`.
//!
//! # Deliberate divergences from Go
//!
//! * Range: see above.
//! * [`Quantity::value`] and [`Quantity::milli_value`] saturate at the `i64` bounds
//!   where Go overflows (Go returns 0 or a wrapped number there), and round negative
//!   fractions away from zero in every case (Go does so for its `int64Amount` form; its
//!   `inf.Dec` form has rounding bugs for negative fractions).
//! * Binary-suffixed inputs with a fraction of more than [`MAX_BINARY_FRACTION_DIGITS`]
//!   significant digits are rejected ([`QuantityError::TooManyDigits`]) instead of
//!   being evaluated with unbounded arithmetic.
//!
//! # Go quirks reproduced on purpose
//!
//! * `-`, `+`, `.`, `Ki`, `e5` parse as zero; `.e-20` does not parse.
//! * Go prints a `DecimalSI` value whose canonical exponent is above 18 (`1000E`)
//!   without any suffix (`"1"`), and a `BinarySI` integer that is a multiple of
//!   1024⁷ likewise; both change the value on a round trip.
//! * Go's `AsInt64` fails for exact integers held with a negative scale or as
//!   `inf.Dec` (`1000m`, `1000000000000000000`, `1.5Ki`).

use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::str::FromStr;

/// Nano units in one unit.
const NANOS_PER_UNIT: i128 = 1_000_000_000;

/// Go's `maxAllowed` (2⁶³−1) in nano units: the cap applied to parsed `BinarySI` values.
const BINARY_CAP_NANOS: i128 = i64::MAX as i128 * NANOS_PER_UNIT;

/// The largest number of significant digits accepted in a binary-suffixed number whose
/// fraction reaches below nano precision (`1.000…001Ki`); such input needs big-integer
/// arithmetic whose cost grows with the square of its length.
pub const MAX_BINARY_FRACTION_DIGITS: usize = 4096;

/// 10^n for n in 0..=38, the powers of ten that fit an `i128`.
const POW10_I128: [i128; 39] = {
    let mut table = [1i128; 39];
    let mut i = 1;
    while i < 39 {
        table[i] = table[i - 1] * 10;
        i += 1;
    }
    table
};

/// How a quantity is printed: the suffix family it was parsed with or created for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Format {
    /// `12e6`: a power-of-ten exponent.
    DecimalExponent,
    /// `12Mi`: powers of 1024 (`Ki Mi Gi Ti Pi Ei`).
    BinarySI,
    /// `12M`: decimal SI suffixes (`n u m "" k M G T P E`).
    DecimalSI,
}

impl Format {
    /// The Go name of the format (`"DecimalSI"` …).
    pub fn as_str(&self) -> &'static str {
        match self {
            Format::DecimalExponent => "DecimalExponent",
            Format::BinarySI => "BinarySI",
            Format::DecimalSI => "DecimalSI",
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a string is not a quantity. The first three messages are Go's.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum QuantityError {
    /// The text does not have the shape of a quantity (Go's `ErrFormatWrong`).
    #[error(
        "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
    )]
    Format,
    /// The number has no digits where Go needs some (Go's `ErrNumeric`).
    #[error("unable to parse numeric part of quantity")]
    Numeric,
    /// The suffix is none of the known ones (Go's `ErrSuffix`).
    #[error("unable to parse quantity's suffix")]
    Suffix,
    /// The magnitude exceeds what this implementation represents (about 1.7·10²⁹).
    #[error("quantity is too large: this implementation supports magnitudes up to about 1.7e29")]
    OutOfRange,
    /// A binary-suffixed number with an excessively long fraction.
    #[error("quantity has more than {max} significant digits", max = MAX_BINARY_FRACTION_DIGITS)]
    TooManyDigits,
}

/// The form Go would hold the value in. `scale` follows Go's `Scale` convention:
/// value = unscaled · 10^scale. For non-zero values `scale >= -9` and the nano count
/// is a multiple of 10^(scale+9).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum GoRepr {
    /// `int64Amount{value, scale}`.
    Int64 { scale: i32 },
    /// `inf.Dec` (arbitrary precision) with exponent `scale`.
    Dec { scale: i32 },
}

impl GoRepr {
    fn scale(self) -> i32 {
        match self {
            GoRepr::Int64 { scale } | GoRepr::Dec { scale } => scale,
        }
    }
}

/// A Kubernetes `resource.Quantity`: an exact fixed-point number with a print format.
///
/// Equality, ordering and hashing compare exact values; the format and Go's internal
/// form do not take part.
#[derive(Clone, Debug)]
pub struct Quantity {
    nanos: i128,
    format: Format,
    repr: GoRepr,
    /// The input text, where Go keeps it and prints it back, and only where it differs
    /// from the computed canonical form (`+1`, `1E3`, `1.500k`).
    text: Option<Box<str>>,
}

impl Quantity {
    /// Parses a quantity like Go's `resource.ParseQuantity`.
    pub fn parse(s: &str) -> Result<Quantity, QuantityError> {
        parse_quantity(s)
    }

    /// `resource.NewQuantity(v, format)`.
    pub fn from_i64(v: i64, format: Format) -> Quantity {
        Quantity {
            nanos: i128::from(v) * NANOS_PER_UNIT,
            format,
            repr: GoRepr::Int64 { scale: 0 },
            text: None,
        }
    }

    /// `resource.NewMilliQuantity(v, format)`: v/1000.
    pub fn from_milli(v: i64, format: Format) -> Quantity {
        Quantity {
            nanos: i128::from(v) * 1_000_000,
            format,
            repr: GoRepr::Int64 { scale: -3 },
            text: None,
        }
    }

    /// Zero in `DecimalSI` format (what Go's `ParseQuantity("0")` returns).
    pub fn zero() -> Quantity {
        Quantity::from_i64(0, Format::DecimalSI)
    }

    /// The print format.
    pub fn format(&self) -> Format {
        self.format
    }

    /// The exact value in nano units (10⁻⁹).
    pub fn as_nanos(&self) -> i128 {
        self.nanos
    }

    /// `Quantity.Cmp`: compares exact values.
    pub fn cmp_value(&self, other: &Quantity) -> Ordering {
        self.nanos.cmp(&other.nanos)
    }

    /// `Quantity.Add`: the sum keeps `self`'s format unless `self` is zero, in which
    /// case it takes `other`'s. `None` when the sum leaves the supported range.
    pub fn checked_add(&self, other: &Quantity) -> Option<Quantity> {
        let nanos = in_range(self.nanos.checked_add(other.nanos)?)?;
        let format = if self.is_zero() {
            other.format
        } else {
            self.format
        };
        let repr = add_repr(self.nanos, self.repr, other.nanos, other.repr, nanos);
        Some(Quantity {
            nanos,
            format,
            repr,
            text: None,
        })
    }

    /// `Quantity.Sub`: same format rule as [`Quantity::checked_add`].
    pub fn checked_sub(&self, other: &Quantity) -> Option<Quantity> {
        let nanos = in_range(self.nanos.checked_sub(other.nanos)?)?;
        let format = if self.is_zero() {
            other.format
        } else {
            self.format
        };
        let repr = add_repr(self.nanos, self.repr, -other.nanos, other.repr, nanos);
        Some(Quantity {
            nanos,
            format,
            repr,
            text: None,
        })
    }

    /// `Quantity.Neg` on a copy.
    pub fn neg(&self) -> Quantity {
        Quantity {
            nanos: -self.nanos,
            format: self.format,
            repr: self.repr,
            text: None,
        }
    }

    /// -1, 0 or 1.
    pub fn sign(&self) -> i32 {
        match self.nanos.cmp(&0) {
            Ordering::Less => -1,
            Ordering::Equal => 0,
            Ordering::Greater => 1,
        }
    }

    /// True for zero.
    pub fn is_zero(&self) -> bool {
        self.nanos == 0
    }

    /// `Quantity.Value()`: the value rounded to an integer away from zero
    /// (`1.1` → 2, `-1.1` → -2), saturating at the `i64` bounds.
    pub fn value(&self) -> i64 {
        saturate_i64(div_round_away(self.nanos, NANOS_PER_UNIT))
    }

    /// `Quantity.MilliValue()`: the value in thousandths, rounded away from zero,
    /// saturating at the `i64` bounds.
    pub fn milli_value(&self) -> i64 {
        saturate_i64(div_round_away(self.nanos, 1_000_000))
    }

    /// Go's `Quantity.AsInt64()`: `Some` only where Go's fast path succeeds, that is
    /// for an `int64Amount` with a scale of at least 0 whose value fits an `i64`.
    /// Exact integers Go holds otherwise (`1000m`, `1.5Ki`, 19-digit literals) give
    /// `None`, as in Go. CEL's `isInteger()`/`asInteger()` are defined by this.
    /// See [`Quantity::to_i64_exact`] for the mathematical conversion.
    pub fn as_i64(&self) -> Option<i64> {
        match self.repr {
            GoRepr::Dec { .. } => None,
            GoRepr::Int64 { scale } if scale < 0 => None,
            GoRepr::Int64 { .. } => i64::try_from(self.nanos / NANOS_PER_UNIT).ok(),
        }
    }

    /// The value as an `i64` when it is an integer that fits, whatever Go's form.
    pub fn to_i64_exact(&self) -> Option<i64> {
        if self.nanos % NANOS_PER_UNIT != 0 {
            return None;
        }
        i64::try_from(self.nanos / NANOS_PER_UNIT).ok()
    }

    /// `Quantity.AsApproximateFloat64()`, computed from Go's internal form the way Go
    /// does, so results agree to the last bit.
    pub fn as_approximate_f64(&self) -> f64 {
        let scale = self.repr.scale();
        let unscaled = self.unscaled();
        // `as` rounds to nearest, ties to even, like Go's int64 → float64 conversion
        // and big.Float.Float64.
        let base = unscaled as f64;
        if scale == 0 {
            base
        } else {
            base * go_pow10(scale)
        }
    }

    /// CEL's `isInteger()` on a quantity: the same as `as_i64().is_some()`.
    pub fn is_integer(&self) -> bool {
        self.as_i64().is_some()
    }

    /// `Quantity.String()`: the text Go writes, in canonical form except where Go
    /// keeps the parsed input verbatim.
    pub fn to_canonical_string(&self) -> String {
        match &self.text {
            Some(text) => text.to_string(),
            None => canonical(self.nanos, self.format),
        }
    }

    /// Go's unscaled integer for `self.repr`.
    fn unscaled(&self) -> i128 {
        if self.nanos == 0 {
            return 0;
        }
        let shift = self.repr.scale() + 9;
        // Invariant of GoRepr: 0 <= shift <= 38 for non-zero values.
        match usize::try_from(shift).ok().and_then(|s| POW10_I128.get(s)) {
            Some(p) => self.nanos / p,
            None => self.nanos,
        }
    }
}

impl Default for Quantity {
    fn default() -> Self {
        Quantity::zero()
    }
}

impl PartialEq for Quantity {
    fn eq(&self, other: &Self) -> bool {
        self.nanos == other.nanos
    }
}

impl Eq for Quantity {}

impl PartialOrd for Quantity {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Quantity {
    fn cmp(&self, other: &Self) -> Ordering {
        self.nanos.cmp(&other.nanos)
    }
}

impl Hash for Quantity {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.nanos.hash(state);
    }
}

impl FromStr for Quantity {
    type Err = QuantityError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Quantity::parse(s)
    }
}

impl fmt::Display for Quantity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.text {
            Some(text) => f.write_str(text),
            None => f.write_str(&canonical(self.nanos, self.format)),
        }
    }
}

impl serde::Serialize for Quantity {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for Quantity {
    /// Accepts a string (surrounding white space ignored, as Go's `UnmarshalJSON` does)
    /// or a number. A floating-point number is read through its shortest decimal form,
    /// as k8s-openapi does (`1e3` becomes `1000`).
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(QuantityVisitor)
    }
}

struct QuantityVisitor;

impl QuantityVisitor {
    fn parse<E: serde::de::Error>(text: &str) -> Result<Quantity, E> {
        Quantity::parse(text.trim()).map_err(|err| E::custom(format_args!("{text:?}: {err}")))
    }
}

impl serde::de::Visitor<'_> for QuantityVisitor {
    type Value = Quantity;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a quantity (string or number)")
    }

    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Quantity, E> {
        Self::parse(v)
    }

    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Quantity, E> {
        Self::parse(&v.to_string())
    }

    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Quantity, E> {
        Self::parse(&v.to_string())
    }

    fn visit_i128<E: serde::de::Error>(self, v: i128) -> Result<Quantity, E> {
        Self::parse(&v.to_string())
    }

    fn visit_u128<E: serde::de::Error>(self, v: u128) -> Result<Quantity, E> {
        Self::parse(&v.to_string())
    }

    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Quantity, E> {
        if !v.is_finite() {
            return Err(E::custom(format_args!("{v} is not a quantity")));
        }
        Self::parse(&v.to_string())
    }
}

// ---------------------------------------------------------------------------------
// Parsing

/// The pieces Go's `parseQuantityString` cuts a quantity into.
struct Scanned<'a> {
    positive: bool,
    /// Whether Go's `value` string (sign, digits, point) holds at least one digit;
    /// Go's slow path (`inf.Dec.SetString`) fails without one.
    value_has_digit: bool,
    /// Integer digits without leading zeros, or `"0"` when none remain.
    num: &'a str,
    /// Fraction digits as written.
    denom: &'a str,
    suffix: &'a str,
}

fn is_digit(b: u8) -> bool {
    b.is_ascii_digit()
}

fn is_suffix_char(b: u8) -> bool {
    matches!(
        b,
        b'e' | b'E' | b'i' | b'n' | b'u' | b'm' | b'k' | b'K' | b'M' | b'G' | b'T' | b'P'
    )
}

/// A scanner that mirrors Go's `parseQuantityString` byte by byte, including what it
/// accepts by accident (`-`, `.`, `1.`, `.5`).
fn scan(s: &str) -> Result<Scanned<'_>, QuantityError> {
    let bytes = s.as_bytes();
    let end = bytes.len();
    let mut pos = 0;
    let mut positive = true;
    match bytes.first() {
        Some(b'-') => {
            positive = false;
            pos += 1;
        }
        Some(b'+') => pos += 1,
        _ => {}
    }
    while pos < end && bytes[pos] == b'0' {
        pos += 1;
    }
    if pos >= end {
        // Only a sign and zeros: Go answers "0" at once.
        return Ok(Scanned {
            positive,
            value_has_digit: true,
            num: "0",
            denom: "",
            suffix: "",
        });
    }
    let num_start = pos;
    while pos < end && is_digit(bytes[pos]) {
        pos += 1;
    }
    let mut num = &s[num_start..pos];
    if pos >= end {
        return Ok(Scanned {
            positive,
            value_has_digit: true,
            num,
            denom: "",
            suffix: "",
        });
    }
    if num.is_empty() {
        num = "0";
    }
    let mut denom = "";
    if bytes[pos] == b'.' {
        pos += 1;
        let denom_start = pos;
        while pos < end && is_digit(bytes[pos]) {
            pos += 1;
        }
        denom = &s[denom_start..pos];
        if pos >= end {
            let value_has_digit = bytes.iter().any(|&b| is_digit(b));
            return Ok(Scanned {
                positive,
                value_has_digit,
                num,
                denom,
                suffix: "",
            });
        }
    }
    let value_has_digit = bytes[..pos].iter().any(|&b| is_digit(b));
    let suffix_start = pos;
    while pos < end && is_suffix_char(bytes[pos]) {
        pos += 1;
    }
    if pos < end && matches!(bytes[pos], b'-' | b'+') {
        pos += 1;
    }
    while pos < end && is_digit(bytes[pos]) {
        pos += 1;
    }
    if pos < end {
        return Err(QuantityError::Format);
    }
    Ok(Scanned {
        positive,
        value_has_digit,
        num,
        denom,
        suffix: &s[suffix_start..],
    })
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Base {
    Ten,
    Two,
}

/// Go's `quantitySuffixer.interpret`.
fn interpret_suffix(suffix: &str) -> Result<(Base, i32, Format), QuantityError> {
    let decimal = |exp| Ok((Base::Ten, exp, Format::DecimalSI));
    let binary = |exp| Ok((Base::Two, exp, Format::BinarySI));
    match suffix {
        "" => decimal(0),
        "n" => decimal(-9),
        "u" => decimal(-6),
        "m" => decimal(-3),
        "k" => decimal(3),
        "M" => decimal(6),
        "G" => decimal(9),
        "T" => decimal(12),
        "P" => decimal(15),
        "E" => decimal(18),
        "Ki" => binary(10),
        "Mi" => binary(20),
        "Gi" => binary(30),
        "Ti" => binary(40),
        "Pi" => binary(50),
        "Ei" => binary(60),
        _ if suffix.len() > 1 && matches!(suffix.as_bytes()[0], b'e' | b'E') => {
            // strconv.ParseInt(s, 10, 64) followed by a truncating int32 conversion.
            let parsed: i64 = suffix[1..].parse().map_err(|_| QuantityError::Suffix)?;
            Ok((Base::Ten, parsed as i32, Format::DecimalExponent))
        }
        _ => Err(QuantityError::Suffix),
    }
}

/// The magnitude of a parsed number in nano units.
enum Magnitude {
    Nanos(i128),
    /// Above Go's `BinarySI` cap.
    Capped,
}

fn parse_quantity(s: &str) -> Result<Quantity, QuantityError> {
    if s.is_empty() {
        return Err(QuantityError::Format);
    }
    let scanned = scan(s)?;
    let (base, exponent, parsed_format) = interpret_suffix(scanned.suffix)?;
    let num_len = scanned.num.len() as i64;
    let denom_len = scanned.denom.len() as i64;

    // Go's int64 fast path; `Some(scale)` when it applies.
    let fast_scale = match base {
        Base::Ten => {
            let precision = 18 - (num_len + denom_len);
            let scale = exponent.wrapping_sub(denom_len as i32);
            (precision >= 0 && scale >= -9).then_some(scale)
        }
        Base::Two => {
            let precision = 15 - num_len - i64::from(exponent) * 3 / 10 - 1;
            (denom_len == 0 && precision >= 0).then_some(0)
        }
    };
    if fast_scale.is_none() && !scanned.value_has_digit {
        return Err(QuantityError::Numeric);
    }

    // The decimal exponent of the digit string num‖denom.
    let exp10: i64 = match (base, fast_scale) {
        (Base::Two, _) => -denom_len,
        (Base::Ten, Some(scale)) => i64::from(scale),
        (Base::Ten, None) => {
            // inf.Dec: scale = len(denom) + (-exponent), in wrapping int32 arithmetic.
            let inf_scale = (denom_len as i32).wrapping_add(exponent.wrapping_neg());
            -i64::from(inf_scale)
        }
    };
    let pow2 = match base {
        Base::Two => exponent as u32,
        Base::Ten => 0,
    };
    let magnitude = magnitude_nanos(scanned.num, scanned.denom, exp10, pow2, base == Base::Two)?;

    let mut format = parsed_format;
    let (abs_nanos, capped) = match magnitude {
        Magnitude::Nanos(n) => (n, false),
        Magnitude::Capped => (BINARY_CAP_NANOS, true),
    };
    if format == Format::BinarySI && abs_nanos > 0 && abs_nanos < NANOS_PER_UNIT {
        format = Format::DecimalSI;
    }
    let nanos = if scanned.positive {
        abs_nanos
    } else {
        -abs_nanos
    };

    let repr = match fast_scale {
        Some(scale) => GoRepr::Int64 { scale },
        None if capped => GoRepr::Dec { scale: 0 },
        None if nanos == 0 => GoRepr::Dec {
            scale: exp10.clamp(-9, 0) as i32,
        },
        None => GoRepr::Dec { scale: -9 },
    };

    // Go keeps the input text when it considers it canonical already.
    let keeps_text = match (fast_scale, base) {
        (None, _) => false,
        (Some(_), Base::Two) => {
            // `value&0x07 != 0` on the integer digits (at most 11 of them here).
            let low_bits = scanned.num.parse::<u64>().map(|v| v & 7).unwrap_or(0);
            exponent % 10 == 0 && low_bits != 0
        }
        (Some(scale), Base::Ten) => {
            let ends_with_000 = {
                let tail: Vec<u8> = scanned
                    .num
                    .bytes()
                    .chain(scanned.denom.bytes())
                    .rev()
                    .take(3)
                    .collect();
                tail.len() == 3 && tail.iter().all(|&b| b == b'0')
            };
            scale % 3 == 0 && !ends_with_000 && !scanned.num.starts_with('0')
        }
    };
    let text = if keeps_text && s != canonical(nanos, format) {
        Some(s.into())
    } else {
        None
    };
    Ok(Quantity {
        nanos,
        format,
        repr,
        text,
    })
}

/// Exact |num.denom| · 10^exp10 · 2^pow2 in nano units, rounded up (away from zero)
/// to a whole nano unit, with Go's `BinarySI` cap when `binary`.
fn magnitude_nanos(
    num: &str,
    denom: &str,
    exp10: i64,
    pow2: u32,
    binary: bool,
) -> Result<Magnitude, QuantityError> {
    let digits: Vec<u8> = num.bytes().chain(denom.bytes()).collect();
    let leading = digits.iter().take_while(|&&b| b == b'0').count();
    let significant = &digits[leading..];
    let trailing = significant.iter().rev().take_while(|&&b| b == b'0').count();
    let significant = &significant[..significant.len() - trailing];
    if significant.is_empty() {
        return Ok(Magnitude::Nanos(0));
    }
    let n = significant.len() as i64;
    // value = significant · 10^shift · 2^pow2 nano units
    let shift = exp10 + trailing as i64 + 9;
    let too_big = || {
        if binary {
            Ok(Magnitude::Capped)
        } else {
            Err(QuantityError::OutOfRange)
        }
    };

    if shift >= 0 {
        // An integer number of nano units; its decimal length is n + shift.
        if n + shift > 39 {
            return too_big();
        }
        let Some(v) = parse_digits_i128(significant)
            .and_then(|v| v.checked_mul(POW10_I128[shift as usize]))
            .and_then(|v| v.checked_mul(1i128.checked_shl(pow2)?))
        else {
            return too_big();
        };
        if binary && v > BINARY_CAP_NANOS {
            return Ok(Magnitude::Capped);
        }
        return Ok(Magnitude::Nanos(v));
    }

    let k = -shift; // decimal places below one nano unit
    if !binary {
        if k >= n {
            return Ok(Magnitude::Nanos(1));
        }
        let head = &significant[..(n - k) as usize];
        // `significant` has no trailing zeros, so the cut-off part is non-zero.
        return match parse_digits_i128(head).and_then(|v| v.checked_add(1)) {
            Some(v) => Ok(Magnitude::Nanos(v)),
            None => Err(QuantityError::OutOfRange),
        };
    }
    // Binary with digits below nano precision: significant · 2^pow2 / 10^k, exactly.
    if n - k > 28 {
        // At least 10^28 nano units before the binary factor: above the cap.
        return Ok(Magnitude::Capped);
    }
    if significant.len() > MAX_BINARY_FRACTION_DIGITS {
        return Err(QuantityError::TooManyDigits);
    }
    let mut big = BigUint::from_decimal(significant);
    big.shl(pow2);
    let remainder = big.div_pow10(k as usize);
    let quotient = big.to_u128().and_then(|q| i128::try_from(q).ok());
    match quotient.and_then(|q| q.checked_add(i128::from(remainder))) {
        Some(v) if v <= BINARY_CAP_NANOS => Ok(Magnitude::Nanos(v)),
        _ => Ok(Magnitude::Capped),
    }
}

fn parse_digits_i128(digits: &[u8]) -> Option<i128> {
    let mut v: i128 = 0;
    for &d in digits {
        v = v.checked_mul(10)?.checked_add(i128::from(d - b'0'))?;
    }
    Some(v)
}

/// Just enough of an unsigned big integer for the binary-suffix slow path.
struct BigUint {
    /// Little-endian base-2³² limbs.
    limbs: Vec<u32>,
}

impl BigUint {
    fn from_decimal(digits: &[u8]) -> BigUint {
        let mut big = BigUint { limbs: Vec::new() };
        for chunk in digits.chunks(9) {
            let mut factor = 1u32;
            let mut value = 0u32;
            for &d in chunk {
                factor *= 10;
                value = value * 10 + u32::from(d - b'0');
            }
            big.mul_add_small(factor, value);
        }
        big
    }

    fn mul_add_small(&mut self, factor: u32, addend: u32) {
        let mut carry = u64::from(addend);
        for limb in &mut self.limbs {
            let v = u64::from(*limb) * u64::from(factor) + carry;
            *limb = v as u32;
            carry = v >> 32;
        }
        if carry != 0 {
            self.limbs.push(carry as u32);
        }
    }

    fn shl(&mut self, bits: u32) {
        let mut left = bits;
        while left > 0 {
            let step = left.min(31);
            self.mul_add_small(1 << step, 0);
            left -= step;
        }
    }

    /// Divides by `divisor`, returning whether the remainder is non-zero.
    fn div_small(&mut self, divisor: u32) -> bool {
        let mut rem = 0u64;
        for limb in self.limbs.iter_mut().rev() {
            let cur = (rem << 32) | u64::from(*limb);
            *limb = (cur / u64::from(divisor)) as u32;
            rem = cur % u64::from(divisor);
        }
        while self.limbs.last() == Some(&0) {
            self.limbs.pop();
        }
        rem != 0
    }

    /// Divides by 10^k, returning whether the remainder is non-zero.
    fn div_pow10(&mut self, k: usize) -> bool {
        let mut inexact = false;
        let mut left = k;
        while left > 0 && !self.limbs.is_empty() {
            let step = left.min(9);
            inexact |= self.div_small(10u32.pow(step as u32));
            left -= step;
        }
        inexact
    }

    fn to_u128(&self) -> Option<u128> {
        if self.limbs.len() > 4 {
            return None;
        }
        Some(
            self.limbs
                .iter()
                .rev()
                .fold(0u128, |acc, &l| (acc << 32) | u128::from(l)),
        )
    }
}

// ---------------------------------------------------------------------------------
// Arithmetic helpers

/// Go's `int64Amount.Add` / `inf.Dec.Add` choice of internal form for `a + b`.
fn add_repr(a_nanos: i128, a: GoRepr, b_nanos: i128, b: GoRepr, sum: i128) -> GoRepr {
    match (a, b) {
        (GoRepr::Int64 { scale: sa }, GoRepr::Int64 { scale: sb }) => {
            if b_nanos == 0 {
                return a;
            }
            if a_nanos == 0 {
                return b;
            }
            let scale = sa.min(sb);
            let fits = |nanos: i128| {
                usize::try_from(scale + 9)
                    .ok()
                    .and_then(|s| POW10_I128.get(s))
                    .is_some_and(|p| i64::try_from(nanos / p).is_ok())
            };
            if fits(a_nanos) && fits(b_nanos) && fits(sum) {
                GoRepr::Int64 { scale }
            } else {
                GoRepr::Dec { scale }
            }
        }
        _ => GoRepr::Dec {
            scale: a.scale().min(b.scale()).max(-9),
        },
    }
}

/// Keeps values symmetric around zero (`i128::MIN` has no negation).
fn in_range(nanos: i128) -> Option<i128> {
    (nanos != i128::MIN).then_some(nanos)
}

fn div_round_away(nanos: i128, divisor: i128) -> i128 {
    let quotient = nanos / divisor;
    match (nanos % divisor).cmp(&0) {
        Ordering::Greater => quotient + 1,
        Ordering::Less => quotient - 1,
        Ordering::Equal => quotient,
    }
}

fn saturate_i64(v: i128) -> i64 {
    i64::try_from(v).unwrap_or(if v < 0 { i64::MIN } else { i64::MAX })
}

/// Go's `math.Pow10`, built from the same tables so products round identically.
fn go_pow10(n: i32) -> f64 {
    const POW10_TAB: [f64; 32] = [
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
        1e17, 1e18, 1e19, 1e20, 1e21, 1e22, 1e23, 1e24, 1e25, 1e26, 1e27, 1e28, 1e29, 1e30, 1e31,
    ];
    const POW10_POS32: [f64; 10] = [
        1e0, 1e32, 1e64, 1e96, 1e128, 1e160, 1e192, 1e224, 1e256, 1e288,
    ];
    const POW10_NEG32: [f64; 11] = [
        1e0, 1e-32, 1e-64, 1e-96, 1e-128, 1e-160, 1e-192, 1e-224, 1e-256, 1e-288, 1e-320,
    ];
    if (0..=308).contains(&n) {
        let n = n as usize;
        return POW10_POS32[n / 32] * POW10_TAB[n % 32];
    }
    if (-323..0).contains(&n) {
        let m = (-n) as usize;
        return POW10_NEG32[m / 32] / POW10_TAB[m % 32];
    }
    if n > 0 { f64::INFINITY } else { 0.0 }
}

// ---------------------------------------------------------------------------------
// Printing

/// Go's `CanonicalizeBytes` followed by the suffix lookup.
fn canonical(nanos: i128, format: Format) -> String {
    if nanos == 0 {
        return "0".to_string();
    }
    // On the magnitude, by 32-bit limbs ([`div_rem_small`]): i128 division is a library call
    // per step, and this runs for every quantity parsed and printed.
    let sign = if nanos < 0 { "-" } else { "" };
    let magnitude = nanos.unsigned_abs();
    let (units, fraction) = div_rem_small(magnitude, 1_000_000_000);
    let mut format = format;
    if format == Format::BinarySI && (units < 1024 || fraction != 0) {
        // Small values and fractions are shown in decimal (Go: "avoids rounding").
        format = Format::DecimalSI;
    }
    match format {
        Format::BinarySI => {
            let mut mantissa = units;
            let mut times = 0;
            while mantissa >= 1024 && mantissa % 1024 == 0 {
                mantissa >>= 10;
                times += 1;
            }
            // Go has no suffix for 1024^0 in the binary table, nor above Ei: it
            // prints none (the second case is a Go bug kept on purpose).
            let suffix = match times {
                1 => "Ki",
                2 => "Mi",
                3 => "Gi",
                4 => "Ti",
                5 => "Pi",
                6 => "Ei",
                _ => "",
            };
            signed_with_suffix(sign, mantissa, suffix)
        }
        Format::DecimalSI | Format::DecimalExponent => {
            let (mut mantissa, mut exponent) = if fraction == 0 {
                (units, 0)
            } else {
                (magnitude, -9)
            };
            loop {
                let (quotient, remainder) = div_rem_small(mantissa, 10);
                if remainder != 0 {
                    break;
                }
                mantissa = quotient;
                exponent += 1;
            }
            // Lower the exponent to a multiple of three.
            while exponent % 3 != 0 {
                mantissa *= 10;
                exponent -= 1;
            }
            if format == Format::DecimalExponent {
                if exponent == 0 {
                    format!("{sign}{mantissa}")
                } else {
                    format!("{sign}{mantissa}e{exponent}")
                }
            } else {
                // Go has no suffix above E (10^18) and prints none (a Go bug kept on
                // purpose); exponents below -9 cannot occur.
                let suffix = match exponent {
                    -9 => "n",
                    -6 => "u",
                    -3 => "m",
                    3 => "k",
                    6 => "M",
                    9 => "G",
                    12 => "T",
                    15 => "P",
                    18 => "E",
                    _ => "",
                };
                signed_with_suffix(sign, mantissa, suffix)
            }
        }
    }
}

/// `{sign}{mantissa}{suffix}`, the digits written by hand: a printed quantity (every
/// allocation's consumed capacity) went through `format!`'s machinery at several times the
/// cost.
fn signed_with_suffix(sign: &str, mantissa: u128, suffix: &str) -> String {
    let mut digits = [0u8; 39];
    let mut at = digits.len();
    let mut rest = mantissa;
    loop {
        let (quotient, digit) = div_rem_small(rest, 10);
        at -= 1;
        digits[at] = b'0' + digit as u8;
        rest = quotient;
        if rest == 0 {
            break;
        }
    }
    let digits = std::str::from_utf8(&digits[at..]).unwrap_or_default();
    let mut text = String::with_capacity(sign.len() + digits.len() + suffix.len());
    text.push_str(sign);
    text.push_str(digits);
    text.push_str(suffix);
    text
}

/// `n / divisor` and `n % divisor` by 32-bit limbs, each step a 64-bit division that the
/// compiler turns into a multiplication when the divisor is a constant.
#[inline]
fn div_rem_small(n: u128, divisor: u32) -> (u128, u32) {
    let divisor = u64::from(divisor);
    let mut quotient = 0u128;
    let mut remainder = 0u64;
    for shift in [96, 64, 32, 0] {
        // `remainder < divisor < 2³²`, so `current / divisor` fits in 32 bits.
        let current = (remainder << 32) | ((n >> shift) as u32 as u64);
        quotient |= u128::from(current / divisor) << shift;
        remainder = current % divisor;
    }
    (quotient, remainder as u32)
}

#[cfg(test)]
mod tests;
