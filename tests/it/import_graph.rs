//! No import circles between modules: among the modules that share a parent
//! (the top-level ones in `src/`, the files of one folder), a module that
//! uses another must not be used back, directly or round a longer circle.
//! A circle makes two modules one in all but name: neither can be read,
//! tested or moved without the other.
//!
//! Reads `src/` as text: every `crate::…`, `super::…` and `self::…` path
//! (in `use` lines and inline, braces included) from each file is an edge
//! from the file's module to the module the path names, lifted to the
//! level where the two part. Comments are skipped; test code counts too.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

type ModPath = Vec<String>;

/// Every `.rs` file under `dir`.
fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .expect("src/ is readable")
        .map(|e| e.expect("a directory entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `src/a/b.rs` and `src/a/b/mod.rs` are `a::b`; `src/lib.rs` is the root.
fn module_of(src: &Path, file: &Path) -> ModPath {
    let relative = file.strip_prefix(src).expect("under src/");
    let mut parts: ModPath = relative
        .iter()
        .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_string())
        .collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    parts
}

/// The text without `//` comments (a `//` inside a string cuts the rest of
/// that line too, which only loses paths, never invents them).
fn code(text: &str) -> String {
    text.lines()
        .map(|line| line.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

fn ident_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_'
}

fn ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Paths after each `crate::`, `super::` or `self::` in `code`, resolved
/// to absolute module paths from `module` (the file's own module; `is_mod`
/// when the file is a `mod.rs` or `lib.rs`, whose `super` is one level up).
fn paths(code: &str, module: &ModPath) -> Vec<ModPath> {
    let mut found = Vec::new();
    let chars: Vec<char> = code.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let at_word_start = i == 0 || !ident_char(chars[i - 1]) && chars[i - 1] != ':';
        if !at_word_start || !ident_start(chars[i]) {
            i += 1;
            continue;
        }
        let (word, next) = word_at(&chars, i);
        let base: Option<ModPath> = match word.as_str() {
            "crate" => Some(Vec::new()),
            "self" => Some(module.clone()),
            "super" => {
                let mut base = module.clone();
                base.pop();
                Some(base)
            }
            _ => None,
        };
        i = next;
        if let Some(mut base) = base {
            // `super::super::x`
            while starts_with(&chars, i, "::super") {
                base.pop();
                i += "::super".len();
            }
            i = tail(&chars, i, base, &mut found);
        }
    }
    found
}

fn word_at(chars: &[char], start: usize) -> (String, usize) {
    let mut end = start;
    while end < chars.len() && ident_char(chars[end]) {
        end += 1;
    }
    (chars[start..end].iter().collect(), end)
}

fn starts_with(chars: &[char], at: usize, s: &str) -> bool {
    s.chars()
        .enumerate()
        .all(|(k, c)| chars.get(at + k) == Some(&c))
}

/// Reads `::a::b` or `::{a::b, c}` after a path's base; returns where it
/// stopped.
fn tail(chars: &[char], mut i: usize, mut base: ModPath, found: &mut Vec<ModPath>) -> usize {
    loop {
        if !starts_with(chars, i, "::") {
            found.push(base);
            return i;
        }
        i += 2;
        if chars.get(i) == Some(&'{') {
            i += 1;
            loop {
                while chars.get(i).is_some_and(|c| c.is_whitespace() || *c == ',') {
                    i += 1;
                }
                match chars.get(i) {
                    None => return i,
                    Some('}') => return i + 1,
                    Some(c) if ident_start(*c) => {
                        let (word, next) = word_at(chars, i);
                        let mut path = base.clone();
                        if word != "self" {
                            path.push(word);
                        }
                        i = tail(chars, next, path, found);
                    }
                    Some(_) => i += 1,
                }
            }
        }
        match chars.get(i) {
            Some(c) if ident_start(*c) => {
                let (word, next) = word_at(chars, i);
                base.push(word);
                i = next;
            }
            _ => {
                found.push(base);
                return i;
            }
        }
    }
}

/// Edges between siblings: from `from` (a module) to the module `to` names,
/// at the first level where they differ, when both sides are modules.
fn sibling_edge(
    from: &ModPath,
    to: &ModPath,
    modules: &BTreeSet<ModPath>,
) -> Option<(ModPath, ModPath)> {
    let common = from.iter().zip(to).take_while(|(a, b)| a == b).count();
    if common >= from.len() || common >= to.len() {
        return None; // a module and its own ancestor or descendant
    }
    let a = from[..=common].to_vec();
    let b = to[..=common].to_vec();
    (modules.contains(&a) && modules.contains(&b)).then_some((a, b))
}

/// Every circle in the graph, each as the modules round it.
fn circles(edges: &BTreeMap<ModPath, BTreeSet<ModPath>>) -> Vec<Vec<ModPath>> {
    fn visit(
        node: &ModPath,
        edges: &BTreeMap<ModPath, BTreeSet<ModPath>>,
        stack: &mut Vec<ModPath>,
        done: &mut BTreeSet<ModPath>,
        found: &mut Vec<Vec<ModPath>>,
    ) {
        if let Some(at) = stack.iter().position(|n| n == node) {
            found.push(stack[at..].to_vec());
            return;
        }
        if done.contains(node) {
            return;
        }
        stack.push(node.clone());
        for next in edges.get(node).into_iter().flatten() {
            visit(next, edges, stack, done, found);
        }
        stack.pop();
        done.insert(node.clone());
    }
    let mut found = Vec::new();
    let mut done = BTreeSet::new();
    for node in edges.keys() {
        visit(node, edges, &mut Vec::new(), &mut done, &mut found);
    }
    found
}

fn graph(src: &Path) -> BTreeMap<ModPath, BTreeSet<ModPath>> {
    let mut all = Vec::new();
    files(src, &mut all);
    all.retain(|f| f.file_name().is_some_and(|n| n != "main.rs"));
    let modules: BTreeSet<ModPath> = all.iter().map(|f| module_of(src, f)).collect();
    let mut edges: BTreeMap<ModPath, BTreeSet<ModPath>> = BTreeMap::new();
    for file in &all {
        let module = module_of(src, file);
        let text = std::fs::read_to_string(file).expect("a source file");
        for path in paths(&code(&text), &module) {
            if let Some((a, b)) = sibling_edge(&module, &path, &modules) {
                edges.entry(a).or_default().insert(b);
            }
        }
    }
    edges
}

fn shown(circle: &[ModPath]) -> String {
    let mut names: Vec<String> = circle.iter().map(|m| m.join("::")).collect();
    names.push(names[0].clone());
    names.join(" → ")
}

#[test]
fn no_module_imports_one_that_imports_it_back() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let found = circles(&graph(&src));
    assert!(
        found.is_empty(),
        "import circles between modules:\n  {}",
        found
            .iter()
            .map(|c| shown(c))
            .collect::<Vec<_>>()
            .join("\n  ")
    );
}

/// The reader itself: paths of every form, and a planted circle found.
#[test]
fn the_reader_sees_every_path_form_and_finds_a_circle() {
    let module: ModPath = vec!["a".into(), "b".into()];
    let text =
        "use crate::x::{y::z, w, self};\nlet v = super::c::d();\nuse self::e::f; // crate::gone\n";
    let found: BTreeSet<String> = paths(&code(text), &module)
        .into_iter()
        .map(|p| p.join("::"))
        .collect();
    for want in ["x::y::z", "x::w", "x", "a::c::d", "a::b::e::f"] {
        assert!(found.contains(want), "{want} in {found:?}");
    }
    assert!(!found.iter().any(|p| p.contains("gone")), "{found:?}");

    let modules: BTreeSet<ModPath> = [vec!["p"], vec!["p", "q"], vec!["p", "r"], vec!["s"]]
        .into_iter()
        .map(|m| m.into_iter().map(String::from).collect())
        .collect();
    let m = |s: &str| s.split("::").map(String::from).collect::<ModPath>();
    let mut edges: BTreeMap<ModPath, BTreeSet<ModPath>> = BTreeMap::new();
    for (from, to) in [
        ("p::q", "p::r::x"),
        ("p::r", "p::q"),
        ("p::q", "s"),
        ("s", "p"),
    ] {
        if let Some((a, b)) = sibling_edge(&m(from), &m(to), &modules) {
            edges.entry(a).or_default().insert(b);
        }
    }
    let found: Vec<String> = circles(&edges).iter().map(|c| shown(c)).collect();
    assert!(
        found.contains(&"p::q → p::r → p::q".to_string()),
        "{found:?}"
    );
    assert!(found.contains(&"p → s → p".to_string()), "{found:?}");
}
