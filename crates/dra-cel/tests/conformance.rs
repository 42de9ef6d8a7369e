//! Every selector of the allocator conformance cases compiles, or fails with exactly the
//! error text upstream reported; the valid ones also pass API validation (new
//! expressions, cost budget), as the cases promise.

use dra_cel::{Compiler, CompilerOptions, Environment, SELECTOR_MAX_COST};
use serde::Deserialize;

#[derive(Deserialize)]
struct File {
    expressions: Vec<Entry>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Entry {
    expression: String,
    #[serde(default)]
    compile_error: Option<String>,
}

#[test]
fn conformance_expressions_compile_like_upstream() {
    let text = include_str!("conformance_expressions.yaml");
    let file: File = serde_saphyr::from_str(text).expect("parse expressions");
    assert!(file.expressions.len() > 600);
    let stored = Compiler::default();
    let new = Compiler::new(CompilerOptions {
        environment: Environment::NewExpressions,
        ..CompilerOptions::default()
    });
    let mut failures = Vec::new();
    for entry in &file.expressions {
        let result = stored.compile(&entry.expression);
        match (&result, &entry.compile_error) {
            (Ok(_), None) => match new.compile(&entry.expression) {
                Ok(s) => {
                    if let Err(e) = s.check_cost_budget(SELECTOR_MAX_COST) {
                        failures.push(format!(
                            "{:?}: {e} ({:?})",
                            entry.expression,
                            s.cost_estimate()
                        ));
                    }
                }
                Err(e) => failures.push(format!("{:?}: new expressions: {e}", entry.expression)),
            },
            (Err(e), Some(want)) if e.to_string() == *want => {}
            (Err(e), Some(want)) => failures.push(format!(
                "{:?}:\n  got:  {:?}\n  want: {want:?}",
                entry.expression,
                e.to_string()
            )),
            (Err(e), None) => {
                failures.push(format!("{:?}: unexpected error {e}", entry.expression))
            }
            (Ok(_), Some(want)) => {
                failures.push(format!("{:?}: compiled, want {want:?}", entry.expression))
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
