//! Command-line flags that override (or, with no file, make up) the
//! configuration. They are applied to the parsed TOML table before
//! validation, so a bad flag is reported like a bad file value.

use toml::{Table, Value};

#[derive(Debug, Clone, Default)]
pub struct Overrides {
    pub listen: Option<String>,
    pub admin_listen: Option<String>,
    pub public_url: Option<String>,
    /// `(name, url)`: replaces the URL of the upstream with that name, or
    /// adds an upstream with default settings.
    pub upstreams: Vec<(String, String)>,
    /// `--plaintext`: serve plain HTTP on a non-loopback address.
    pub plaintext: bool,
}

impl Overrides {
    pub fn apply(&self, table: &mut Table) {
        if let Some(server) = section(table, "server") {
            if self.plaintext {
                server.insert("plaintext".into(), Value::Boolean(true));
            }
            for (key, value) in [
                ("listen", &self.listen),
                ("admin_listen", &self.admin_listen),
                ("public_url", &self.public_url),
            ] {
                if let Some(v) = value {
                    server.insert(key.into(), Value::String(v.clone()));
                }
            }
        }
        for (name, url) in &self.upstreams {
            upsert_upstream(table, name, url);
        }
    }
}

/// The named sub-table, created when missing; `None` when the key holds
/// something else (validation reports that).
fn section<'a>(table: &'a mut Table, key: &str) -> Option<&'a mut Table> {
    table
        .entry(key)
        .or_insert_with(|| Value::Table(Table::new()))
        .as_table_mut()
}

fn upsert_upstream(table: &mut Table, name: &str, url: &str) {
    let list = table
        .entry("upstreams")
        .or_insert_with(|| Value::Array(Vec::new()));
    let Some(list) = list.as_array_mut() else {
        return;
    };
    let existing = list
        .iter_mut()
        .filter_map(Value::as_table_mut)
        .find(|t| t.get("name").and_then(Value::as_str) == Some(name));
    match existing {
        Some(t) => {
            // The flag names the one URL to use: it replaces replicas too.
            t.remove("urls");
            t.insert("url".into(), Value::String(url.into()));
        }
        None => {
            let mut t = Table::new();
            t.insert("name".into(), Value::String(name.into()));
            t.insert("url".into(), Value::String(url.into()));
            list.push(Value::Table(t));
        }
    }
}
