use super::*;

fn device() -> DeviceInput {
    DeviceInput::new(
        "gpu.example.com",
        [
            ("model", AttributeValue::String("a100".into())),
            ("index", AttributeValue::Int(3)),
        ],
        [],
        false,
    )
}

fn assert_send_sync<T: Send + Sync>() {}

#[test]
fn public_types_are_thread_safe() {
    assert_send_sync::<Selector>();
    assert_send_sync::<Compiler>();
    assert_send_sync::<DeviceInput>();
    assert_send_sync::<CompileError>();
    assert_send_sync::<RuntimeError>();
}

#[test]
fn compiled_selectors_are_shared_across_threads() {
    let compiler = Compiler::default();
    let device = device();
    std::thread::scope(|scope| {
        for _ in 0..4 {
            scope.spawn(|| {
                let s = compiler
                    .compile_cached(r#"device.attributes["gpu.example.com"].index > 2"#)
                    .unwrap();
                assert!(s.evaluate(&device).unwrap());
            });
        }
    });
    let a = compiler.compile_cached("device.driver == 'x'").unwrap();
    let b = compiler.compile_cached("device.driver == 'x'").unwrap();
    assert!(
        Arc::ptr_eq(&a.inner, &b.inner),
        "cache returns the same program"
    );
    let e1 = compiler.compile_cached("device.").unwrap_err();
    let e2 = compiler.compile_cached("device.").unwrap_err();
    assert_eq!(e1, e2);
}

#[test]
fn compile_errors_carry_positions() {
    let compiler = Compiler::default();
    let err = compiler
        .compile("device.driver == 'a' &&\n  device.nosuch == 1")
        .unwrap_err();
    let pos = err.position().unwrap();
    assert_eq!((pos.line, pos.column), (2, 8));
    assert_eq!(pos.offset, 32);
    assert_eq!(
        err.to_string(),
        "compilation failed: ERROR: <input>:2:9: undefined field 'nosuch'\n |   device.nosuch == 1\n | ........^"
    );
    let CompileError::Invalid { issues, .. } = &err else {
        panic!("unexpected {err:?}");
    };
    assert_eq!(issues.len(), 1);
}

#[test]
fn error_prefixes_match_upstream() {
    let compiler = Compiler::default();
    let err = compiler.compile("device.driver").unwrap_err();
    let class = SelectorContext {
        owner: SelectorOwner::Class("gpu"),
        index: 1,
    };
    assert_eq!(
        class.compile_error(&err),
        "class gpu: selector #1: CEL compile error: must evaluate to bool or the unknown type, not string"
    );
    let s = compiler
        .compile(r#"device.attributes["gpu.example.com"].missing == 1"#)
        .unwrap();
    let rt = s.evaluate(&device()).unwrap_err();
    assert_eq!(rt.kind(), RuntimeErrorKind::NoSuchKey);
    let claim = SelectorContext {
        owner: SelectorOwner::Claim {
            namespace: "default",
            name: "claim-1",
        },
        index: 0,
    };
    assert_eq!(
        claim.runtime_error("gpu.example.com", "pool", "gpu-0", &rt),
        "claim default/claim-1: selector #0 on device gpu.example.com/pool/gpu-0: CEL runtime error: no such key: missing. consider using CEL optional chaining (.? followed by orValue()) or guarding the check with has() for optional fields"
    );
}

#[test]
fn runtime_cost_is_counted_and_bounded() {
    let compiler = Compiler::default();
    let s = compiler
        .compile(r#"device.attributes["gpu.example.com"].model == "a100""#)
        .unwrap();
    let (result, cost) = s.evaluate_with_cost(&device());
    assert!(result.unwrap());
    // device, .attributes, ["gpu.example.com"], .model and the comparison.
    assert_eq!(cost, 5);

    let limited = Compiler::new(CompilerOptions {
        cost_limit: 100,
        ..CompilerOptions::default()
    });
    let s = limited.compile("lists.range(50).all(x, x >= 0)").unwrap();
    let err = s.evaluate(&device()).unwrap_err();
    assert_eq!(err.kind(), RuntimeErrorKind::CostLimitExceeded);
    assert_eq!(
        err.to_string(),
        "operation cancelled: actual cost limit exceeded"
    );
    // The same expression fits the default limit.
    assert!(
        Compiler::default()
            .compile("lists.range(50).all(x, x >= 0)")
            .unwrap()
            .evaluate(&device())
            .unwrap()
    );
}

#[test]
fn cost_limit_errors_are_not_absorbed_by_logic() {
    let limited = Compiler::new(CompilerOptions {
        cost_limit: 50,
        ..CompilerOptions::default()
    });
    let s = limited
        .compile("lists.range(100).exists(x, x < 0) || true")
        .unwrap();
    assert_eq!(
        s.evaluate(&device()).unwrap_err().kind(),
        RuntimeErrorKind::CostLimitExceeded
    );
}

#[test]
fn new_expressions_enforce_the_length_limit() {
    let new = Compiler::new(CompilerOptions {
        environment: Environment::NewExpressions,
        ..CompilerOptions::default()
    });
    let long = format!("device.driver == '{}'", "x".repeat(SELECTOR_MAX_LENGTH));
    assert!(matches!(
        new.compile(&long),
        Err(CompileError::TooLong {
            limit: SELECTOR_MAX_LENGTH,
            ..
        })
    ));
    // Stored expressions (the scheduler) do not check the length.
    assert!(
        !Compiler::default()
            .compile(&long)
            .unwrap()
            .evaluate(&device())
            .unwrap()
    );
}

#[test]
fn cost_budget_check() {
    let compiler = Compiler::default();
    let s = compiler
        .compile("device.driver == 'gpu.example.com'")
        .unwrap();
    assert_eq!(s.cost_estimate(), CostEstimate { min: 3, max: 4 });
    assert!(s.check_cost_budget(SELECTOR_MAX_COST).is_ok());
    let err = s.check_cost_budget(3).unwrap_err();
    assert_eq!(err.to_string(), "too complex, exceeds cost limit");
    assert_eq!(err.estimated_max, 4);
}

#[test]
fn map_macro_accumulates_in_place() {
    // Quadratic copying would make this take minutes; the cost limit stops it first anyway.
    let compiler = Compiler::default();
    let s = compiler
        .compile("lists.range(60000).map(x, x).size() == 60000")
        .unwrap();
    assert!(s.evaluate(&device()).unwrap());
    let s = compiler
        .compile("lists.range(200000).map(x, x).size() > 0")
        .unwrap();
    assert_eq!(
        s.evaluate(&device()).unwrap_err().kind(),
        RuntimeErrorKind::CostLimitExceeded
    );
}

/// Compilers of one environment share its declarations, made once whoever asks first (a
/// thread preparing them ahead, or the first compiler); compilers of an environment with
/// other declarations (without `includes`) get their own, and compile as before.
#[test]
fn compilers_share_their_environments_declarations() {
    let stored = CompilerOptions::default();
    let new = CompilerOptions {
        environment: Environment::NewExpressions,
        ..CompilerOptions::default()
    };
    std::thread::scope(|scope| {
        scope.spawn(|| Compiler::prepare_environment(&stored));
        scope.spawn(|| Compiler::prepare_environment(&new));
    });
    let (a, b, c) = (
        Compiler::new(stored),
        Compiler::default(),
        Compiler::new(new),
    );
    assert!(std::ptr::eq(a.decls, b.decls));
    assert!(!std::ptr::eq(a.decls, c.decls));
    let includes = "device.attributes['gpu.example.com'].model.includes('a100')";
    assert!(a.decls.lookup("includes").is_some());
    assert!(c.decls.lookup("includes").is_none());
    assert!(c.compile(includes).is_err());
    let selector = b
        .compile("device.attributes['gpu.example.com'].index == 3")
        .expect("compiles");
    assert!(selector.evaluate(&device()).expect("evaluates"));
}
