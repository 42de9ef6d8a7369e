//! Function declarations of the Kubernetes CEL base environment as the DRA selectors see
//! it: name, overload ids, member or global, argument and result types. The checker
//! resolves calls against these; the planner maps the function to its implementation.

use std::sync::OnceLock;

use dra_types::hashing::WordHashMap;

use crate::types::{CIDR_TYPE, IP_TYPE, QUANTITY_TYPE, SEMVER_TYPE, Type};

#[derive(Clone, Debug)]
pub(crate) struct Overload {
    pub id: &'static str,
    pub member: bool,
    pub args: Vec<Type>,
    pub result: Type,
}

#[derive(Debug, Default)]
pub(crate) struct Declarations {
    functions: WordHashMap<&'static str, Vec<Overload>>,
}

/// Which optional parts of the environment are declared.
#[derive(Clone, Copy, Debug)]
pub(crate) struct DeclOptions {
    pub includes: bool,
}

fn a() -> Type {
    Type::param("A")
}
fn b() -> Type {
    Type::param("B")
}
fn quantity() -> Type {
    Type::Struct(QUANTITY_TYPE)
}
fn semver() -> Type {
    Type::Struct(SEMVER_TYPE)
}

impl Declarations {
    /// The declarations of `options`, made once per process and shared by every compiler
    /// (they depend on nothing else): a compiler costs a lookup instead of some 250
    /// declarations, and a thread with time to spare can make them before anyone compiles
    /// ([`crate::Compiler::prepare_environment`]). A thread asking while another makes
    /// them waits for those.
    pub(crate) fn shared(options: DeclOptions) -> &'static Declarations {
        static WITH_INCLUDES: OnceLock<Declarations> = OnceLock::new();
        static WITHOUT_INCLUDES: OnceLock<Declarations> = OnceLock::new();
        let made = if options.includes {
            &WITH_INCLUDES
        } else {
            &WITHOUT_INCLUDES
        };
        made.get_or_init(|| Declarations::new(options))
    }

    pub(crate) fn lookup(&self, name: &str) -> Option<&[Overload]> {
        self.functions.get(name).map(Vec::as_slice)
    }

    fn add(
        &mut self,
        name: &'static str,
        id: &'static str,
        member: bool,
        args: Vec<Type>,
        result: Type,
    ) {
        self.functions.entry(name).or_default().push(Overload {
            id,
            member,
            args,
            result,
        });
    }

    fn global(&mut self, name: &'static str, id: &'static str, args: Vec<Type>, result: Type) {
        self.add(name, id, false, args, result);
    }

    fn member(&mut self, name: &'static str, id: &'static str, args: Vec<Type>, result: Type) {
        self.add(name, id, true, args, result);
    }

    pub(crate) fn new(options: DeclOptions) -> Declarations {
        use Type::*;
        let mut d = Declarations::default();
        d.global("_?_:_", "conditional", vec![Bool, a(), a()], a());
        d.global("_&&_", "logical_and", vec![Bool, Bool], Bool);
        d.global("_||_", "logical_or", vec![Bool, Bool], Bool);
        d.global("!_", "logical_not", vec![Bool], Bool);
        d.global(
            "@not_strictly_false",
            "not_strictly_false",
            vec![Bool],
            Bool,
        );
        d.global("_==_", "equals", vec![a(), a()], Bool);
        d.global("_!=_", "not_equals", vec![a(), a()], Bool);

        d.global("_+_", "add_bytes", vec![Bytes, Bytes], Bytes);
        d.global("_+_", "add_double", vec![Double, Double], Double);
        d.global(
            "_+_",
            "add_duration_duration",
            vec![Duration, Duration],
            Duration,
        );
        d.global(
            "_+_",
            "add_duration_timestamp",
            vec![Duration, Timestamp],
            Timestamp,
        );
        d.global(
            "_+_",
            "add_timestamp_duration",
            vec![Timestamp, Duration],
            Timestamp,
        );
        d.global("_+_", "add_int64", vec![Int, Int], Int);
        d.global(
            "_+_",
            "add_list",
            vec![Type::list(a()), Type::list(a())],
            Type::list(a()),
        );
        d.global("_+_", "add_string", vec![String, String], String);
        d.global("_+_", "add_uint64", vec![Uint, Uint], Uint);

        d.global("_-_", "subtract_double", vec![Double, Double], Double);
        d.global(
            "_-_",
            "subtract_duration_duration",
            vec![Duration, Duration],
            Duration,
        );
        d.global("_-_", "subtract_int64", vec![Int, Int], Int);
        d.global(
            "_-_",
            "subtract_timestamp_duration",
            vec![Timestamp, Duration],
            Timestamp,
        );
        d.global(
            "_-_",
            "subtract_timestamp_timestamp",
            vec![Timestamp, Timestamp],
            Duration,
        );
        d.global("_-_", "subtract_uint64", vec![Uint, Uint], Uint);

        for (name, prefix) in [("_*_", "multiply"), ("_/_", "divide")] {
            let ids: [&'static str; 3] = if prefix == "multiply" {
                ["multiply_double", "multiply_int64", "multiply_uint64"]
            } else {
                ["divide_double", "divide_int64", "divide_uint64"]
            };
            d.global(name, ids[0], vec![Double, Double], Double);
            d.global(name, ids[1], vec![Int, Int], Int);
            d.global(name, ids[2], vec![Uint, Uint], Uint);
        }
        d.global("_%_", "modulo_int64", vec![Int, Int], Int);
        d.global("_%_", "modulo_uint64", vec![Uint, Uint], Uint);
        d.global("-_", "negate_double", vec![Double], Double);
        d.global("-_", "negate_int64", vec![Int], Int);

        let comparisons: [(&'static str, [&'static str; 14]); 4] = [
            (
                "_<_",
                [
                    "less_bool",
                    "less_int64",
                    "less_int64_double",
                    "less_int64_uint64",
                    "less_uint64",
                    "less_uint64_double",
                    "less_uint64_int64",
                    "less_double",
                    "less_double_int64",
                    "less_double_uint64",
                    "less_string",
                    "less_bytes",
                    "less_timestamp",
                    "less_duration",
                ],
            ),
            (
                "_<=_",
                [
                    "less_equals_bool",
                    "less_equals_int64",
                    "less_equals_int64_double",
                    "less_equals_int64_uint64",
                    "less_equals_uint64",
                    "less_equals_uint64_double",
                    "less_equals_uint64_int64",
                    "less_equals_double",
                    "less_equals_double_int64",
                    "less_equals_double_uint64",
                    "less_equals_string",
                    "less_equals_bytes",
                    "less_equals_timestamp",
                    "less_equals_duration",
                ],
            ),
            (
                "_>_",
                [
                    "greater_bool",
                    "greater_int64",
                    "greater_int64_double",
                    "greater_int64_uint64",
                    "greater_uint64",
                    "greater_uint64_double",
                    "greater_uint64_int64",
                    "greater_double",
                    "greater_double_int64",
                    "greater_double_uint64",
                    "greater_string",
                    "greater_bytes",
                    "greater_timestamp",
                    "greater_duration",
                ],
            ),
            (
                "_>=_",
                [
                    "greater_equals_bool",
                    "greater_equals_int64",
                    "greater_equals_int64_double",
                    "greater_equals_int64_uint64",
                    "greater_equals_uint64",
                    "greater_equals_uint64_double",
                    "greater_equals_uint64_int64",
                    "greater_equals_double",
                    "greater_equals_double_int64",
                    "greater_equals_double_uint64",
                    "greater_equals_string",
                    "greater_equals_bytes",
                    "greater_equals_timestamp",
                    "greater_equals_duration",
                ],
            ),
        ];
        let pairs = [
            (Bool, Bool),
            (Int, Int),
            (Int, Double),
            (Int, Uint),
            (Uint, Uint),
            (Uint, Double),
            (Uint, Int),
            (Double, Double),
            (Double, Int),
            (Double, Uint),
            (String, String),
            (Bytes, Bytes),
            (Timestamp, Timestamp),
            (Duration, Duration),
        ];
        for (name, ids) in comparisons {
            for (id, (l, r)) in ids.iter().zip(pairs.iter()) {
                d.global(name, id, vec![l.clone(), r.clone()], Bool);
            }
        }

        d.global("_[_]", "index_list", vec![Type::list(a()), Int], a());
        d.global("_[_]", "index_map", vec![Type::map(a(), b()), a()], b());
        d.global("@in", "in_list", vec![a(), Type::list(a())], Bool);
        d.global("@in", "in_map", vec![a(), Type::map(a(), b())], Bool);

        for (t, g, m) in [
            (Bytes, "size_bytes", "bytes_size"),
            (Type::list(a()), "size_list", "list_size"),
            (Type::map(a(), b()), "size_map", "map_size"),
            (String, "size_string", "string_size"),
        ] {
            d.global("size", g, vec![t.clone()], Int);
            d.member("size", m, vec![t], Int);
        }

        d.global("type", "type", vec![a()], Meta(Some(Box::new(a()))));
        d.global("bool", "bool_to_bool", vec![Bool], Bool);
        d.global("bool", "string_to_bool", vec![String], Bool);
        d.global("bytes", "bytes_to_bytes", vec![Bytes], Bytes);
        d.global("bytes", "string_to_bytes", vec![String], Bytes);
        d.global("double", "double_to_double", vec![Double], Double);
        d.global("double", "int64_to_double", vec![Int], Double);
        d.global("double", "string_to_double", vec![String], Double);
        d.global("double", "uint64_to_double", vec![Uint], Double);
        d.global("duration", "duration_to_duration", vec![Duration], Duration);
        d.global("duration", "string_to_duration", vec![String], Duration);
        d.global("dyn", "to_dyn", vec![a()], Dyn);
        d.global("int", "int64_to_int64", vec![Int], Int);
        d.global("int", "double_to_int64", vec![Double], Int);
        d.global("int", "duration_to_int64", vec![Duration], Int);
        d.global("int", "string_to_int64", vec![String], Int);
        d.global("int", "timestamp_to_int64", vec![Timestamp], Int);
        d.global("int", "uint64_to_int64", vec![Uint], Int);
        d.global("string", "string_to_string", vec![String], String);
        d.global("string", "bool_to_string", vec![Bool], String);
        d.global("string", "bytes_to_string", vec![Bytes], String);
        d.global("string", "double_to_string", vec![Double], String);
        d.global("string", "duration_to_string", vec![Duration], String);
        d.global("string", "int64_to_string", vec![Int], String);
        d.global("string", "timestamp_to_string", vec![Timestamp], String);
        d.global("string", "uint64_to_string", vec![Uint], String);
        d.global("timestamp", "string_to_timestamp", vec![String], Timestamp);
        d.global("timestamp", "int64_to_timestamp", vec![Int], Timestamp);
        d.global(
            "timestamp",
            "timestamp_to_timestamp",
            vec![Timestamp],
            Timestamp,
        );
        d.global("uint", "uint64_to_uint64", vec![Uint], Uint);
        d.global("uint", "double_to_uint64", vec![Double], Uint);
        d.global("uint", "int64_to_uint64", vec![Int], Uint);
        d.global("uint", "string_to_uint64", vec![String], Uint);

        d.global("matches", "matches", vec![String, String], Bool);
        d.member("matches", "matches_string", vec![String, String], Bool);
        d.member("contains", "contains_string", vec![String, String], Bool);
        d.member("endsWith", "ends_with_string", vec![String, String], Bool);
        d.member(
            "startsWith",
            "starts_with_string",
            vec![String, String],
            Bool,
        );

        // Duration and timestamp accessors (UTC, or a fixed offset / IANA zone argument).
        for (name, ts, ts_tz, dur) in [
            (
                "getFullYear",
                "timestamp_to_year",
                "timestamp_to_year_with_tz",
                None,
            ),
            (
                "getMonth",
                "timestamp_to_month",
                "timestamp_to_month_with_tz",
                None,
            ),
            (
                "getDayOfYear",
                "timestamp_to_day_of_year",
                "timestamp_to_day_of_year_with_tz",
                None,
            ),
            (
                "getDayOfMonth",
                "timestamp_to_day_of_month_1_based",
                "timestamp_to_day_of_month_1_based_with_tz",
                None,
            ),
            (
                "getDate",
                "timestamp_to_day_of_month_1_based",
                "timestamp_to_day_of_month_1_based_with_tz",
                None,
            ),
            (
                "getDayOfWeek",
                "timestamp_to_day_of_week",
                "timestamp_to_day_of_week_with_tz",
                None,
            ),
            (
                "getHours",
                "timestamp_to_hours",
                "timestamp_to_hours_with_tz",
                Some("duration_to_hours"),
            ),
            (
                "getMinutes",
                "timestamp_to_minutes",
                "timestamp_to_minutes_with_tz",
                Some("duration_to_minutes"),
            ),
            (
                "getSeconds",
                "timestamp_to_seconds",
                "timestamp_to_seconds_with_tz",
                Some("duration_to_seconds"),
            ),
            (
                "getMilliseconds",
                "timestamp_to_milliseconds",
                "timestamp_to_milliseconds_with_tz",
                Some("duration_to_milliseconds"),
            ),
        ] {
            // getDayOfMonth is 0-based upstream; getDate is 1-based. Ids keep them apart.
            let (ts, ts_tz) = if name == "getDayOfMonth" {
                (
                    "timestamp_to_day_of_month",
                    "timestamp_to_day_of_month_with_tz",
                )
            } else {
                (ts, ts_tz)
            };
            d.member(name, ts, vec![Timestamp], Int);
            d.member(name, ts_tz, vec![Timestamp, String], Int);
            if let Some(dur) = dur {
                d.member(name, dur, vec![Duration], Int);
            }
        }

        // Optional types.
        let v = || Type::param("V");
        let k = || Type::param("K");
        d.global("optional.of", "optional_of", vec![v()], Type::optional(v()));
        d.global(
            "optional.ofNonZeroValue",
            "optional_ofNonZeroValue",
            vec![v()],
            Type::optional(v()),
        );
        d.global(
            "optional.none",
            "optional_none",
            vec![],
            Type::optional(v()),
        );
        d.member("value", "optional_value", vec![Type::optional(v())], v());
        d.member(
            "hasValue",
            "optional_hasValue",
            vec![Type::optional(v())],
            Bool,
        );
        d.member(
            "or",
            "optional_or_optional",
            vec![Type::optional(v()), Type::optional(v())],
            Type::optional(v()),
        );
        d.member(
            "orValue",
            "optional_orValue_value",
            vec![Type::optional(v()), v()],
            v(),
        );
        d.global(
            "_[?_]",
            "list_optindex_optional_int",
            vec![Type::list(v()), Int],
            Type::optional(v()),
        );
        d.global(
            "_[?_]",
            "optional_list_optindex_optional_int",
            vec![Type::optional(Type::list(v())), Int],
            Type::optional(v()),
        );
        d.global(
            "_[?_]",
            "map_optindex_optional_value",
            vec![Type::map(k(), v()), k()],
            Type::optional(v()),
        );
        d.global(
            "_[?_]",
            "optional_map_optindex_optional_value",
            vec![Type::optional(Type::map(k(), v())), k()],
            Type::optional(v()),
        );
        d.global(
            "_[_]",
            "optional_list_index_int",
            vec![Type::optional(Type::list(v())), Int],
            Type::optional(v()),
        );
        d.global(
            "_[_]",
            "optional_map_index_value",
            vec![Type::optional(Type::map(k(), v())), k()],
            Type::optional(v()),
        );
        d.member(
            "last",
            "list_last",
            vec![Type::list(v())],
            Type::optional(v()),
        );
        d.member(
            "first",
            "list_first",
            vec![Type::list(v())],
            Type::optional(v()),
        );
        d.global(
            "optional.unwrap",
            "optional_unwrap",
            vec![Type::list(Type::optional(v()))],
            Type::list(v()),
        );
        d.member(
            "unwrapOpt",
            "optional_unwrapOpt",
            vec![Type::list(Type::optional(v()))],
            Type::list(v()),
        );

        // ext.Strings version 2.
        d.member("charAt", "string_char_at_int", vec![String, Int], String);
        d.member(
            "indexOf",
            "string_index_of_string",
            vec![String, String],
            Int,
        );
        d.member(
            "indexOf",
            "string_index_of_string_int",
            vec![String, String, Int],
            Int,
        );
        d.member(
            "lastIndexOf",
            "string_last_index_of_string",
            vec![String, String],
            Int,
        );
        d.member(
            "lastIndexOf",
            "string_last_index_of_string_int",
            vec![String, String, Int],
            Int,
        );
        d.member("lowerAscii", "string_lower_ascii", vec![String], String);
        d.member(
            "replace",
            "string_replace_string_string",
            vec![String, String, String],
            String,
        );
        d.member(
            "replace",
            "string_replace_string_string_int",
            vec![String, String, String, Int],
            String,
        );
        d.member(
            "split",
            "string_split_string",
            vec![String, String],
            Type::list(String),
        );
        d.member(
            "split",
            "string_split_string_int",
            vec![String, String, Int],
            Type::list(String),
        );
        d.member(
            "substring",
            "string_substring_int",
            vec![String, Int],
            String,
        );
        d.member(
            "substring",
            "string_substring_int_int",
            vec![String, Int, Int],
            String,
        );
        d.member("trim", "string_trim", vec![String], String);
        d.member("upperAscii", "string_upper_ascii", vec![String], String);
        d.member(
            "format",
            "string_format",
            vec![String, Type::list(Dyn)],
            String,
        );
        d.global("strings.quote", "strings_quote", vec![String], String);
        d.member("join", "list_join", vec![Type::list(String)], String);
        d.member(
            "join",
            "list_join_string",
            vec![Type::list(String), String],
            String,
        );

        // Kubernetes regex library.
        d.member("find", "string_find_string", vec![String, String], String);
        d.member(
            "findAll",
            "string_find_all_string",
            vec![String, String],
            Type::list(String),
        );
        d.member(
            "findAll",
            "string_find_all_string_int",
            vec![String, String, Int],
            Type::list(String),
        );

        // Kubernetes lists library.
        let comparable = [
            ("int", Int),
            ("uint", Uint),
            ("double", Double),
            ("bool", Bool),
            ("duration", Duration),
            ("timestamp", Timestamp),
            ("string", String),
            ("bytes", Bytes),
        ];
        let leak = |s: std::string::String| -> &'static str { Box::leak(s.into_boxed_str()) };
        for (name, t) in &comparable {
            d.member(
                "isSorted",
                leak(format!("list_{name}_is_sorted_bool")),
                vec![Type::list(t.clone())],
                Bool,
            );
            d.member(
                "max",
                leak(format!("list_{name}_max_{name}")),
                vec![Type::list(t.clone())],
                t.clone(),
            );
            d.member(
                "min",
                leak(format!("list_{name}_min_{name}")),
                vec![Type::list(t.clone())],
                t.clone(),
            );
        }
        for (name, t) in [
            ("int", Int),
            ("uint", Uint),
            ("double", Double),
            ("duration", Duration),
        ] {
            d.member(
                "sum",
                leak(format!("list_{name}_sum_{name}")),
                vec![Type::list(t.clone())],
                t,
            );
        }
        d.member(
            "indexOf",
            "list_a_index_of_int",
            vec![Type::list(a()), a()],
            Int,
        );
        d.member(
            "lastIndexOf",
            "list_a_last_index_of_int",
            vec![Type::list(a()), a()],
            Int,
        );
        if options.includes {
            d.member("includes", "dra_includes_dyn_dyn", vec![Dyn, Dyn], Bool);
        }

        // ext.Sets.
        d.global(
            "sets.contains",
            "list_sets_contains_list",
            vec![Type::list(a()), Type::list(a())],
            Bool,
        );
        d.global(
            "sets.equivalent",
            "list_sets_equivalent_list",
            vec![Type::list(a()), Type::list(a())],
            Bool,
        );
        d.global(
            "sets.intersects",
            "list_sets_intersects_list",
            vec![Type::list(a()), Type::list(a())],
            Bool,
        );

        // ext.Lists version 3.
        d.member(
            "slice",
            "list_slice",
            vec![Type::list(a()), Int, Int],
            Type::list(a()),
        );
        d.member(
            "flatten",
            "list_flatten",
            vec![Type::list(Type::list(a()))],
            Type::list(a()),
        );
        d.member(
            "flatten",
            "list_flatten_int",
            vec![Type::list(Dyn), Int],
            Type::list(Dyn),
        );
        for (name, t) in &comparable {
            d.member(
                "sort",
                leak(format!("list_{name}_sort")),
                vec![Type::list(t.clone())],
                Type::list(t.clone()),
            );
            d.member(
                "@sortByAssociatedKeys",
                leak(format!("list_{name}_sortByAssociatedKeys")),
                vec![Type::list(a()), Type::list(t.clone())],
                Type::list(a()),
            );
        }
        d.global("lists.range", "lists_range", vec![Int], Type::list(Int));
        d.member(
            "reverse",
            "list_reverse",
            vec![Type::list(a())],
            Type::list(a()),
        );
        d.member(
            "distinct",
            "list_distinct",
            vec![Type::list(a())],
            Type::list(a()),
        );

        // Two-variable comprehension helper.
        d.global(
            "cel.@mapInsert",
            "@mapInsert_map_key_value",
            vec![Type::map(k(), v()), k(), v()],
            Type::map(k(), v()),
        );
        d.global(
            "cel.@mapInsert",
            "@mapInsert_map_map",
            vec![Type::map(k(), v()), Type::map(k(), v())],
            Type::map(k(), v()),
        );

        // Kubernetes quantity library.
        d.global("quantity", "string_to_quantity", vec![String], quantity());
        d.global("isQuantity", "is_quantity_string", vec![String], Bool);
        d.global("sign", "quantity_sign", vec![quantity()], Int);
        d.member(
            "isGreaterThan",
            "quantity_is_greater_than",
            vec![quantity(), quantity()],
            Bool,
        );
        d.member(
            "isLessThan",
            "quantity_is_less_than",
            vec![quantity(), quantity()],
            Bool,
        );
        d.member(
            "compareTo",
            "quantity_compare_to",
            vec![quantity(), quantity()],
            Int,
        );
        d.member(
            "asApproximateFloat",
            "quantity_get_float",
            vec![quantity()],
            Double,
        );
        d.member("asInteger", "quantity_get_int", vec![quantity()], Int);
        d.member("isInteger", "quantity_is_integer", vec![quantity()], Bool);
        d.member(
            "add",
            "quantity_add",
            vec![quantity(), quantity()],
            quantity(),
        );
        d.member("add", "quantity_add_int", vec![quantity(), Int], quantity());
        d.member(
            "sub",
            "quantity_sub",
            vec![quantity(), quantity()],
            quantity(),
        );
        d.member("sub", "quantity_sub_int", vec![quantity(), Int], quantity());

        // Kubernetes IP and CIDR libraries.
        let ip = || Type::Struct(IP_TYPE);
        let cidr = || Type::Struct(CIDR_TYPE);
        d.global("ip", "string_to_ip", vec![String], ip());
        d.member("ip", "cidr_ip", vec![cidr()], ip());
        d.global("isIP", "is_ip", vec![String], Bool);
        d.global("ip.isCanonical", "ip_is_canonical", vec![String], Bool);
        d.member("family", "ip_family", vec![ip()], Int);
        d.member("isUnspecified", "ip_is_unspecified", vec![ip()], Bool);
        d.member("isLoopback", "ip_is_loopback", vec![ip()], Bool);
        d.member(
            "isLinkLocalMulticast",
            "ip_is_link_local_multicast",
            vec![ip()],
            Bool,
        );
        d.member(
            "isLinkLocalUnicast",
            "ip_is_link_local_unicast",
            vec![ip()],
            Bool,
        );
        d.member("isGlobalUnicast", "ip_is_global_unicast", vec![ip()], Bool);
        d.global("string", "ip_to_string", vec![ip()], String);
        d.global("cidr", "string_to_cidr", vec![String], cidr());
        d.global("isCIDR", "is_cidr", vec![String], Bool);
        d.member(
            "containsIP",
            "cidr_contains_ip_string",
            vec![cidr(), String],
            Bool,
        );
        d.member(
            "containsIP",
            "cidr_contains_ip_ip",
            vec![cidr(), ip()],
            Bool,
        );
        d.member(
            "containsCIDR",
            "cidr_contains_cidr_string",
            vec![cidr(), String],
            Bool,
        );
        d.member(
            "containsCIDR",
            "cidr_contains_cidr",
            vec![cidr(), cidr()],
            Bool,
        );
        d.member("prefixLength", "cidr_prefix_length", vec![cidr()], Int);
        d.member("masked", "cidr_masked", vec![cidr()], cidr());
        d.global("string", "cidr_to_string", vec![cidr()], String);

        // Kubernetes semver library version 1.
        d.global("semver", "string_to_semver", vec![String], semver());
        d.global(
            "semver",
            "string_bool_to_semver",
            vec![String, Bool],
            semver(),
        );
        d.global("isSemver", "is_semver_string", vec![String], Bool);
        d.global(
            "isSemver",
            "is_semver_string_bool",
            vec![String, Bool],
            Bool,
        );
        d.member(
            "isGreaterThan",
            "semver_is_greater_than",
            vec![semver(), semver()],
            Bool,
        );
        d.member(
            "isLessThan",
            "semver_is_less_than",
            vec![semver(), semver()],
            Bool,
        );
        d.member(
            "compareTo",
            "semver_compare_to",
            vec![semver(), semver()],
            Int,
        );
        d.member("major", "semver_major", vec![semver()], Int);
        d.member("minor", "semver_minor", vec![semver()], Int);
        d.member("patch", "semver_patch", vec![semver()], Int);
        d
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::functions::{Func, resolve};

    /// Every declared function has an implementation (operators with dedicated nodes in
    /// the planner excepted).
    #[test]
    fn every_declared_function_is_implemented() {
        let planner_nodes = [
            "_&&_",
            "_||_",
            "!_",
            "@not_strictly_false",
            "_?_:_",
            "_==_",
            "_!=_",
            "_[_]",
            "_[?_]",
        ];
        let decls = Declarations::new(DeclOptions { includes: true });
        let mut names: Vec<&&str> = decls.functions.keys().collect();
        names.sort();
        for name in names {
            if planner_nodes.contains(name) {
                continue;
            }
            assert_ne!(
                resolve(name, false, &[]),
                Func::Unknown,
                "{name} has no implementation"
            );
        }
    }
}
