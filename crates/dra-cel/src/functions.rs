//! Function implementations: the CEL standard library, optional types, ext.Strings v2,
//! ext.Sets, ext.Lists v3 and the Kubernetes regex, lists, quantity and semver
//! libraries, plus DRA's `includes`. Dispatch is by function and runtime argument types,
//! with upstream's "no such overload" errors when nothing matches.

use std::cmp::Ordering;
use std::rc::Rc;

use regex::Regex;

use crate::error::RuntimeErrorKind;
use crate::program::{CallNode, Ctx};
use crate::value::{
    Bytes, Duration, QuantityRef, SemverRef, Timestamp, Val, Value, compare, equals, err,
    is_comparer, no_such_overload, no_such_overload_for, other,
};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Func {
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    Neg,
    Lt,
    Le,
    Gt,
    Ge,
    In,
    Size,
    TypeOf,
    ToBool,
    ToBytes,
    ToDouble,
    ToDuration,
    ToDyn,
    ToInt,
    ToString,
    ToTimestamp,
    ToUint,
    Matches,
    Contains,
    EndsWith,
    StartsWith,
    TimeGetter(TimeField),
    OptOf,
    OptOfNonZero,
    OptNone,
    OptValue,
    OptHasValue,
    OptOr,
    OptOrValue,
    OptUnwrap,
    First,
    Last,
    CharAt,
    IndexOf,
    LastIndexOf,
    LowerAscii,
    UpperAscii,
    Replace,
    Split,
    Substring,
    Trim,
    Format,
    Quote,
    Join,
    Find,
    FindAll,
    IsSorted,
    Sum,
    Max,
    Min,
    Includes,
    SetsContains,
    SetsEquivalent,
    SetsIntersects,
    Slice,
    Flatten,
    Sort,
    SortByKeys,
    Range,
    Reverse,
    Distinct,
    MapInsert,
    Quantity,
    IsQuantity,
    Sign,
    IsGreaterThan,
    IsLessThan,
    CompareTo,
    AsApproximateFloat,
    AsInteger,
    IsInteger,
    QuantityAdd,
    QuantitySub,
    Semver,
    IsSemver,
    Major,
    Minor,
    Patch,
    Ip,
    IsIp,
    IpIsCanonical,
    Family,
    IsUnspecified,
    IsLoopback,
    IsLinkLocalMulticast,
    IsLinkLocalUnicast,
    IsGlobalUnicast,
    Cidr,
    IsCidr,
    ContainsIp,
    ContainsCidr,
    PrefixLength,
    Masked,
    Unknown,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TimeField {
    FullYear,
    Month,
    DayOfYear,
    DayOfMonth,
    Date,
    DayOfWeek,
    Hours,
    Minutes,
    Seconds,
    Milliseconds,
}

impl Func {
    fn name(self) -> &'static str {
        use Func::*;
        match self {
            Add => "_+_",
            Sub => "_-_",
            Mul => "_*_",
            Div => "_/_",
            Mod => "_%_",
            Neg => "-_",
            Lt => "_<_",
            Le => "_<=_",
            Gt => "_>_",
            Ge => "_>=_",
            In => "@in",
            Size => "size",
            TypeOf => "type",
            ToBool => "bool",
            ToBytes => "bytes",
            ToDouble => "double",
            ToDuration => "duration",
            ToDyn => "dyn",
            ToInt => "int",
            ToString => "string",
            ToTimestamp => "timestamp",
            ToUint => "uint",
            Matches => "matches",
            Contains => "contains",
            EndsWith => "endsWith",
            StartsWith => "startsWith",
            TimeGetter(f) => match f {
                TimeField::FullYear => "getFullYear",
                TimeField::Month => "getMonth",
                TimeField::DayOfYear => "getDayOfYear",
                TimeField::DayOfMonth => "getDayOfMonth",
                TimeField::Date => "getDate",
                TimeField::DayOfWeek => "getDayOfWeek",
                TimeField::Hours => "getHours",
                TimeField::Minutes => "getMinutes",
                TimeField::Seconds => "getSeconds",
                TimeField::Milliseconds => "getMilliseconds",
            },
            OptOf => "optional.of",
            OptOfNonZero => "optional.ofNonZeroValue",
            OptNone => "optional.none",
            OptValue => "value",
            OptHasValue => "hasValue",
            OptOr => "or",
            OptOrValue => "orValue",
            OptUnwrap => "optional.unwrap",
            First => "first",
            Last => "last",
            CharAt => "charAt",
            IndexOf => "indexOf",
            LastIndexOf => "lastIndexOf",
            LowerAscii => "lowerAscii",
            UpperAscii => "upperAscii",
            Replace => "replace",
            Split => "split",
            Substring => "substring",
            Trim => "trim",
            Format => "format",
            Quote => "strings.quote",
            Join => "join",
            Find => "find",
            FindAll => "findAll",
            IsSorted => "isSorted",
            Sum => "sum",
            Max => "max",
            Min => "min",
            Includes => "includes",
            SetsContains => "sets.contains",
            SetsEquivalent => "sets.equivalent",
            SetsIntersects => "sets.intersects",
            Slice => "slice",
            Flatten => "flatten",
            Sort => "sort",
            SortByKeys => "@sortByAssociatedKeys",
            Range => "lists.range",
            Reverse => "reverse",
            Distinct => "distinct",
            MapInsert => "cel.@mapInsert",
            Quantity => "quantity",
            IsQuantity => "isQuantity",
            Sign => "sign",
            IsGreaterThan => "isGreaterThan",
            IsLessThan => "isLessThan",
            CompareTo => "compareTo",
            AsApproximateFloat => "asApproximateFloat",
            AsInteger => "asInteger",
            IsInteger => "isInteger",
            QuantityAdd => "add",
            QuantitySub => "sub",
            Semver => "semver",
            IsSemver => "isSemver",
            Major => "major",
            Minor => "minor",
            Patch => "patch",
            Ip => "ip",
            IsIp => "isIP",
            IpIsCanonical => "ip.isCanonical",
            Family => "family",
            IsUnspecified => "isUnspecified",
            IsLoopback => "isLoopback",
            IsLinkLocalMulticast => "isLinkLocalMulticast",
            IsLinkLocalUnicast => "isLinkLocalUnicast",
            IsGlobalUnicast => "isGlobalUnicast",
            Cidr => "cidr",
            IsCidr => "isCIDR",
            ContainsIp => "containsIP",
            ContainsCidr => "containsCIDR",
            PrefixLength => "prefixLength",
            Masked => "masked",
            Unknown => "unknown",
        }
    }
}

/// Maps a checked call to its implementation.
pub(crate) fn resolve(function: &str, _member: bool, _overloads: &[&'static str]) -> Func {
    use Func::*;
    match function {
        "_+_" => Add,
        "_-_" => Sub,
        "_*_" => Mul,
        "_/_" => Div,
        "_%_" => Mod,
        "-_" => Neg,
        "_<_" => Lt,
        "_<=_" => Le,
        "_>_" => Gt,
        "_>=_" => Ge,
        "@in" => In,
        "size" => Size,
        "type" => TypeOf,
        "bool" => ToBool,
        "bytes" => ToBytes,
        "double" => ToDouble,
        "duration" => ToDuration,
        "dyn" => ToDyn,
        "int" => ToInt,
        "string" => ToString,
        "timestamp" => ToTimestamp,
        "uint" => ToUint,
        "matches" => Matches,
        "contains" => Contains,
        "endsWith" => EndsWith,
        "startsWith" => StartsWith,
        "getFullYear" => TimeGetter(TimeField::FullYear),
        "getMonth" => TimeGetter(TimeField::Month),
        "getDayOfYear" => TimeGetter(TimeField::DayOfYear),
        "getDayOfMonth" => TimeGetter(TimeField::DayOfMonth),
        "getDate" => TimeGetter(TimeField::Date),
        "getDayOfWeek" => TimeGetter(TimeField::DayOfWeek),
        "getHours" => TimeGetter(TimeField::Hours),
        "getMinutes" => TimeGetter(TimeField::Minutes),
        "getSeconds" => TimeGetter(TimeField::Seconds),
        "getMilliseconds" => TimeGetter(TimeField::Milliseconds),
        "optional.of" => OptOf,
        "optional.ofNonZeroValue" => OptOfNonZero,
        "optional.none" => OptNone,
        "value" => OptValue,
        "hasValue" => OptHasValue,
        "or" => OptOr,
        "orValue" => OptOrValue,
        "optional.unwrap" | "unwrapOpt" => OptUnwrap,
        "first" => First,
        "last" => Last,
        "charAt" => CharAt,
        "indexOf" => IndexOf,
        "lastIndexOf" => LastIndexOf,
        "lowerAscii" => LowerAscii,
        "upperAscii" => UpperAscii,
        "replace" => Replace,
        "split" => Split,
        "substring" => Substring,
        "trim" => Trim,
        "format" => Format,
        "strings.quote" => Quote,
        "join" => Join,
        "find" => Find,
        "findAll" => FindAll,
        "isSorted" => IsSorted,
        "sum" => Sum,
        "max" => Max,
        "min" => Min,
        "includes" => Includes,
        "sets.contains" => SetsContains,
        "sets.equivalent" => SetsEquivalent,
        "sets.intersects" => SetsIntersects,
        "slice" => Slice,
        "flatten" => Flatten,
        "sort" => Sort,
        "@sortByAssociatedKeys" => SortByKeys,
        "lists.range" => Range,
        "reverse" => Reverse,
        "distinct" => Distinct,
        "cel.@mapInsert" => MapInsert,
        "quantity" => Quantity,
        "isQuantity" => IsQuantity,
        "sign" => Sign,
        "isGreaterThan" => IsGreaterThan,
        "isLessThan" => IsLessThan,
        "compareTo" => CompareTo,
        "asApproximateFloat" => AsApproximateFloat,
        "asInteger" => AsInteger,
        "isInteger" => IsInteger,
        "add" => QuantityAdd,
        "sub" => QuantitySub,
        "semver" => Semver,
        "isSemver" => IsSemver,
        "major" => Major,
        "minor" => Minor,
        "patch" => Patch,
        "ip" => Ip,
        "isIP" => IsIp,
        "ip.isCanonical" => IpIsCanonical,
        "family" => Family,
        "isUnspecified" => IsUnspecified,
        "isLoopback" => IsLoopback,
        "isLinkLocalMulticast" => IsLinkLocalMulticast,
        "isLinkLocalUnicast" => IsLinkLocalUnicast,
        "isGlobalUnicast" => IsGlobalUnicast,
        "cidr" => Cidr,
        "isCIDR" => IsCidr,
        "containsIP" => ContainsIp,
        "containsCIDR" => ContainsCidr,
        "prefixLength" => PrefixLength,
        "masked" => Masked,
        _ => Unknown,
    }
}

/// Compiles a pattern with RE2 semantics: Go's `\d`, `\w`, `\s` and `\b` are ASCII-only,
/// so they are rewritten into explicit ASCII classes for the `regex` crate.
pub(crate) fn compile_regex(pattern: &str) -> Result<Regex, String> {
    let translated = translate_re2(pattern);
    regex::RegexBuilder::new(&translated)
        .size_limit(1 << 22)
        .build()
        .map_err(|e| {
            let detail = e.to_string();
            let last = detail
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("invalid pattern")
                .trim()
                .trim_start_matches("error: ")
                .to_string();
            format!("error parsing regexp: {last}: `{pattern}`")
        })
}

fn translate_re2(pattern: &str) -> String {
    let mut out = String::with_capacity(pattern.len() + 16);
    let mut chars = pattern.chars().peekable();
    let mut in_class = false;
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some(e @ ('d' | 'D' | 'w' | 'W' | 's' | 'S')) => {
                    let class = match e.to_ascii_lowercase() {
                        'd' => "0-9",
                        'w' => "0-9A-Za-z_",
                        _ => "\\t\\n\\x0C\\r ",
                    };
                    let negated = e.is_ascii_uppercase();
                    match (in_class, negated) {
                        (false, false) => out.push_str(&format!("[{class}]")),
                        (false, true) => out.push_str(&format!("[^{class}]")),
                        (true, false) => out.push_str(class),
                        (true, true) => out.push_str(&format!("[^{class}]")),
                    }
                }
                Some('b') if !in_class => out.push_str("(?-u:\\b)"),
                Some('B') if !in_class => out.push_str("(?-u:\\B)"),
                Some(other_char) => {
                    out.push('\\');
                    out.push(other_char);
                }
                None => out.push('\\'),
            }
            continue;
        }
        if c == '[' && !in_class {
            in_class = true;
            out.push(c);
            if chars.peek() == Some(&'^') {
                out.push('^');
                chars.next();
            }
            if chars.peek() == Some(&']') {
                out.push_str("\\]");
                chars.next();
            }
            continue;
        }
        if c == '[' && in_class {
            // A literal '[' inside a class (RE2 has no nested classes).
            out.push_str("\\[");
            continue;
        }
        if c == ']' && in_class {
            in_class = false;
        }
        out.push(c);
    }
    out
}

/// Go's `%g`-style shortest formatting of a float64 (strconv.FormatFloat(f, 'g', -1, 64)).
pub(crate) fn format_go_float(d: f64) -> String {
    if d.is_nan() {
        return "NaN".to_string();
    }
    if d.is_infinite() {
        return if d > 0.0 { "+Inf" } else { "-Inf" }.to_string();
    }
    if d == 0.0 {
        return if d.is_sign_negative() { "-0" } else { "0" }.to_string();
    }
    // Shortest round-trip digits via Rust's formatter in exponent form.
    let e = format!("{d:e}");
    let (mantissa, exp) = e.split_once('e').unwrap_or((&e, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let negative = mantissa.starts_with('-');
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let sign = if negative { "-" } else { "" };
    // Shortest formatting switches to an exponent at 1e+06, like Go's %g.
    if !(-4..6).contains(&exp) {
        let mut m = digits[..1].to_string();
        if digits.len() > 1 {
            m.push('.');
            m.push_str(&digits[1..]);
        }
        let esign = if exp < 0 { '-' } else { '+' };
        let eabs = exp.abs();
        return format!("{sign}{m}e{esign}{eabs:02}");
    }
    if exp >= 0 {
        let exp = exp as usize;
        if digits.len() <= exp + 1 {
            let zeros = "0".repeat(exp + 1 - digits.len());
            format!("{sign}{digits}{zeros}")
        } else {
            format!("{sign}{}.{}", &digits[..=exp], &digits[exp + 1..])
        }
    } else {
        let zeros = "0".repeat((-exp - 1) as usize);
        format!("{sign}0.{zeros}{digits}")
    }
}

fn owned<'a>(x: String) -> Value<'a> {
    Value::string(x)
}

/// Runtime cost of a call (cel-go's `costCall` plus the Kubernetes `CallCost`).
fn call_cost(func: Func, args: &[Value<'_>], result: &Val<'_>) -> u64 {
    use Func::*;
    let size = |i: usize| args.get(i).map_or(1, Value::actual_size);
    let tenth = |n: u64| (n as f64 * 0.1).ceil() as u64;
    match func {
        StartsWith | EndsWith | Quote | Format => tenth(size(0)),
        ToBytes | ToString if matches!(args.first(), Some(Value::Str(_) | Value::Bytes(_))) => {
            tenth(size(0))
        }
        In => match args.get(1) {
            Some(Value::List(_)) => size(1),
            _ => 1,
        },
        Lt | Le | Gt | Ge if matches!(args.first(), Some(Value::Str(_) | Value::Bytes(_))) => {
            tenth(size(0).min(size(1)))
        }
        Add if matches!(args.first(), Some(Value::Str(_) | Value::Bytes(_))) => {
            tenth(size(0) + size(1))
        }
        Matches | Find | FindAll => {
            let str_cost = ((1 + size(0)) as f64 * 0.1).ceil() as u64;
            let re_cost = (size(1) as f64 * 0.25).ceil() as u64;
            str_cost.saturating_mul(re_cost)
        }
        Contains if matches!(args.first(), Some(Value::Str(_))) => {
            tenth(size(0)).saturating_mul(tenth(size(1)))
        }
        IsSorted | Sum | Max | Min | IndexOf | LastIndexOf | Includes
            if matches!(args.first(), Some(Value::List(_))) =>
        {
            args.first().map_or(1, traversal_cost)
        }
        LowerAscii | UpperAscii | Substring | Trim => tenth(size(0)),
        Replace | Split => ((size(0) as f64) * 0.2).ceil() as u64,
        Join => match result {
            Ok(v) => ((v.actual_size() as f64) * 0.2).ceil() as u64,
            Err(_) => 1,
        },
        Quantity | IsQuantity | Semver | IsSemver => tenth(size(0)),
        SetsContains | SetsEquivalent | SetsIntersects => 1 + size(0).saturating_mul(size(1)),
        Slice | Reverse | Distinct | Flatten | Sort | SortByKeys | Range => {
            10 + match result {
                Ok(v) => v.actual_size(),
                Err(_) => 0,
            }
        }
        _ => 1,
    }
}

fn traversal_cost(v: &Value<'_>) -> u64 {
    match v {
        Value::Str(s) => (s.as_str().len() as f64 * 0.1) as u64,
        Value::Bytes(b) => (b.as_bytes().len() as f64 * 0.1) as u64,
        Value::List(items) => items.iter().map(traversal_cost).sum(),
        _ => 1,
    }
}

pub(crate) fn call<'a>(node: &'a CallNode, args: &[Value<'a>], ctx: &mut Ctx<'a>) -> Val<'a> {
    let result = dispatch(node, args, ctx);
    ctx.charge(call_cost(node.func, args, &result))?;
    result
}

fn guard<'a>(func: Func, args: &[Value<'a>]) -> crate::value::Err {
    let refs: Vec<&Value<'a>> = args.iter().collect();
    no_such_overload_for(func.name(), &refs)
}

fn int_overflow() -> crate::value::Err {
    other("integer overflow")
}

fn uint_overflow() -> crate::value::Err {
    other("unsigned integer overflow")
}

fn dispatch<'a>(node: &'a CallNode, args: &[Value<'a>], ctx: &mut Ctx<'a>) -> Val<'a> {
    use Func::*;
    use Value as V;
    let func = node.func;
    let bad = || guard(func, args);
    match (func, args) {
        // ----- arithmetic (singleton operators: plain "no such overload")
        (Add, [V::Int(a), V::Int(b)]) => a.checked_add(*b).map(V::Int).ok_or_else(int_overflow),
        (Add, [V::Uint(a), V::Uint(b)]) => a.checked_add(*b).map(V::Uint).ok_or_else(uint_overflow),
        (Add, [V::Double(a), V::Double(b)]) => Ok(V::Double(a + b)),
        (Add, [V::Str(a), V::Str(b)]) => Ok(owned(format!("{}{}", a.as_str(), b.as_str()))),
        (Add, [V::Bytes(a), V::Bytes(b)]) => {
            let mut out = a.as_bytes().to_vec();
            out.extend_from_slice(b.as_bytes());
            Ok(V::Bytes(Bytes::Owned(out.into())))
        }
        (Add, [V::List(a), V::List(b)]) => {
            if b.is_empty() {
                return Ok(V::List(a.clone()));
            }
            if a.is_empty() {
                return Ok(V::List(b.clone()));
            }
            let mut out = Vec::with_capacity(a.len() + b.len());
            out.extend(a.iter().cloned());
            out.extend(b.iter().cloned());
            Ok(V::list(out))
        }
        (Add, [V::Duration(a), V::Duration(b)]) => duration_checked(a.0.checked_add(b.0)),
        (Add, [V::Timestamp(t), V::Duration(d)]) | (Add, [V::Duration(d), V::Timestamp(t)]) => {
            timestamp_add(*t, d.0 as i128)
        }
        (Sub, [V::Int(a), V::Int(b)]) => a.checked_sub(*b).map(V::Int).ok_or_else(int_overflow),
        (Sub, [V::Uint(a), V::Uint(b)]) => a.checked_sub(*b).map(V::Uint).ok_or_else(uint_overflow),
        (Sub, [V::Double(a), V::Double(b)]) => Ok(V::Double(a - b)),
        (Sub, [V::Duration(a), V::Duration(b)]) => duration_checked(a.0.checked_sub(b.0)),
        (Sub, [V::Timestamp(t), V::Duration(d)]) => timestamp_add(*t, -(d.0 as i128)),
        (Sub, [V::Timestamp(a), V::Timestamp(b)]) => {
            let nanos = (a.seconds as i128 - b.seconds as i128) * 1_000_000_000
                + (a.nanos as i128 - b.nanos as i128);
            duration_checked(i64::try_from(nanos).ok())
        }
        (Mul, [V::Int(a), V::Int(b)]) => a.checked_mul(*b).map(V::Int).ok_or_else(int_overflow),
        (Mul, [V::Uint(a), V::Uint(b)]) => a.checked_mul(*b).map(V::Uint).ok_or_else(uint_overflow),
        (Mul, [V::Double(a), V::Double(b)]) => Ok(V::Double(a * b)),
        (Div, [V::Int(_), V::Int(0)]) | (Div, [V::Uint(_), V::Uint(0)]) => {
            Err(other("division by zero"))
        }
        (Div, [V::Int(a), V::Int(b)]) => a.checked_div(*b).map(V::Int).ok_or_else(int_overflow),
        (Div, [V::Uint(a), V::Uint(b)]) => Ok(V::Uint(a / b)),
        (Div, [V::Double(a), V::Double(b)]) => Ok(V::Double(a / b)),
        (Mod, [V::Int(_), V::Int(0)]) | (Mod, [V::Uint(_), V::Uint(0)]) => {
            Err(other("modulus by zero"))
        }
        (Mod, [V::Int(a), V::Int(b)]) => a.checked_rem(*b).map(V::Int).ok_or_else(int_overflow),
        (Mod, [V::Uint(a), V::Uint(b)]) => Ok(V::Uint(a % b)),
        (Neg, [V::Int(a)]) => a.checked_neg().map(V::Int).ok_or_else(int_overflow),
        (Neg, [V::Double(a)]) => Ok(V::Double(-a)),
        (Neg, [V::Duration(d)]) => duration_checked(d.0.checked_neg()),
        (Add | Sub | Mul | Div | Mod | Neg, [a, ..]) => {
            let has_trait = match func {
                Add => matches!(
                    a,
                    V::Int(_)
                        | V::Uint(_)
                        | V::Double(_)
                        | V::Str(_)
                        | V::Bytes(_)
                        | V::List(_)
                        | V::Duration(_)
                        | V::Timestamp(_)
                ),
                Sub => matches!(
                    a,
                    V::Int(_) | V::Uint(_) | V::Double(_) | V::Duration(_) | V::Timestamp(_)
                ),
                Mul | Div => matches!(a, V::Int(_) | V::Uint(_) | V::Double(_)),
                Mod => matches!(a, V::Int(_) | V::Uint(_)),
                _ => matches!(a, V::Int(_) | V::Double(_) | V::Duration(_)),
            };
            if has_trait {
                Err(no_such_overload())
            } else {
                Err(err(
                    RuntimeErrorKind::NoSuchOverload,
                    format!("no such overload: {}", func.name()),
                ))
            }
        }
        // ----- comparisons
        (Lt | Le | Gt | Ge, [a, b]) => {
            if !is_comparer(a) {
                return Err(err(
                    RuntimeErrorKind::NoSuchOverload,
                    format!("no such overload: {}", func.name()),
                ));
            }
            let ord = compare(a, b)?;
            Ok(V::Bool(match func {
                Lt => ord == Ordering::Less,
                Le => ord != Ordering::Greater,
                Gt => ord == Ordering::Greater,
                _ => ord != Ordering::Less,
            }))
        }
        (In, [x, V::List(items)]) => {
            for item in items.iter() {
                if let Ok(true) = equals(x, item) {
                    return Ok(V::Bool(true));
                }
            }
            Ok(V::Bool(false))
        }
        (In, [x, V::Map(m)]) => Ok(V::Bool(m.contains(x)?)),
        (In, _) => Err(no_such_overload()),
        (Size, [V::Str(x)]) => Ok(V::Int(x.as_str().chars().count() as i64)),
        (Size, [V::Bytes(x)]) => Ok(V::Int(x.as_bytes().len() as i64)),
        (Size, [V::List(x)]) => Ok(V::Int(x.len() as i64)),
        (Size, [V::Map(m)]) => Ok(V::Int(m.len() as i64)),
        (Size, _) => Err(no_such_overload()),
        (TypeOf, [x]) => Ok(V::Type(Rc::new(x.cel_type()))),
        (ToDyn, [x]) => Ok(x.clone()),
        // ----- conversions
        (ToBool, [V::Bool(b)]) => Ok(V::Bool(*b)),
        (ToBool, [V::Str(x)]) => match x.as_str() {
            "1" | "t" | "T" | "TRUE" | "true" | "True" => Ok(V::Bool(true)),
            "0" | "f" | "F" | "FALSE" | "false" | "False" => Ok(V::Bool(false)),
            _ => Err(other("type conversion error from 'string' to 'bool'")),
        },
        (ToBytes, [V::Bytes(b)]) => Ok(V::Bytes(b.clone())),
        (ToBytes, [V::Str(x)]) => Ok(V::Bytes(Bytes::Owned(x.as_str().as_bytes().into()))),
        (ToDouble, [V::Double(d)]) => Ok(V::Double(*d)),
        (ToDouble, [V::Int(i)]) => Ok(V::Double(*i as f64)),
        (ToDouble, [V::Uint(u)]) => Ok(V::Double(*u as f64)),
        (ToDouble, [V::Str(x)]) => parse_go_float(x.as_str())
            .map(V::Double)
            .ok_or_else(|| other("type conversion error from 'string' to 'double'")),
        (ToInt, [V::Int(i)]) => Ok(V::Int(*i)),
        (ToInt, [V::Uint(u)]) => i64::try_from(*u).map(V::Int).map_err(|_| int_overflow()),
        (ToInt, [V::Double(d)]) => {
            if d.is_nan()
                || d.is_infinite()
                || *d <= -9_223_372_036_854_775_808.0
                || *d >= 9_223_372_036_854_775_808.0
            {
                Err(int_overflow())
            } else {
                Ok(V::Int(*d as i64))
            }
        }
        (ToInt, [V::Str(x)]) => parse_go_int(x.as_str())
            .map(V::Int)
            .ok_or_else(|| other("type conversion error from 'string' to 'int'")),
        (ToInt, [V::Duration(d)]) => Ok(V::Int(d.0)),
        (ToInt, [V::Timestamp(t)]) => Ok(V::Int(t.seconds)),
        (ToUint, [V::Uint(u)]) => Ok(V::Uint(*u)),
        (ToUint, [V::Int(i)]) => u64::try_from(*i).map(V::Uint).map_err(|_| uint_overflow()),
        (ToUint, [V::Double(d)]) => {
            if d.is_nan() || d.is_infinite() || *d < 0.0 || *d >= 18_446_744_073_709_551_616.0 {
                Err(uint_overflow())
            } else {
                Ok(V::Uint(*d as u64))
            }
        }
        (ToUint, [V::Str(x)]) => {
            let t = x.as_str();
            let t = t.strip_prefix('+').unwrap_or(t);
            t.parse::<u64>()
                .ok()
                .filter(|_| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()))
                .map(V::Uint)
                .ok_or_else(|| other("type conversion error from 'string' to 'uint'"))
        }
        (ToString, [V::Str(x)]) => Ok(V::Str(x.clone())),
        (ToString, [V::Bool(b)]) => Ok(owned(b.to_string())),
        (ToString, [V::Int(i)]) => Ok(owned(i.to_string())),
        (ToString, [V::Uint(u)]) => Ok(owned(u.to_string())),
        (ToString, [V::Double(d)]) => Ok(owned(format_go_float(*d))),
        (ToString, [V::Bytes(b)]) => match std::str::from_utf8(b.as_bytes()) {
            Ok(t) => Ok(owned(t.to_string())),
            Err(_) => Err(other("invalid UTF-8 in bytes, cannot convert to string")),
        },
        (ToString, [V::Duration(d)]) => Ok(owned(format_duration(*d))),
        (ToString, [V::Timestamp(t)]) => Ok(owned(format_timestamp(*t))),
        (ToString, [V::Ip(ip)]) => Ok(owned(ip.to_string())),
        (ToString, [V::Cidr(ip, bits)]) => Ok(owned(format!("{ip}/{bits}"))),
        (ToDuration, [V::Duration(d)]) => Ok(V::Duration(*d)),
        (ToDuration, [V::Str(x)]) => parse_go_duration(x.as_str())
            .map(|n| V::Duration(Duration(n)))
            .ok_or_else(|| {
                other("type conversion error from 'string' to 'google.protobuf.Duration'")
            }),
        (ToTimestamp, [V::Timestamp(t)]) => Ok(V::Timestamp(*t)),
        (ToTimestamp, [V::Int(i)]) => timestamp_checked(*i, 0),
        (ToTimestamp, [V::Str(x)]) => match parse_rfc3339(x.as_str()) {
            Some((seconds, nanos)) => timestamp_checked(seconds, nanos),
            None => Err(other(
                "type conversion error from 'string' to 'google.protobuf.Timestamp'",
            )),
        },
        (TimeGetter(field), [V::Timestamp(t)]) => time_get(field, *t, 0),
        (TimeGetter(field), [V::Timestamp(t), V::Str(tz)]) => {
            let offset = parse_tz(tz.as_str())?;
            time_get(field, *t, offset)
        }
        (TimeGetter(field), [V::Duration(d)]) => match field {
            TimeField::Hours => Ok(V::Int(d.0 / 3_600_000_000_000)),
            TimeField::Minutes => Ok(V::Int(d.0 / 60_000_000_000)),
            TimeField::Seconds => Ok(V::Int(d.0 / 1_000_000_000)),
            TimeField::Milliseconds => Ok(V::Int((d.0 / 1_000_000) % 1000)),
            _ => Err(bad()),
        },
        // ----- strings
        (Matches, [V::Str(text), V::Str(pattern)]) => match &node.regex {
            Some(re) => Ok(V::Bool(re.is_match(text.as_str()))),
            None => {
                let re = compile_regex(pattern.as_str()).map_err(other)?;
                Ok(V::Bool(re.is_match(text.as_str())))
            }
        },
        (Contains, [V::Str(a), V::Str(b)]) => Ok(V::Bool(a.as_str().contains(b.as_str()))),
        (StartsWith, [V::Str(a), V::Str(b)]) => Ok(V::Bool(a.as_str().starts_with(b.as_str()))),
        (EndsWith, [V::Str(a), V::Str(b)]) => Ok(V::Bool(a.as_str().ends_with(b.as_str()))),
        (CharAt, [V::Str(x), V::Int(i)]) => {
            let chars: Vec<char> = x.as_str().chars().collect();
            if *i < 0 || *i as usize > chars.len() {
                return Err(other(format!("index out of range: {i}")));
            }
            Ok(owned(
                chars
                    .get(*i as usize)
                    .map(|c| c.to_string())
                    .unwrap_or_default(),
            ))
        }
        (IndexOf, [V::Str(x), V::Str(sub)]) => index_of(x.as_str(), sub.as_str(), 0).map(V::Int),
        (IndexOf, [V::Str(x), V::Str(sub), V::Int(off)]) => {
            index_of(x.as_str(), sub.as_str(), *off).map(V::Int)
        }
        (LastIndexOf, [V::Str(x), V::Str(sub)]) => {
            let n = x.as_str().chars().count() as i64;
            if sub.as_str().is_empty() {
                return Ok(V::Int(n));
            }
            if x.as_str().len() < sub.as_str().len() {
                return Ok(V::Int(-1));
            }
            last_index_of(x.as_str(), sub.as_str(), n - 1).map(V::Int)
        }
        (LastIndexOf, [V::Str(x), V::Str(sub), V::Int(off)]) => {
            last_index_of(x.as_str(), sub.as_str(), *off).map(V::Int)
        }
        (LowerAscii, [V::Str(x)]) => Ok(owned(x.as_str().to_ascii_lowercase())),
        (UpperAscii, [V::Str(x)]) => Ok(owned(x.as_str().to_ascii_uppercase())),
        (Replace, [V::Str(x), V::Str(from), V::Str(to)]) => Ok(owned(go_replace(
            x.as_str(),
            from.as_str(),
            to.as_str(),
            -1,
        ))),
        (Replace, [V::Str(x), V::Str(from), V::Str(to), V::Int(n)]) => Ok(owned(go_replace(
            x.as_str(),
            from.as_str(),
            to.as_str(),
            *n,
        ))),
        (Split, [V::Str(x), V::Str(sep)]) => {
            Ok(string_list(go_split(x.as_str(), sep.as_str(), -1)))
        }
        (Split, [V::Str(x), V::Str(sep), V::Int(n)]) => {
            Ok(string_list(go_split(x.as_str(), sep.as_str(), *n)))
        }
        (Substring, [V::Str(x), V::Int(start)]) => {
            let chars: Vec<char> = x.as_str().chars().collect();
            if *start < 0 || *start as usize > chars.len() {
                return Err(other(format!("index out of range: {start}")));
            }
            Ok(owned(chars[*start as usize..].iter().collect()))
        }
        (Substring, [V::Str(x), V::Int(start), V::Int(end)]) => {
            let chars: Vec<char> = x.as_str().chars().collect();
            if start > end {
                return Err(other(format!(
                    "invalid substring range. start: {start}, end: {end}"
                )));
            }
            if *start < 0 || *start as usize > chars.len() {
                return Err(other(format!("index out of range: {start}")));
            }
            if *end < 0 || *end as usize > chars.len() {
                return Err(other(format!("index out of range: {end}")));
            }
            Ok(owned(
                chars[*start as usize..*end as usize].iter().collect(),
            ))
        }
        (Trim, [V::Str(x)]) => Ok(owned(x.as_str().trim_matches(is_go_space).to_string())),
        (Quote, [V::Str(x)]) => Ok(owned(quote(x.as_str()))),
        (Join, [V::List(items)]) => join(items, ""),
        (Join, [V::List(items), V::Str(sep)]) => join(items, sep.as_str()),
        (Format, [V::Str(f), V::List(items)]) => format_string(f.as_str(), items),
        (Find, [V::Str(text), V::Str(pattern)]) => {
            let re = regex_for(node, pattern.as_str())?;
            Ok(owned(
                re.find(text.as_str())
                    .map(|m| m.as_str().to_string())
                    .unwrap_or_default(),
            ))
        }
        (FindAll, [V::Str(text), V::Str(pattern)]) => {
            find_all(node, text.as_str(), pattern.as_str(), -1)
        }
        (FindAll, [V::Str(text), V::Str(pattern), V::Int(n)]) => {
            find_all(node, text.as_str(), pattern.as_str(), *n)
        }
        // ----- optional
        (OptOf, [x]) => Ok(V::Optional(Some(Rc::new(x.clone())))),
        (OptOfNonZero, [x]) => Ok(V::Optional(if is_zero(x) {
            None
        } else {
            Some(Rc::new(x.clone()))
        })),
        (OptNone, []) => Ok(V::Optional(None)),
        (OptValue, [V::Optional(Some(v))]) => Ok((**v).clone()),
        (OptValue, [V::Optional(None)]) => Err(other("optional.none() dereference")),
        (OptHasValue, [V::Optional(v)]) => Ok(V::Bool(v.is_some())),
        (OptOr, [V::Optional(a), b @ V::Optional(_)]) => Ok(if a.is_some() {
            V::Optional(a.clone())
        } else {
            b.clone()
        }),
        (OptOrValue, [V::Optional(a), b]) => Ok(match a {
            Some(v) => (**v).clone(),
            None => b.clone(),
        }),
        (OptUnwrap, [V::List(items)]) => {
            let mut out = Vec::new();
            for item in items.iter() {
                match item {
                    V::Optional(Some(v)) => out.push((**v).clone()),
                    V::Optional(None) => {}
                    other_value => {
                        return Err(other(format!(
                            "value {} is not optional",
                            other_value.display()
                        )));
                    }
                }
            }
            Ok(V::list(out))
        }
        (First, [V::List(items)]) => Ok(V::Optional(items.first().map(|v| Rc::new(v.clone())))),
        (Last, [V::List(items)]) => Ok(V::Optional(items.last().map(|v| Rc::new(v.clone())))),
        // ----- Kubernetes lists
        (IsSorted, [V::List(items)]) => {
            for w in items.windows(2) {
                if !is_comparer(&w[0]) {
                    return Err(no_such_overload());
                }
                if compare(&w[0], &w[1])? == Ordering::Greater {
                    return Ok(V::Bool(false));
                }
            }
            Ok(V::Bool(true))
        }
        (Sum, [V::List(items)]) => {
            let mut acc: Option<Value<'a>> = None;
            for item in items.iter() {
                acc = Some(match acc {
                    None => item.clone(),
                    Some(a) => {
                        let add = CallNode {
                            func: Add,
                            args: vec![],
                            regex: None,
                        };
                        dispatch_static(&add, &[a, item.clone()])?
                    }
                });
            }
            Ok(acc.unwrap_or(match node_sum_zero(args) {
                Some(z) => z,
                None => V::Int(0),
            }))
        }
        (Max | Min, [V::List(items)]) => {
            let mut best: Option<&Value<'a>> = None;
            for item in items.iter() {
                if !is_comparer(item) {
                    return Err(no_such_overload());
                }
                best = Some(match best {
                    None => item,
                    Some(b) => {
                        let ord = compare(b, item)?;
                        let replace = if func == Max {
                            ord == Ordering::Less
                        } else {
                            ord == Ordering::Greater
                        };
                        if replace { item } else { b }
                    }
                });
            }
            match best {
                Some(b) => Ok(b.clone()),
                None => Err(other(format!("{} called on empty list", func.name()))),
            }
        }
        (IndexOf, [V::List(items), x]) => Ok(V::Int(
            items
                .iter()
                .position(|i| matches!(equals(i, x), Ok(true)))
                .map_or(-1, |p| p as i64),
        )),
        (LastIndexOf, [V::List(items), x]) => Ok(V::Int(
            items
                .iter()
                .rposition(|i| matches!(equals(i, x), Ok(true)))
                .map_or(-1, |p| p as i64),
        )),
        (Includes, [V::List(items), x]) => {
            for (i, item) in items.iter().enumerate() {
                if i >= 48 {
                    return Err(other(
                        "'includes' function cannot be applied to lists longer than 48 values",
                    ));
                }
                if let Ok(true) = equals(item, x) {
                    return Ok(V::Bool(true));
                }
            }
            Ok(V::Bool(false))
        }
        (Includes, [target, x]) => Ok(V::Bool(matches!(equals(target, x), Ok(true)))),
        // ----- sets
        (SetsContains, [V::List(a), V::List(b)]) => Ok(V::Bool(list_contains_all(a, b))),
        (SetsEquivalent, [V::List(a), V::List(b)]) => {
            Ok(V::Bool(list_contains_all(a, b) && list_contains_all(b, a)))
        }
        (SetsIntersects, [V::List(a), V::List(b)]) => {
            Ok(V::Bool(a.iter().any(|x| {
                b.iter().any(|y| matches!(equals(y, x), Ok(true)))
            })))
        }
        // ----- ext.Lists
        (Slice, [V::List(items), V::Int(start), V::Int(end)]) => {
            if *start < 0 || *end < 0 {
                return Err(other(format!(
                    "cannot slice({start}, {end}), negative indexes not supported"
                )));
            }
            if start > end {
                return Err(other(format!(
                    "cannot slice({start}, {end}), start index must be less than or equal to end index"
                )));
            }
            if (items.len() as i64) < *end {
                return Err(other(format!(
                    "cannot slice({start}, {end}), list is length {}",
                    items.len()
                )));
            }
            Ok(V::list(items[*start as usize..*end as usize].to_vec()))
        }
        (Flatten, [V::List(items)]) => flatten(items, 1).map(V::list),
        (Flatten, [V::List(items), V::Int(depth)]) => {
            if *depth < 0 {
                return Err(other("level must be non-negative"));
            }
            flatten(items, *depth).map(V::list)
        }
        (Sort, [V::List(items)]) => sort_by_keys(items, items),
        (SortByKeys, [V::List(items), V::List(keys)]) => sort_by_keys(items, keys),
        (Range, [V::Int(n)]) => {
            ctx.charge((*n).max(0) as u64)?;
            Ok(V::list((0..(*n).max(0)).map(V::Int).collect()))
        }
        (Reverse, [V::List(items)]) => Ok(V::list(items.iter().rev().cloned().collect())),
        (Distinct, [V::List(items)]) => {
            let mut out: Vec<Value<'a>> = Vec::with_capacity(items.len());
            for item in items.iter() {
                if !out.iter().any(|o| matches!(equals(item, o), Ok(true))) {
                    out.push(item.clone());
                }
            }
            Ok(V::list(out))
        }
        (MapInsert, [V::Map(m), k, v]) => map_insert(m, &[(k.clone(), v.clone())]),
        (MapInsert, [V::Map(m), V::Map(other_map)]) => {
            let mut entries = Vec::new();
            for k in other_map.keys() {
                let v = other_map.find(&k)?.unwrap_or(V::Null);
                entries.push((k, v));
            }
            map_insert(m, &entries)
        }
        // ----- quantity
        (Quantity, [V::Str(x)]) => dra_types::Quantity::parse(x.as_str())
            .map(|q| V::Quantity(QuantityRef::Owned(Rc::new(q))))
            .map_err(|e| other(e.to_string())),
        (IsQuantity, [V::Str(x)]) => Ok(V::Bool(dra_types::Quantity::parse(x.as_str()).is_ok())),
        (Sign, [V::Quantity(q)]) => Ok(V::Int(q.get().sign() as i64)),
        (IsGreaterThan, [V::Quantity(a), V::Quantity(b)]) => {
            Ok(V::Bool(a.get().cmp_value(b.get()) == Ordering::Greater))
        }
        (IsLessThan, [V::Quantity(a), V::Quantity(b)]) => {
            Ok(V::Bool(a.get().cmp_value(b.get()) == Ordering::Less))
        }
        (CompareTo, [V::Quantity(a), V::Quantity(b)]) => {
            Ok(V::Int(ordering_int(a.get().cmp_value(b.get()))))
        }
        (AsApproximateFloat, [V::Quantity(q)]) => Ok(V::Double(q.get().as_approximate_f64())),
        (AsInteger, [V::Quantity(q)]) => q
            .get()
            .as_i64()
            .map(V::Int)
            .ok_or_else(|| other("cannot convert value to integer")),
        (IsInteger, [V::Quantity(q)]) => Ok(V::Bool(q.get().as_i64().is_some())),
        (QuantityAdd, [V::Quantity(a), V::Quantity(b)]) => {
            quantity_result(a.get().checked_add(b.get()))
        }
        (QuantityAdd, [V::Quantity(a), V::Int(i)]) => quantity_result(a.get().checked_add(
            &dra_types::Quantity::from_i64(*i, dra_types::Format::DecimalExponent),
        )),
        (QuantitySub, [V::Quantity(a), V::Quantity(b)]) => {
            quantity_result(a.get().checked_sub(b.get()))
        }
        (QuantitySub, [V::Quantity(a), V::Int(i)]) => quantity_result(a.get().checked_sub(
            &dra_types::Quantity::from_i64(*i, dra_types::Format::DecimalExponent),
        )),
        // ----- semver
        (Semver, [V::Str(x)]) => parse_semver(x.as_str(), false),
        (Semver, [V::Str(x), V::Bool(normalize)]) => parse_semver(x.as_str(), *normalize),
        (IsSemver, [V::Str(x)]) => Ok(V::Bool(parse_semver(x.as_str(), false).is_ok())),
        (IsSemver, [V::Str(x), V::Bool(normalize)]) => {
            Ok(V::Bool(parse_semver(x.as_str(), *normalize).is_ok()))
        }
        (IsGreaterThan, [V::Semver(a), V::Semver(b)]) => {
            Ok(V::Bool(a.get().cmp(b.get()) == Ordering::Greater))
        }
        (IsLessThan, [V::Semver(a), V::Semver(b)]) => {
            Ok(V::Bool(a.get().cmp(b.get()) == Ordering::Less))
        }
        (CompareTo, [V::Semver(a), V::Semver(b)]) => Ok(V::Int(ordering_int(a.get().cmp(b.get())))),
        // ----- IP and CIDR
        (Ip, [V::Str(x)]) => crate::net::parse_ip(x.as_str()).map(V::Ip).map_err(other),
        (Ip, [V::Cidr(ip, _)]) => Ok(V::Ip(*ip)),
        (IsIp, [V::Str(x)]) => Ok(V::Bool(crate::net::parse_ip(x.as_str()).is_ok())),
        (IpIsCanonical, [V::Str(x)]) => {
            let ip = crate::net::parse_ip(x.as_str()).map_err(other)?;
            Ok(V::Bool(ip.to_string() == x.as_str()))
        }
        (Family, [V::Ip(ip)]) => Ok(V::Int(if ip.is_ipv4() { 4 } else { 6 })),
        (IsUnspecified, [V::Ip(ip)]) => Ok(V::Bool(ip.is_unspecified())),
        (IsLoopback, [V::Ip(ip)]) => Ok(V::Bool(ip.is_loopback())),
        (IsLinkLocalMulticast, [V::Ip(ip)]) => Ok(V::Bool(crate::net::is_link_local_multicast(ip))),
        (IsLinkLocalUnicast, [V::Ip(ip)]) => Ok(V::Bool(crate::net::is_link_local_unicast(ip))),
        (IsGlobalUnicast, [V::Ip(ip)]) => Ok(V::Bool(crate::net::is_global_unicast(ip))),
        (Cidr, [V::Str(x)]) => crate::net::parse_cidr(x.as_str())
            .map(|(ip, bits)| V::Cidr(ip, bits))
            .map_err(|e| {
                other(format!(
                    "network address parse error during conversion from string: {e}"
                ))
            }),
        (IsCidr, [V::Str(x)]) => Ok(V::Bool(crate::net::parse_cidr(x.as_str()).is_ok())),
        (ContainsIp, [V::Cidr(net, bits), V::Ip(ip)]) => {
            Ok(V::Bool(crate::net::contains(net, *bits, ip)))
        }
        (ContainsIp, [V::Cidr(net, bits), V::Str(x)]) => {
            let ip = crate::net::parse_ip(x.as_str()).map_err(other)?;
            Ok(V::Bool(crate::net::contains(net, *bits, &ip)))
        }
        (ContainsCidr, [V::Cidr(net, bits), V::Cidr(other_net, other_bits)]) => Ok(V::Bool(
            crate::net::contains(net, *bits, other_net) && bits <= other_bits,
        )),
        (ContainsCidr, [V::Cidr(net, bits), V::Str(x)]) => {
            let (other_net, other_bits) = crate::net::parse_cidr(x.as_str()).map_err(|e| {
                other(format!(
                    "network address parse error during conversion from string: {e}"
                ))
            })?;
            Ok(V::Bool(
                crate::net::contains(net, *bits, &other_net) && *bits <= other_bits,
            ))
        }
        (PrefixLength, [V::Cidr(_, bits)]) => Ok(V::Int(*bits as i64)),
        (Masked, [V::Cidr(ip, bits)]) => Ok(V::Cidr(crate::net::mask(ip, *bits), *bits)),
        (Major, [V::Semver(v)]) => Ok(V::Int(v.get().major() as i64)),
        (Minor, [V::Semver(v)]) => Ok(V::Int(v.get().minor() as i64)),
        (Patch, [V::Semver(v)]) => Ok(V::Int(v.get().patch() as i64)),
        _ => Err(bad()),
    }
}

/// Dispatch without a context (pure helpers such as `sum`).
fn dispatch_static<'a>(node: &CallNode, args: &[Value<'a>]) -> Val<'a> {
    use Value as V;
    match (node.func, args) {
        (Func::Add, [V::Int(a), V::Int(b)]) => {
            a.checked_add(*b).map(V::Int).ok_or_else(int_overflow)
        }
        (Func::Add, [V::Uint(a), V::Uint(b)]) => {
            a.checked_add(*b).map(V::Uint).ok_or_else(uint_overflow)
        }
        (Func::Add, [V::Double(a), V::Double(b)]) => Ok(V::Double(a + b)),
        (Func::Add, [V::Duration(a), V::Duration(b)]) => duration_checked(a.0.checked_add(b.0)),
        _ => Err(no_such_overload()),
    }
}

fn node_sum_zero<'a>(_args: &[Value<'a>]) -> Option<Value<'a>> {
    None
}

fn ordering_int(o: Ordering) -> i64 {
    match o {
        Ordering::Less => -1,
        Ordering::Equal => 0,
        Ordering::Greater => 1,
    }
}

fn quantity_result<'a>(q: Option<dra_types::Quantity>) -> Val<'a> {
    q.map(|q| Value::Quantity(QuantityRef::Owned(Rc::new(q))))
        .ok_or_else(|| other("quantity arithmetic overflow"))
}

fn parse_semver<'a>(x: &str, normalize: bool) -> Val<'a> {
    let parsed = if normalize {
        dra_types::Semver::parse_tolerant(x)
    } else {
        dra_types::Semver::parse(x)
    };
    parsed
        .map(|v| Value::Semver(SemverRef::Owned(Rc::new(v))))
        .map_err(|e| other(e.to_string()))
}

fn is_zero(v: &Value<'_>) -> bool {
    match v {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Int(i) => *i == 0,
        Value::Uint(u) => *u == 0,
        Value::Double(d) => *d == 0.0,
        Value::Str(x) => x.as_str().is_empty(),
        Value::Bytes(b) => b.as_bytes().is_empty(),
        Value::List(l) => l.is_empty(),
        Value::Map(m) => m.len() == 0,
        Value::Duration(d) => d.0 == 0,
        Value::Timestamp(t) => t.seconds == 0 && t.nanos == 0,
        Value::Optional(o) => o.is_none(),
        _ => false,
    }
}

fn list_contains_all(list: &[Value<'_>], sub: &[Value<'_>]) -> bool {
    sub.iter()
        .all(|x| list.iter().any(|y| matches!(equals(y, x), Ok(true))))
}

fn flatten<'a>(items: &[Value<'a>], depth: i64) -> Result<Vec<Value<'a>>, crate::value::Err> {
    let mut out = Vec::new();
    for item in items {
        match item {
            Value::List(inner) if depth > 0 => out.extend(flatten(inner, depth - 1)?),
            other_value => out.push(other_value.clone()),
        }
    }
    Ok(out)
}

fn sort_by_keys<'a>(items: &[Value<'a>], keys: &[Value<'a>]) -> Val<'a> {
    if items.len() != keys.len() {
        return Err(other(format!(
            "@sortByAssociatedKeys() expected a list of the same size as the associated keys list, but got {} and {} elements respectively",
            items.len(),
            keys.len()
        )));
    }
    if items.is_empty() {
        return Ok(Value::list(Vec::new()));
    }
    if !is_comparer(&keys[0]) {
        return Err(other("list elements must be comparable"));
    }
    let first_type = keys[0].type_name();
    if keys.iter().any(|k| k.type_name() != first_type) {
        return Err(other("list elements must have the same type"));
    }
    let mut indices: Vec<usize> = (0..items.len()).collect();
    let mut failure = None;
    indices.sort_by(|&i, &j| match compare(&keys[i], &keys[j]) {
        Ok(o) => o,
        Err(e) => {
            failure.get_or_insert(e);
            Ordering::Equal
        }
    });
    if let Some(e) = failure {
        return Err(e);
    }
    Ok(Value::list(
        indices.into_iter().map(|i| items[i].clone()).collect(),
    ))
}

fn map_insert<'a>(m: &crate::value::MapValue<'a>, entries: &[(Value<'a>, Value<'a>)]) -> Val<'a> {
    let mut out: Vec<(Value<'a>, Value<'a>)> = Vec::new();
    for k in m.keys() {
        let v = m.find(&k)?.unwrap_or(Value::Null);
        out.push((k, v));
    }
    for (k, v) in entries {
        if out.iter().any(|(e, _)| matches!(equals(e, k), Ok(true))) {
            return Err(other(format!(
                "insert failed: key {} already exists",
                k.display()
            )));
        }
        out.push((k.clone(), v.clone()));
    }
    Ok(Value::Map(crate::value::MapValue::Owned(Rc::new(out))))
}

fn string_list<'a>(parts: Vec<String>) -> Value<'a> {
    Value::list(parts.into_iter().map(owned).collect())
}

fn join<'a>(items: &[Value<'a>], sep: &str) -> Val<'a> {
    let mut out = String::new();
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push_str(sep);
        }
        match item {
            Value::Str(x) => out.push_str(x.as_str()),
            other_value => {
                return Err(other(format!(
                    "join: invalid input: {}",
                    other_value.display()
                )));
            }
        }
    }
    Ok(owned(out))
}

/// The precompiled regex of the call, or one compiled for this evaluation. Never clone a
/// `Regex`: a clone gets a fresh matching cache, which costs microseconds.
fn regex_for<'r>(
    node: &'r CallNode,
    pattern: &str,
) -> Result<std::borrow::Cow<'r, Regex>, crate::value::Err> {
    match &node.regex {
        Some(re) => Ok(std::borrow::Cow::Borrowed(re)),
        None => compile_regex(pattern)
            .map(std::borrow::Cow::Owned)
            .map_err(|e| other(format!("Illegal regex: {e}"))),
    }
}

fn find_all<'a>(node: &CallNode, text: &str, pattern: &str, n: i64) -> Val<'a> {
    let re = regex_for(node, pattern)?;
    let limit = if n < 0 { usize::MAX } else { n as usize };
    Ok(Value::list(
        re.find_iter(text)
            .take(limit)
            .map(|m| owned(m.as_str().to_string()))
            .collect(),
    ))
}

fn index_of(text: &str, sub: &str, offset: i64) -> Result<i64, crate::value::Err> {
    if offset < 0 {
        return Err(other(format!("index out of range: {offset}")));
    }
    let runes: Vec<char> = text.chars().collect();
    let off = offset as usize;
    if sub.is_empty() {
        return Ok(if off > runes.len() {
            runes.len() as i64
        } else {
            offset
        });
    }
    let subr: Vec<char> = sub.chars().collect();
    if off >= runes.len() {
        return Ok(-1);
    }
    if subr.len() > runes.len() {
        return Ok(-1);
    }
    for i in off..=runes.len() - subr.len() {
        if runes[i..i + subr.len()] == subr[..] {
            return Ok(i as i64);
        }
    }
    Ok(-1)
}

fn last_index_of(text: &str, sub: &str, offset: i64) -> Result<i64, crate::value::Err> {
    if offset < 0 {
        return Err(other(format!("index out of range: {offset}")));
    }
    let runes: Vec<char> = text.chars().collect();
    let mut off = offset as usize;
    if sub.is_empty() {
        return Ok(if off > runes.len() {
            runes.len() as i64
        } else {
            offset
        });
    }
    let subr: Vec<char> = sub.chars().collect();
    if off >= runes.len() || subr.len() > runes.len() {
        return Ok(-1);
    }
    if off > runes.len() - subr.len() {
        off = runes.len() - subr.len();
    }
    for i in (0..=off).rev() {
        if runes[i..i + subr.len()] == subr[..] {
            return Ok(i as i64);
        }
    }
    Ok(-1)
}

fn is_go_space(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n' | '\u{0B}' | '\u{0C}' | '\r' | ' ' | '\u{85}' | '\u{A0}'
    ) || (c != '\u{85}' && c != '\u{A0}' && c.is_whitespace())
}

/// Go's `strings.Replace` (n < 0: all).
fn go_replace(text: &str, from: &str, to: &str, n: i64) -> String {
    if n == 0 || (from == to) {
        return text.to_string();
    }
    if from.is_empty() {
        // Go inserts `to` before each rune and at the end, up to n times.
        let mut out = String::new();
        let mut count = 0;
        for c in text.chars() {
            if n < 0 || count < n {
                out.push_str(to);
                count += 1;
            }
            out.push(c);
        }
        if n < 0 || count < n {
            out.push_str(to);
        }
        return out;
    }
    if n < 0 {
        text.replace(from, to)
    } else {
        text.replacen(from, to, n as usize)
    }
}

/// Go's `strings.SplitN` (n < 0: all; n == 0: empty list).
fn go_split(text: &str, sep: &str, n: i64) -> Vec<String> {
    if n == 0 {
        return Vec::new();
    }
    if sep.is_empty() {
        let chars: Vec<String> = text.chars().map(|c| c.to_string()).collect();
        if n < 0 || chars.len() as i64 <= n {
            return chars;
        }
        let n = n as usize;
        let mut out: Vec<String> = chars[..n - 1].to_vec();
        out.push(text.chars().skip(n - 1).collect());
        return out;
    }
    if n < 0 {
        text.split(sep).map(str::to_string).collect()
    } else {
        text.splitn(n as usize, sep).map(str::to_string).collect()
    }
}

fn quote(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '\u{07}' => out.push_str("\\a"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0C}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{0B}' => out.push_str("\\v"),
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            other_char => out.push(other_char),
        }
    }
    out.push('"');
    out
}

/// `"...".format([args])`: the `%s`, `%d`, `%f`, `%e`, `%x`, `%X`, `%o`, `%b` and `%%`
/// clauses of ext.Strings (with `%.Nf` precision).
fn format_string<'a>(f: &str, items: &[Value<'a>]) -> Val<'a> {
    let mut out = String::new();
    let mut chars = f.chars().peekable();
    let mut index = 0usize;
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        if chars.peek() == Some(&'%') {
            chars.next();
            out.push('%');
            continue;
        }
        let mut precision: Option<usize> = None;
        if chars.peek() == Some(&'.') {
            chars.next();
            let mut digits = String::new();
            while let Some(d) = chars.peek().copied().filter(char::is_ascii_digit) {
                digits.push(d);
                chars.next();
            }
            precision = digits.parse().ok();
        }
        let Some(verb) = chars.next() else {
            return Err(other("unexpected end of format string"));
        };
        let Some(arg) = items.get(index) else {
            return Err(other(format!("index {index} out of range")));
        };
        index += 1;
        let text = match (verb, arg) {
            ('s', v) => format_s(v)?,
            ('d', Value::Int(i)) => i.to_string(),
            ('d', Value::Uint(u)) => u.to_string(),
            ('f', Value::Double(d)) => format!("{:.*}", precision.unwrap_or(6), d),
            ('f', Value::Int(i)) => format!("{:.*}", precision.unwrap_or(6), *i as f64),
            ('f', Value::Uint(u)) => format!("{:.*}", precision.unwrap_or(6), *u as f64),
            ('e', Value::Double(d)) => format_exp(*d, precision.unwrap_or(6)),
            ('x', Value::Int(i)) => format_signed_radix(*i, 16, false),
            ('X', Value::Int(i)) => format_signed_radix(*i, 16, true),
            ('o', Value::Int(i)) => format_signed_radix(*i, 8, false),
            ('b', Value::Int(i)) => format_signed_radix(*i, 2, false),
            ('x', Value::Uint(u)) => format!("{u:x}"),
            ('X', Value::Uint(u)) => format!("{u:X}"),
            ('o', Value::Uint(u)) => format!("{u:o}"),
            ('b', Value::Uint(u)) => format!("{u:b}"),
            ('x', Value::Str(x)) => x.as_str().bytes().map(|b| format!("{b:02x}")).collect(),
            ('X', Value::Str(x)) => x.as_str().bytes().map(|b| format!("{b:02X}")).collect(),
            ('b', Value::Bool(_)) => {
                return Err(other(
                    "error during formatting: only integers and bools can be formatted as binary, was given bool",
                ));
            }
            (v, a) => {
                return Err(other(format!(
                    "error during formatting: unrecognized formatting clause or argument type for %{v} and {}",
                    a.type_name()
                )));
            }
        };
        out.push_str(&text);
    }
    if index < items.len() {
        return Err(other(format!(
            "too many arguments supplied to string.format (expected {index}, got {})",
            items.len()
        )));
    }
    Ok(owned(out))
}

fn format_signed_radix(i: i64, radix: u32, upper: bool) -> String {
    let magnitude = i.unsigned_abs();
    let body = match (radix, upper) {
        (16, false) => format!("{magnitude:x}"),
        (16, true) => format!("{magnitude:X}"),
        (8, _) => format!("{magnitude:o}"),
        _ => format!("{magnitude:b}"),
    };
    if i < 0 { format!("-{body}") } else { body }
}

fn format_exp(d: f64, precision: usize) -> String {
    let s = format!("{d:.precision$e}");
    match s.split_once('e') {
        Some((m, e)) => {
            let exp: i32 = e.parse().unwrap_or(0);
            let sign = if exp < 0 { '-' } else { '+' };
            format!("{m}e{sign}{:02}", exp.abs())
        }
        None => s,
    }
}

fn format_s(v: &Value<'_>) -> Result<String, crate::value::Err> {
    Ok(match v {
        Value::Str(x) => x.as_str().to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Int(i) => i.to_string(),
        Value::Uint(u) => u.to_string(),
        Value::Double(d) => format_go_float(*d),
        Value::Bytes(b) => String::from_utf8_lossy(b.as_bytes()).into_owned(),
        Value::Null => "null".to_string(),
        Value::Type(t) => crate::value::type_value_name(t),
        Value::Duration(d) => format_duration(*d),
        Value::Timestamp(t) => format_timestamp(*t),
        Value::List(items) => {
            let parts: Result<Vec<String>, _> = items.iter().map(format_s).collect();
            format!("[{}]", parts?.join(", "))
        }
        Value::Map(m) => {
            let mut parts = Vec::new();
            for k in m.keys() {
                let v = m.find(&k)?.unwrap_or(Value::Null);
                parts.push(format!("{}: {}", format_s(&k)?, format_s(&v)?));
            }
            parts.sort();
            format!("{{{}}}", parts.join(", "))
        }
        other_value => {
            return Err(other(format!(
                "error during formatting: string clause can only be used on strings, bools, bytes, ints, doubles, maps, lists, types, durations, and timestamps, was given {}",
                other_value.type_name()
            )));
        }
    })
}

/// Go `strconv.ParseInt(s, 10, 64)`.
fn parse_go_int(text: &str) -> Option<i64> {
    let digits = text.strip_prefix(['+', '-']).unwrap_or(text);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.strip_prefix('+').unwrap_or(text).parse().ok()
}

/// Go `strconv.ParseFloat(s, 64)` for the decimal forms and inf/nan words.
fn parse_go_float(text: &str) -> Option<f64> {
    let lower = text.to_ascii_lowercase();
    let unsigned = lower.trim_start_matches(['+', '-']);
    if matches!(unsigned, "inf" | "infinity" | "nan") {
        return lower.parse().ok();
    }
    if text.is_empty()
        || !text
            .bytes()
            .all(|b| b.is_ascii_digit() || matches!(b, b'+' | b'-' | b'.' | b'e' | b'E'))
    {
        return None;
    }
    text.parse().ok()
}

// ---------------------------------------------------------------------------------------
// Durations and timestamps

const MIN_UNIX: i64 = -62_135_596_800; // 0001-01-01T00:00:00Z
const MAX_UNIX: i64 = 253_402_300_799; // 9999-12-31T23:59:59Z

fn duration_checked<'a>(n: Option<i64>) -> Val<'a> {
    n.map(|n| Value::Duration(Duration(n)))
        .ok_or_else(|| other("duration overflow"))
}

fn timestamp_checked<'a>(seconds: i64, nanos: u32) -> Val<'a> {
    if !(MIN_UNIX..=MAX_UNIX).contains(&seconds) {
        return Err(other("timestamp overflow"));
    }
    Ok(Value::Timestamp(Timestamp { seconds, nanos }))
}

fn timestamp_add<'a>(t: Timestamp, nanos: i128) -> Val<'a> {
    let total = t.seconds as i128 * 1_000_000_000 + t.nanos as i128 + nanos;
    let seconds = total.div_euclid(1_000_000_000);
    let rem = total.rem_euclid(1_000_000_000) as u32;
    match i64::try_from(seconds) {
        Ok(s) => timestamp_checked(s, rem),
        Err(_) => Err(other("timestamp overflow")),
    }
}

/// Go `time.ParseDuration`.
pub(crate) fn parse_go_duration(text: &str) -> Option<i64> {
    let (negative, mut rest) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    if rest == "0" {
        return Some(0);
    }
    if rest.is_empty() {
        return None;
    }
    let mut total: i128 = 0;
    while !rest.is_empty() {
        let num_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        if num_end == 0 {
            return None;
        }
        let number = &rest[..num_end];
        rest = &rest[num_end..];
        let unit_end = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let unit = &rest[..unit_end];
        rest = &rest[unit_end..];
        let scale: i128 = match unit {
            "ns" => 1,
            "us" | "µs" | "μs" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            _ => return None,
        };
        let (int_part, frac_part) = number.split_once('.').unwrap_or((number, ""));
        if int_part.is_empty() && frac_part.is_empty() {
            return None;
        }
        let whole: i128 = if int_part.is_empty() {
            0
        } else {
            int_part.parse().ok()?
        };
        total += whole.checked_mul(scale)?;
        if !frac_part.is_empty() {
            let digits = &frac_part[..frac_part.len().min(18)];
            let frac: i128 = digits.parse().ok()?;
            let denom = 10i128.pow(digits.len() as u32);
            total += frac * scale / denom;
        }
        if total > i64::MAX as i128 + 1 {
            return None;
        }
    }
    let signed = if negative { -total } else { total };
    i64::try_from(signed).ok()
}

fn format_duration(d: Duration) -> String {
    let seconds = d.0 as f64 / 1e9;
    let mut s = format!("{seconds}");
    if s.contains('e') {
        s = format!("{seconds:.9}");
    }
    format!("{s}s")
}

fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m as i64 + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

fn format_timestamp(t: Timestamp) -> String {
    let days = t.seconds.div_euclid(86_400);
    let secs = t.seconds.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    let mut out = format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}",
        secs / 3600,
        (secs / 60) % 60,
        secs % 60
    );
    if t.nanos > 0 {
        let frac = format!("{:09}", t.nanos);
        out.push('.');
        out.push_str(frac.trim_end_matches('0'));
    }
    out.push('Z');
    out
}

/// RFC 3339 `YYYY-MM-DDTHH:MM:SS[.frac](Z|±HH:MM)`.
pub(crate) fn parse_rfc3339(text: &str) -> Option<(i64, u32)> {
    let b = text.as_bytes();
    if b.len() < 20 {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let part = text.get(r)?;
        if part.bytes().all(|c| c.is_ascii_digit()) {
            part.parse().ok()
        } else {
            None
        }
    };
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    if b[4] != b'-'
        || b[7] != b'-'
        || !matches!(b[10], b'T' | b't')
        || b[13] != b':'
        || b[16] != b':'
    {
        return None;
    }
    let (h, mi, s) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || s > 59 {
        return None;
    }
    let mut i = 19;
    let mut nanos: u32 = 0;
    if b.get(i) == Some(&b'.') {
        i += 1;
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if i == start || i - start > 9 {
            return None;
        }
        let frac = &text[start..i];
        nanos = frac.parse::<u32>().ok()? * 10u32.pow(9 - frac.len() as u32);
    }
    let offset = match text.get(i..)? {
        "Z" | "z" => 0,
        tz => parse_offset(tz)?,
    };
    let days = days_from_civil(y, mo as u32, d as u32);
    let (cy, cm, cd) = civil_from_days(days);
    if (cy, cm as i64, cd as i64) != (y, mo, d) {
        return None;
    }
    Some((days * 86_400 + h * 3600 + mi * 60 + s - offset, nanos))
}

fn parse_offset(tz: &str) -> Option<i64> {
    let b = tz.as_bytes();
    if b.len() != 6 || !matches!(b[0], b'+' | b'-') || b[3] != b':' {
        return None;
    }
    let h: i64 = tz.get(1..3)?.parse().ok()?;
    let m: i64 = tz.get(4..6)?.parse().ok()?;
    let sign = if b[0] == b'-' { -1 } else { 1 };
    Some(sign * (h * 3600 + m * 60))
}

/// Time zone argument: "UTC" or a fixed offset; IANA zone names need a tz database this
/// crate does not carry.
fn parse_tz(tz: &str) -> Result<i64, crate::value::Err> {
    if tz.is_empty() || tz == "UTC" {
        return Ok(0);
    }
    if let Some(off) = parse_offset(tz) {
        return Ok(off);
    }
    if let Some(off) = parse_offset(&format!("+{tz}")) {
        return Ok(off);
    }
    Err(other(format!("unknown time zone {tz}")))
}

fn time_get<'a>(field: TimeField, t: Timestamp, offset: i64) -> Val<'a> {
    let local = t.seconds + offset;
    let days = local.div_euclid(86_400);
    let secs = local.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    Ok(Value::Int(match field {
        TimeField::FullYear => y,
        TimeField::Month => m as i64 - 1,
        TimeField::DayOfYear => days - days_from_civil(y, 1, 1),
        TimeField::DayOfMonth => d as i64 - 1,
        TimeField::Date => d as i64,
        TimeField::DayOfWeek => (days + 4).rem_euclid(7),
        TimeField::Hours => secs / 3600,
        TimeField::Minutes => (secs / 60) % 60,
        TimeField::Seconds => secs % 60,
        TimeField::Milliseconds => (t.nanos / 1_000_000) as i64,
    }))
}
