//! No input string makes compile or evaluate panic or overflow the stack: random and
//! garbage expressions (proptest), and deep nesting of every recursive construct.

use dra_cel::{AttributeValue, Compiler, DeviceInput};
use proptest::prelude::*;

fn device() -> DeviceInput {
    DeviceInput::new(
        "gpu.example.com",
        [
            ("model", AttributeValue::String("a100".into())),
            ("index", AttributeValue::Int(3)),
            ("v", AttributeValue::Version("1.2.3".into())),
            ("l", AttributeValue::IntList(vec![1, 2, 3])),
        ],
        [("memory", "80Gi".parse().expect("quantity"))],
        false,
    )
}

fn check(compiler: &Compiler, device: &DeviceInput, expr: &str) {
    if let Ok(selector) = compiler.compile(expr) {
        let _ = selector.evaluate(device);
        let _ = selector.cost_estimate();
    }
}

const TOKENS: &[&str] = &[
    "device",
    ".",
    "attributes",
    "capacity",
    "driver",
    "['gpu.example.com']",
    "model",
    "index",
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    ",",
    ":",
    "?",
    "!",
    "-",
    "+",
    "*",
    "/",
    "%",
    "==",
    "!=",
    "<",
    "<=",
    ">",
    ">=",
    "&&",
    "||",
    "in",
    "1",
    "0",
    "-1",
    "1u",
    "2.5",
    "'a'",
    "\"b\"",
    "b'c'",
    "true",
    "false",
    "null",
    "x",
    "y",
    "all",
    "exists",
    "exists_one",
    "map",
    "filter",
    "has",
    "cel",
    "bind",
    "size",
    "quantity",
    "semver",
    "('1Gi')",
    "('1.2.3')",
    "isGreaterThan",
    "compareTo",
    "matches",
    "'^a'",
    "optional",
    "of",
    "none",
    "orValue",
    "?.",
    "[?",
    "dyn",
    "int",
    "string",
    "lists",
    "range",
    "sets",
    "contains",
    "includes",
    "sort",
    "sortBy",
    " ",
    "9223372036854775807",
    "`",
    "'",
    "\\",
    "\n",
    "//",
    "transformList",
    "format",
    "'%s'",
];

fn token_expr() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(TOKENS), 0..40).prop_map(|t| t.concat())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn random_token_sequences_never_panic(expr in token_expr()) {
        let compiler = Compiler::default();
        check(&compiler, &device(), &expr);
    }

    #[test]
    fn arbitrary_strings_never_panic(expr in "\\PC{0,80}") {
        let compiler = Compiler::default();
        check(&compiler, &device(), &expr);
    }
}

#[test]
fn deep_nesting_is_an_error_not_a_stack_overflow() {
    let compiler = Compiler::default();
    let device = device();
    for depth in [10, 100, 249, 250, 251, 1000, 20_000] {
        let cases = [
            format!("{}true{}", "(".repeat(depth), ")".repeat(depth)),
            format!("{}1{} == [1]", "[".repeat(depth), "]".repeat(depth)),
            format!("{}true", "!".repeat(depth)),
            format!("{}1 == 1", "-".repeat(depth)),
            format!("{}1{} == 1", "dyn(".repeat(depth), ")".repeat(depth)),
            format!("{}1{}", "{1: ".repeat(depth), "}".repeat(depth)),
            format!("device{} == 1", ".a".repeat(depth)),
            format!("device{} == 1", "['a']".repeat(depth)),
            format!("1{} == 1", " + 1".repeat(depth)),
            format!("1{} == 1", " * 1".repeat(depth)),
            format!("1{}", " < 1".repeat(depth)),
            format!("true{}", " && true".repeat(depth)),
            format!("true{}", " || false".repeat(depth)),
            format!(
                "{}true{}",
                "true ? (".repeat(depth),
                ") : false".repeat(depth)
            ),
            format!("{}true{}", "[1].all(x, ".repeat(depth), ")".repeat(depth)),
            format!(
                "{}true{}",
                "cel.bind(x, 1, ".repeat(depth),
                ")".repeat(depth)
            ),
        ];
        for expr in &cases {
            check(&compiler, &device, expr);
        }
    }
}

#[test]
fn nesting_below_the_limit_compiles() {
    let compiler = Compiler::default();
    let expr = format!("{}true{}", "(".repeat(200), ")".repeat(200));
    assert!(
        compiler
            .compile(&expr)
            .unwrap()
            .evaluate(&device())
            .unwrap()
    );
    let expr = format!("{}true{}", "[1].all(x, ".repeat(40), ")".repeat(40));
    assert!(
        compiler
            .compile(&expr)
            .unwrap()
            .evaluate(&device())
            .unwrap()
    );
    let expr = format!("true{}", " && true".repeat(5000));
    assert!(
        compiler
            .compile(&expr)
            .unwrap()
            .evaluate(&device())
            .unwrap()
    );
}

#[test]
fn too_deep_nesting_reports_the_limit() {
    let compiler = Compiler::default();
    let expr = format!("{}true{}", "(".repeat(300), ")".repeat(300));
    let err = compiler.compile(&expr).unwrap_err();
    assert!(
        err.to_string()
            .contains("expression recursion limit exceeded: 250"),
        "{err}"
    );
}
