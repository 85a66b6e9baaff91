//! The gateway's security schemes as the card publishes them: each scheme
//! in the 0.3 shape (`type` …) carrying the 1.0 shape alongside (one card
//! serves both generations of clients), `security` (0.3) and
//! `securityRequirements` (1.0). The same config is what is enforced.

use serde_json::{json, Map, Value};

use super::config::{Auth, SchemeKind};

/// Replaces the card's security fields with the gateway's own.
pub fn apply(card: &mut Value, auth: &Auth) {
    let Some(card) = card.as_object_mut() else {
        return;
    };
    let mut schemes = Map::new();
    for s in &auth.schemes {
        let mut scheme = describe(&s.kind);
        if let (Some(d), Some(obj)) = (&s.description, scheme.as_object_mut()) {
            obj.insert("description".into(), Value::String(d.clone()));
        }
        schemes.insert(s.name.clone(), scheme);
    }
    let security: Vec<Value> = auth
        .alternatives
        .iter()
        .map(|alt| {
            let m: Map<String, Value> = alt
                .iter()
                .map(|(i, scopes)| (auth.schemes[*i].name.clone(), json!(scopes)))
                .collect();
            Value::Object(m)
        })
        .collect();
    let requirements: Vec<Value> = auth
        .alternatives
        .iter()
        .map(|alt| {
            let m: Map<String, Value> = alt
                .iter()
                .map(|(i, scopes)| (auth.schemes[*i].name.clone(), json!({ "list": scopes })))
                .collect();
            json!({ "schemes": m })
        })
        .collect();
    card.insert("securitySchemes".into(), Value::Object(schemes));
    card.insert("security".into(), Value::Array(security));
    card.insert("securityRequirements".into(), Value::Array(requirements));
}

fn describe(kind: &SchemeKind) -> Value {
    match kind {
        SchemeKind::ApiKey {
            location, param, ..
        } => json!({
            "type": "apiKey", "in": location.label(), "name": param,
            "apiKeySecurityScheme": {"location": location.label(), "name": param}
        }),
        SchemeKind::Basic { .. } => json!({
            "type": "http", "scheme": "basic",
            "httpAuthSecurityScheme": {"scheme": "Basic"}
        }),
        SchemeKind::Bearer { bearer_format, .. } => {
            let format = bearer_format.clone().unwrap_or_else(|| "JWT".into());
            json!({
                "type": "http", "scheme": "bearer", "bearerFormat": format,
                "httpAuthSecurityScheme": {"scheme": "Bearer", "bearerFormat": format}
            })
        }
        SchemeKind::OAuth2 { flows, .. } => json!({
            "type": "oauth2", "flows": flows,
            "oauth2SecurityScheme": {"flows": flows}
        }),
        SchemeKind::OpenIdConnect { url, .. } => json!({
            "type": "openIdConnect", "openIdConnectUrl": url,
            "openIdConnectSecurityScheme": {"openIdConnectUrl": url}
        }),
        SchemeKind::MutualTls => json!({"type": "mutualTLS", "mtlsSecurityScheme": {}}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::config::{KeyLocation, Scheme};

    #[test]
    fn publishes_both_shapes_and_alternatives() {
        let auth = Auth {
            schemes: vec![
                Scheme {
                    name: "key".into(),
                    description: Some("Team keys".into()),
                    kind: SchemeKind::ApiKey {
                        location: KeyLocation::Header,
                        param: "X-API-Key".into(),
                        keys: vec![],
                    },
                },
                Scheme {
                    name: "mtls".into(),
                    description: None,
                    kind: SchemeKind::MutualTls,
                },
            ],
            alternatives: vec![vec![(0, vec![])], vec![(0, vec!["a".into()]), (1, vec![])]],
            public_card: true,
        };
        let mut card = json!({"name": "g", "securitySchemes": {"old": {}}});
        apply(&mut card, &auth);
        assert_eq!(card["securitySchemes"]["key"]["type"], "apiKey");
        assert_eq!(
            card["securitySchemes"]["key"]["apiKeySecurityScheme"]["location"],
            "header"
        );
        assert_eq!(card["securitySchemes"]["key"]["description"], "Team keys");
        assert!(card["securitySchemes"].get("old").is_none());
        assert_eq!(
            card["security"],
            json!([{"key": []}, {"key": ["a"], "mtls": []}])
        );
        assert_eq!(
            card["securityRequirements"],
            json!([{"schemes": {"key": {"list": []}}}, {"schemes": {"key": {"list": ["a"]}, "mtls": {"list": []}}}])
        );
    }
}
