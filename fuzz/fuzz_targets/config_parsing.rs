//! Configuration text (UTF-8 TOML) through `config::load_str`, as `run`,
//! `check` and a hot reload read it. Never a panic; a refusal names at least
//! one problem, and an accepted configuration is loaded the same way twice.
#![no_main]

use std::path::Path;

use a2a_gateway::config;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if names_a_special_file(text) {
        return;
    }
    match config::load_str(text) {
        Ok(first) => {
            let again = config::load_str(text).expect("the same text loads again");
            assert_eq!(
                format!("{:?}", first.upstreams),
                format!("{:?}", again.upstreams)
            );
        }
        Err(errors) => {
            assert!(!errors.0.is_empty(), "a refusal must name a problem");
            let shown = errors.to_string();
            assert!(!shown.is_empty());
        }
    }
});

/// The loader reads secrets, keys and certificates from files the config
/// names. An operator's config is trusted to name real files; the fuzzer
/// must not make it read /dev/zero or a FIFO forever, so any string naming
/// something that exists but is not a small regular file skips the input.
fn names_a_special_file(text: &str) -> bool {
    let Ok(table) = text.parse::<toml::Table>() else {
        return false; // refused before any file is read
    };
    let mut strings = Vec::new();
    collect(&toml::Value::Table(table), &mut strings);
    strings.iter().any(|s| {
        !s.is_empty()
            && match std::fs::metadata(Path::new(s)) {
                // Reading a directory fails at once; a small file is read.
                Ok(meta) => !(meta.is_dir() || meta.is_file() && meta.len() <= 1 << 20),
                Err(_) => false,
            }
    })
}

fn collect(value: &toml::Value, out: &mut Vec<String>) {
    match value {
        toml::Value::String(s) => out.push(s.clone()),
        toml::Value::Array(items) => items.iter().for_each(|v| collect(v, out)),
        toml::Value::Table(table) => table.values().for_each(|v| collect(v, out)),
        _ => {}
    }
}
