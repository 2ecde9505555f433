//! Test of this crate's rule "modules import downward only": every `src/**/*.rs` file is
//! a module, each `crate::…`, `super::…` and `self::…` path in its code is an edge to the
//! deepest module the path names (the crate root, a facade of `mod` lines and re-exports,
//! is not a node), and a folder's `mod.rs` is taken to use each of its children. The
//! graph must have no cycle. Comment lines, the test module at a file's end (from its
//! first unindented `#[cfg(test)]`) and `*_tests.rs` files are not read.
//!
//! Self-contained on purpose (the sandbox crate keeps a copy): it reads source text only,
//! so it must not grow into a parser. Must not be compiled outside `cargo test`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

type Graph = BTreeMap<String, BTreeSet<String>>;

/// Every module of the crate under `dir` by path (`a`, `a::b`), with its code.
fn read_modules(dir: &Path, prefix: &str, out: &mut BTreeMap<String, String>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let stem = path.file_stem().unwrap().to_str().unwrap().to_owned();
        let name = match (prefix, stem.as_str()) {
            ("", "lib" | "main") => continue,
            (_, "mod") => prefix.to_owned(),
            ("", _) => stem.clone(),
            _ => format!("{prefix}::{stem}"),
        };
        if path.is_dir() {
            read_modules(&path, &name, out);
        } else if path.extension().is_some_and(|e| e == "rs") && !stem.ends_with("_tests") {
            out.insert(name, std::fs::read_to_string(&path).unwrap());
        }
    }
}

/// The module graph of `modules` (path → code).
fn graph(modules: &BTreeMap<String, String>) -> Graph {
    let mut graph = Graph::new();
    for (me, text) in modules {
        let edges = graph.entry(me.clone()).or_default();
        let code: Vec<&str> = (text.lines())
            .take_while(|l| *l != "#[cfg(test)]")
            .filter(|l| !l.trim_start().starts_with("//"))
            .collect();
        for path in paths(me, &code.join("\n")) {
            // The deepest module the path names; the crate root is not a node.
            let target = (1..=path.len())
                .rev()
                .map(|n| path[..n].join("::"))
                .find(|m| modules.contains_key(m));
            edges.extend(target.filter(|t| t != me));
        }
        let children = modules.keys().filter(|m| parent(m) == Some(me.as_str()));
        edges.extend(children.cloned());
    }
    graph
}

fn parent(module: &str) -> Option<&str> {
    module.rsplit_once("::").map(|(p, _)| p)
}

/// Every `crate::`/`super::`/`self::` path in `code` of module `me`, as absolute
/// segments, a `{…}` group expanded into one path per member.
fn paths(me: &str, code: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for (at, _) in code.match_indices("::") {
        let before = &code[..at];
        let start = before
            .rfind(|c: char| !(c.is_alphanumeric() || c == '_'))
            .map_or(0, |i| i + 1);
        let base: Vec<String> = match &before[start..] {
            "crate" => Vec::new(),
            "self" if !before[..start].ends_with("::") => {
                me.split("::").map(str::to_owned).collect()
            }
            "super" if !before[..start].ends_with("::") => {
                let mut rest = &code[at + 2..];
                let mut module = parent(me).unwrap_or("");
                while let Some(r) = rest.strip_prefix("super::") {
                    (rest, module) = (r, parent(module).unwrap_or(""));
                }
                let base = module
                    .split("::")
                    .filter(|s| !s.is_empty())
                    .map(str::to_owned);
                expand(base.collect(), rest, &mut out);
                continue;
            }
            _ => continue,
        };
        expand(base, &code[at + 2..], &mut out);
    }
    out
}

/// Appends `base` + the path at the start of `rest` (each member of a group) to `out`.
fn expand(mut base: Vec<String>, rest: &str, out: &mut Vec<Vec<String>>) {
    let ident = |s: &str| {
        s.find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(s.len())
    };
    let mut rest = rest.trim_start();
    loop {
        if let Some(group) = rest.strip_prefix('{') {
            let (mut depth, mut member) = (0, 0);
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => return expand(base.clone(), &group[member..i], out),
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        expand(base.clone(), &group[member..i], out);
                        member = i + 1;
                    }
                    _ => {}
                }
            }
            return expand(base, &group[member..], out); // unclosed: the file ends
        }
        let n = ident(rest);
        if n > 0 && &rest[..n] != "self" {
            base.push(rest[..n].to_owned());
        }
        match rest[n..].strip_prefix("::") {
            Some(more) if n > 0 => rest = more.trim_start(),
            _ => return out.push(base),
        }
    }
}

/// A cycle of `graph` (its modules in order, the first repeated at the end), if any.
fn cycle(graph: &Graph) -> Option<Vec<String>> {
    fn visit(
        m: &str,
        g: &Graph,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(i) = path.iter().position(|p| p == m) {
            return Some([&path[i..], &[m.to_owned()]].concat());
        }
        if !done.insert(m.to_owned()) {
            return None;
        }
        path.push(m.to_owned());
        let found = g
            .get(m)
            .into_iter()
            .flatten()
            .find_map(|n| visit(n, g, path, done));
        path.pop();
        found
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|m| visit(m, graph, &mut Vec::new(), &mut done))
}

#[test]
fn modules_import_downward_only() {
    let mut modules = BTreeMap::new();
    read_modules(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        "",
        &mut modules,
    );
    assert!(modules.len() > 3, "found the modules: {:?}", modules.keys());
    let graph = graph(&modules);
    assert_eq!(
        cycle(&graph),
        None,
        "an import circle; the graph: {graph:#?}"
    );
}

#[test]
fn the_checker_finds_a_circle_through_groups_and_super_paths() {
    let modules = |files: &[(&str, &str)]| -> BTreeMap<String, String> {
        files
            .iter()
            .map(|(m, t)| (m.to_string(), t.to_string()))
            .collect()
    };
    let circle = modules(&[
        ("a", "use crate::b::Thing;"),
        ("b", "use crate::{\n    x,\n    c::{self, deep::Y},\n};"),
        ("c", "// use crate::a;\nfn f() {}"),
        ("c::deep", "fn g() { super::super::a::f() }"),
        ("x", "#[cfg(test)]\nuse crate::a;"),
    ]);
    let found = cycle(&graph(&circle)).expect("a → b → c::deep → a");
    assert_eq!(found, ["a", "b", "c", "c::deep", "a"]);
    // Without the upward call the same files are a line; `x`'s test-only use is not read.
    let mut line = circle.clone();
    line.insert("c::deep".into(), "fn g() { self::h() }".into());
    assert_eq!(cycle(&graph(&line)), None);
    // A child naming its folder's `mod.rs` closes a circle (the parent uses its children).
    line.insert("c::deep".into(), "use super::Shared;".into());
    assert_eq!(cycle(&graph(&line)).unwrap(), ["c", "c::deep", "c"]);
}
