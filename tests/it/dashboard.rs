//! The Grafana dashboard in deploy/grafana is JSON, and every metric its
//! queries use is one the gateway exports (`metrics::series_names`): a
//! renamed metric cannot leave a panel silently empty.

use a2a_gateway::telemetry::metrics::series_names;
use serde_json::Value;

const DASHBOARD: &str = include_str!("../../deploy/grafana/a2a-gateway.json");

/// Every `expr` in the dashboard, wherever it sits.
fn exprs(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(obj) => {
            for (key, v) in obj {
                match (key.as_str(), v) {
                    ("expr", Value::String(e)) => out.push(e.clone()),
                    _ => exprs(v, out),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| exprs(v, out)),
        _ => {}
    }
}

#[test]
fn every_query_uses_metrics_the_gateway_exports() {
    let dashboard: Value = serde_json::from_str(DASHBOARD).expect("the dashboard is JSON");
    assert!(dashboard["panels"]
        .as_array()
        .is_some_and(|p| !p.is_empty()));
    let mut found = Vec::new();
    exprs(&dashboard, &mut found);
    assert!(found.len() >= 10, "{found:?}");
    let exported = series_names();
    let mut used = 0;
    for expr in &found {
        for (start, _) in expr.match_indices("a2a_gateway_") {
            let name: String = expr[start..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            assert!(
                exported.contains(&name),
                "{name} (in {expr}) is not exported"
            );
            used += 1;
        }
    }
    assert!(used >= found.len(), "every query names a gateway metric");
}
