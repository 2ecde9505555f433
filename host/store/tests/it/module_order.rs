//! The store's modules import downward only: the layers `src/lib.rs` declares hold, and
//! no folder has an import circle (`module_graph` reads the sources); and the checker
//! itself finds what it must, on made-up crates.
//!
//! Owns: those checks, which need no database. Must not: run SQL.

use crate::module_graph::{ModuleGraph, Sources};

#[test]
fn the_stores_modules_import_downward_only() {
    crate::module_graph::assert_modules_in_order(env!("CARGO_MANIFEST_DIR"), 2);
}

fn crate_of(files: &[(&str, &str)]) -> Sources {
    files
        .iter()
        .map(|(f, s)| (f.to_string(), s.to_string()))
        .collect()
}

#[test]
fn a_circle_through_a_group_a_reexport_and_an_inline_path_is_found() {
    let sources = crate_of(&[
        ("lib.rs", "mod a;\nmod b;\nmod c;\npub use c::Gamma;\n"),
        ("a.rs", "use crate::{b::{self, Beta}, Store};\n"),
        ("b/mod.rs", "mod inner;\n"),
        (
            "b/inner.rs",
            "fn f() -> crate::Gamma { super::super::c::make() }\n",
        ),
        (
            "c.rs",
            "pub fn make() -> Gamma { let _ = crate::a::ALPHA; }\n",
        ),
    ]);
    let graph = ModuleGraph::of_folder(&sources, "");
    let edges: Vec<_> = graph.edges.keys().cloned().collect();
    let pair = |a: &str, b: &str| (a.to_owned(), b.to_owned());
    assert_eq!(edges, [pair("a", "b"), pair("b", "c"), pair("c", "a")]);
    let problems = graph.problems();
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(
        problems[0].starts_with("import circle: a → b"),
        "{problems:?}"
    );
    assert!(
        problems[0].contains("c → a (c.rs: crate::a::ALPHA)"),
        "{problems:?}"
    );
}

#[test]
fn an_import_against_the_declared_layers_is_found_and_named() {
    let doc = "//! Modules import downward only:\n//! 1. `top`, and\n//!    `*`\n//! 2. `low`\n//!\n//! 3. `not_a_layer`\nmod top;\nmod low;\nmod mid;\n";
    let sources = crate_of(&[
        ("lib.rs", doc),
        ("top.rs", "use super::mid::M;\nuse super::low;\n"),
        ("mid.rs", "pub struct M;\n"),
        ("low.rs", "pub fn f() { crate::mid::M; }\n"),
    ]);
    let graph = ModuleGraph::of_folder(&sources, "");
    assert_eq!(graph.layers.len(), 2, "{:?}", graph.layers);
    assert!(graph.layers[0].contains("mid"), "`*` takes the unnamed");
    let problems = graph.problems();
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(problems[0].starts_with("`low` (layer 2) imports `mid` (layer 1) upward"));
}

#[test]
fn comments_strings_and_test_modules_are_not_imports() {
    let sources = crate_of(&[
        ("lib.rs", "mod a;\nmod b;\n"),
        (
            "a.rs",
            "// crate::b\n/* crate::b */\nconst S: &str = \"crate::b\";\nconst R: &str = r#\"crate::b\"#;\nconst C: char = '\"';\nfn f<'a>(x: &'a str) {}\n#[cfg(test)]\nmod tests {\n    use crate::b;\n    fn g() { let _ = '{'; }\n}\n",
        ),
        ("b.rs", "pub struct B;\n"),
    ]);
    let graph = ModuleGraph::of_folder(&sources, "");
    assert!(graph.edges.is_empty(), "{:?}", graph.edges);
    let mut with_real = sources.clone();
    with_real
        .get_mut("a.rs")
        .unwrap()
        .push_str("use crate::b::B;\n");
    assert_eq!(ModuleGraph::of_folder(&with_real, "").edges.len(), 1);
}

#[test]
fn a_stale_layer_or_a_module_in_none_is_a_problem() {
    let doc = "//! Downward only:\n//! 1. `a`, `gone`\n";
    let sources = crate_of(&[("lib.rs", doc), ("a.rs", ""), ("new.rs", "")]);
    let problems = ModuleGraph::of_folder(&sources, "").problems();
    assert_eq!(
        problems,
        [
            "layer 1 names `gone`, not a module here",
            "`new` is in no layer of the doc comment"
        ]
    );
}
