use serde::Deserialize;
#[derive(Deserialize)]
struct Case { name: String, expr: String, #[serde(default)] expect: Option<bool>, #[serde(default)] err: Option<bool> }
#[test]
fn spec() {
    let text = std::fs::read_to_string("/tmp/spec/cases.json").unwrap();
    let cases: Vec<Case> = serde_saphyr::from_str(&text).unwrap();
    let c = dra_cel::Compiler::default();
    let d = dra_cel::DeviceInput::new("d", [], [], false);
    let mut bad = 0;
    for case in &cases {
        let expr = if case.err.is_some() { format!("dyn({}) == dyn(1)", case.expr) } else { case.expr.clone() };
        let r = c.compile(&expr);
        let msg = match (&r, case.expect, case.err) {
            (Err(e), _, _) => Some(format!("COMPILE {}", e.to_string().lines().next().unwrap_or(""))),
            (Ok(s), Some(want), _) => match s.evaluate(&d) { Ok(b) if b == want => None, Ok(b) => Some(format!("GOT {b}")), Err(e) => Some(format!("RTERR {e}")) },
            (Ok(s), None, Some(_)) => match s.evaluate(&d) { Err(_) => None, Ok(b) => Some(format!("EXPECTED ERROR, GOT {b}")) },
            _ => None,
        };
        if let Some(m) = msg { bad += 1; println!("{} | {} | {}", case.name, case.expr.replace('\n', " "), m); }
    }
    println!("{bad} of {} differ", cases.len());
}
