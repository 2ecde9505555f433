//! Which module of a folder imports which other, read from the crate's source files (no
//! compiler), and what is wrong with that graph: a circle, or an import upward against
//! the layers the folder's own file declares.
//!
//! A folder's modules are its files and subfolders; an import is a `crate::`, `super::`
//! or `self::` path (a `use` line or inline) from a file of one into another. A path to a
//! name the folder's own file (`mod.rs`, `lib.rs`) re-exports counts as an import of the
//! module it comes from; one to an item defined there counts as none (that file declares
//! the modules; its items are what they all build on). The layers are the numbered lines
//! of the paragraph of the doc comment that says "downward only", top first, each naming
//! its modules (and nothing else) in backticks (`` `*` ``: every module no layer names);
//! a module imports from its own layer and those below, never in a circle.
//!
//! Shared by `sluice-store`'s tests and, through `#[path]`, the host's, the sandbox's and
//! egress's (one checker for every crate). Must not: parse
//! more than paths. Comments, string literals and `#[cfg(test)] mod … { }` blocks are
//! skipped; `as` renames and inline `mod { }` blocks are not followed.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Source files by path under the crate's `src/` (`worker/slots.rs`).
pub type Sources = BTreeMap<String, String>;

/// Every `.rs` file under `src` but `main.rs` (the binary's crate, not the library's).
pub fn read_sources(src: &Path) -> Sources {
    let mut sources = Sources::new();
    let mut dirs = vec![src.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let path = entry.unwrap().path();
            let name = path
                .strip_prefix(src)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            if path.is_dir() {
                dirs.push(path);
            } else if name.ends_with(".rs") && name != "main.rs" {
                sources.insert(name, std::fs::read_to_string(&path).unwrap());
            }
        }
    }
    sources
}

/// Every folder with modules, as module paths (`""`: the crate root, `"worker"`).
pub fn folders(sources: &Sources) -> BTreeSet<String> {
    let mut folders = BTreeSet::from([String::new()]);
    for file in sources.keys() {
        if let Some((folder, _)) = file.rsplit_once('/') {
            folders.insert(folder.to_owned());
        }
    }
    folders
}

/// The check every crate runs on its own `src/` (`manifest_dir`: its
/// `CARGO_MANIFEST_DIR`): the crate root declares `root_layers` layers (0: none, only
/// no circle), and no folder has a problem (a circle, or an import against its layers).
/// Returns the root's graph for checks of the crate's own (which modules never meet).
pub fn assert_modules_in_order(manifest_dir: &str, root_layers: usize) -> ModuleGraph {
    let sources = read_sources(&Path::new(manifest_dir).join("src"));
    assert!(sources.len() > 1, "found the modules: {:?}", sources.keys());
    for folder in folders(&sources) {
        let problems = ModuleGraph::of_folder(&sources, &folder).problems();
        assert_eq!(problems, Vec::<String>::new(), "in src/{folder}");
    }
    let root = ModuleGraph::of_folder(&sources, "");
    assert_eq!(
        root.layers.len(),
        root_layers,
        "the crate root declares its layers"
    );
    root
}

/// The modules of one folder and their imports of each other.
#[derive(Debug)]
pub struct ModuleGraph {
    pub modules: BTreeSet<String>,
    /// `(importer, imported)` → the first path that says so (`file: path`).
    pub edges: BTreeMap<(String, String), String>,
    /// As declared by the folder's own file, top first (empty: none declared).
    pub layers: Vec<BTreeSet<String>>,
}

impl ModuleGraph {
    /// The graph of `folder` (a module path: `""`, `"worker"`).
    pub fn of_folder(sources: &Sources, folder: &str) -> ModuleGraph {
        let base = segments(folder);
        let own = sources.iter().find(|(file, _)| module_of(file) == base);
        let own_file = own.map(|(file, _)| file.as_str());
        let mut modules = BTreeSet::new();
        for file in sources.keys().filter(|f| Some(f.as_str()) != own_file) {
            let path = module_of(file);
            if path.len() > base.len() && path.starts_with(&base) {
                modules.insert(path[base.len()].clone());
            }
        }
        // Names the folder's own file takes from its modules (`pub use slots::Slots`).
        let mut reexported = BTreeMap::new();
        if let Some((file, source)) = own {
            for path in paths(&code(source), true) {
                let path = match path.first().map(String::as_str) {
                    Some("crate" | "self" | "super") => absolute(&module_of(file), &path),
                    Some(first) if modules.contains(first) => [base.clone(), path].concat(),
                    _ => continue,
                };
                if path.len() > base.len() + 1 && path.starts_with(&base) {
                    reexported.insert(path.last().unwrap().clone(), path[base.len()].clone());
                }
            }
        }
        let mut edges = BTreeMap::new();
        for (file, source) in sources.iter().filter(|(f, _)| Some(f.as_str()) != own_file) {
            let here = module_of(file);
            if here.len() <= base.len() || !here.starts_with(&base) {
                continue;
            }
            let from = &here[base.len()];
            for path in paths(&code(source), false) {
                let target = absolute(&here, &path);
                let Some(name) = target.get(base.len()).filter(|_| target.starts_with(&base))
                else {
                    continue;
                };
                let to = if modules.contains(name) {
                    Some(name)
                } else {
                    reexported.get(name)
                };
                if let Some(to) = to.filter(|to| *to != from) {
                    edges
                        .entry((from.clone(), to.clone()))
                        .or_insert_with(|| format!("{file}: {}", path.join("::")));
                }
            }
        }
        let layers = own.map_or_else(Vec::new, |(_, source)| declared_layers(source, &modules));
        ModuleGraph {
            modules,
            edges,
            layers,
        }
    }

    /// What breaks "downward only": a circle, a module in no layer (or two), a layer
    /// naming no module of the folder, an import of a higher layer.
    pub fn problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        if let Some(circle) = self.circle() {
            let steps: Vec<String> = circle
                .windows(2)
                .map(|w| {
                    format!(
                        "{} → {} ({})",
                        w[0],
                        w[1],
                        self.edges[&(w[0].clone(), w[1].clone())]
                    )
                })
                .collect();
            problems.push(format!("import circle: {}", steps.join(", ")));
        }
        if self.layers.is_empty() {
            return problems;
        }
        let mut layer_of = BTreeMap::new();
        for (i, layer) in self.layers.iter().enumerate() {
            for module in layer {
                if !self.modules.contains(module) {
                    problems.push(format!(
                        "layer {} names `{module}`, not a module here",
                        i + 1
                    ));
                } else if layer_of.insert(module.clone(), i).is_some() {
                    problems.push(format!("`{module}` is in two layers"));
                }
            }
        }
        for module in self.modules.iter().filter(|m| !layer_of.contains_key(*m)) {
            problems.push(format!("`{module}` is in no layer of the doc comment"));
        }
        for ((from, to), why) in &self.edges {
            if let (Some(a), Some(b)) = (layer_of.get(from), layer_of.get(to))
                && a > b
            {
                problems.push(format!(
                    "`{from}` (layer {}) imports `{to}` (layer {}) upward: {why}",
                    a + 1,
                    b + 1
                ));
            }
        }
        problems
    }

    /// One circle of imports, first module repeated last; `None`: there is none.
    fn circle(&self) -> Option<Vec<String>> {
        fn visit(
            graph: &ModuleGraph,
            module: &String,
            stack: &mut Vec<String>,
            done: &mut BTreeSet<String>,
        ) -> Option<Vec<String>> {
            if let Some(at) = stack.iter().position(|m| m == module) {
                return Some([&stack[at..], std::slice::from_ref(module)].concat());
            }
            if !done.insert(module.clone()) {
                return None;
            }
            stack.push(module.clone());
            let next = graph.edges.keys().filter(|(from, _)| from == module);
            let found = next
                .into_iter()
                .find_map(|(_, to)| visit(graph, to, stack, done));
            stack.pop();
            found
        }
        let mut done = BTreeSet::new();
        self.modules
            .iter()
            .find_map(|m| visit(self, m, &mut Vec::new(), &mut done))
    }
}

fn segments(path: &str) -> Vec<String> {
    path.split('/')
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

/// `worker/slots.rs` → `[worker, slots]`; `worker/mod.rs` → `[worker]`; `lib.rs` → `[]`.
fn module_of(file: &str) -> Vec<String> {
    let mut path = segments(file.trim_end_matches(".rs"));
    if matches!(path.last().map(String::as_str), Some("mod" | "lib")) {
        path.pop();
    }
    path
}

/// `path` (starting `crate`, `self` or `super`) as seen from module `here`, from the root.
fn absolute(here: &[String], path: &[String]) -> Vec<String> {
    let mut base = match path[0].as_str() {
        "crate" => Vec::new(),
        _ => here.to_vec(),
    };
    let mut rest = &path[1..];
    if path[0] == "super" {
        base.pop();
    }
    while rest.first().is_some_and(|s| s == "super") {
        base.pop();
        rest = &rest[1..];
    }
    [base, rest.to_vec()].concat()
}

/// The layers declared in `source`'s doc comment (see the module comment).
fn declared_layers(source: &str, modules: &BTreeSet<String>) -> Vec<BTreeSet<String>> {
    let doc = source.lines().map_while(|l| l.trim().strip_prefix("//!"));
    let lines = doc
        .skip_while(|l| !l.to_lowercase().contains("downward only"))
        .skip(1)
        .map(str::trim)
        .take_while(|l| !l.is_empty());
    // From the first numbered line, each line continues the layer above it.
    let mut layers: Vec<String> = Vec::new();
    for line in lines {
        if line
            .split_once(". ")
            .is_some_and(|(n, _)| n.parse::<u32>().is_ok())
        {
            layers.push(line.to_owned());
        } else if let Some(layer) = layers.last_mut() {
            layer.push_str(line);
        }
    }
    let mut named: Vec<BTreeSet<String>> = layers
        .iter()
        .map(|layer| {
            layer
                .split('`')
                .skip(1)
                .step_by(2)
                .map(str::to_owned)
                .collect()
        })
        .collect();
    let listed: BTreeSet<String> = named.iter().flatten().cloned().collect();
    for layer in &mut named {
        if layer.remove("*") {
            layer.extend(modules.difference(&listed).cloned());
        }
    }
    named
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// `source` with comments, string and char literals blanked, and inline
/// `#[cfg(test)] mod … { }` blocks removed.
fn code(source: &str) -> Vec<char> {
    let c: Vec<char> = source.chars().collect();
    let mut out = Vec::with_capacity(c.len());
    let mut i = 0;
    while i < c.len() {
        let raw_hashes = (peek(&c, i) == 'r' && (i == 0 || !is_ident(c[i - 1]) || c[i - 1] == 'b'))
            .then(|| c[i + 1..].iter().take_while(|&&h| h == '#').count())
            .filter(|&n| peek(&c, i + n + 1) == '"');
        if peek(&c, i) == '/' && peek(&c, i + 1) == '/' {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if peek(&c, i) == '/' && peek(&c, i + 1) == '*' {
            i += 2;
            while i < c.len() && !(c[i] == '*' && peek(&c, i + 1) == '/') {
                i += 1;
            }
            i += 2;
        } else if let Some(n) = raw_hashes {
            let end: String = std::iter::once('"')
                .chain(std::iter::repeat_n('#', n))
                .collect();
            let text: String = c[i + n + 2..].iter().collect();
            let len = text
                .find(&end)
                .map_or(text.chars().count(), |b| text[..b].chars().count());
            i += n + 2 + len + end.len();
            out.extend(['"', '"']);
        } else if peek(&c, i) == '"' {
            i += 1;
            while i < c.len() && c[i] != '"' {
                i += if c[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
            out.extend(['"', '"']);
        } else if peek(&c, i) == '\'' && (peek(&c, i + 1) == '\\' || peek(&c, i + 2) == '\'') {
            i += if peek(&c, i + 1) == '\\' { 3 } else { 2 };
            while i < c.len() && c[i] != '\'' {
                i += 1;
            }
            i += 1;
            out.extend(['\'', ' ', '\'']);
        } else {
            out.push(c[i]);
            i += 1;
        }
    }
    without_test_modules(out)
}

fn peek(c: &[char], i: usize) -> char {
    c.get(i).copied().unwrap_or(' ')
}

fn without_test_modules(code: Vec<char>) -> Vec<char> {
    let text: String = code.iter().collect();
    let Some(at) = text.find("#[cfg(test)]") else {
        return code;
    };
    let start = text[..at].chars().count();
    let rest: Vec<char> = code[start + "#[cfg(test)]".len()..].to_vec();
    let words: String = rest
        .iter()
        .take_while(|c| **c != '{' && **c != ';')
        .collect();
    let is_module = words.split_whitespace().any(|w| w == "mod");
    let open = rest.iter().position(|c| *c == '{' || *c == ';');
    let Some(open) = open.filter(|&o| is_module && rest[o] == '{') else {
        // Not an inline test module: keep it and look further.
        let mut kept = code[..start + 1].to_vec();
        kept.extend(without_test_modules(code[start + 1..].to_vec()));
        return kept;
    };
    let mut depth = 0;
    let mut end = rest.len();
    for (k, c) in rest.iter().enumerate().skip(open) {
        depth += match c {
            '{' => 1,
            '}' => -1,
            _ => 0,
        };
        if depth == 0 {
            end = k + 1;
            break;
        }
    }
    let mut kept = code[..start].to_vec();
    kept.extend(without_test_modules(rest[end..].to_vec()));
    kept
}

/// The paths `code` names after `crate::`, `super::` or `self::` (with `uses`: every
/// path of its `use` items instead), one per item of a `{…}` group, as written.
fn paths(code: &[char], uses: bool) -> Vec<Vec<String>> {
    let mut found = Vec::new();
    let mut i = 0;
    while i < code.len() {
        let starts_word = i == 0 || !(is_ident(code[i - 1]) || code[i - 1] == ':');
        let (word, end) = ident(code, i);
        if !starts_word || word.is_empty() {
            i += 1;
            continue;
        }
        if uses && word == "use" {
            tree(code, end, &[], &mut found);
        } else if !uses
            && matches!(word.as_str(), "crate" | "super" | "self")
            && at(code, end, "::")
        {
            tree(code, skip_ws(code, end) + 2, &[word], &mut found);
        }
        i = end;
    }
    found
}

/// Parses a use tree at `i` below `prefix` into `found`; returns where it ends.
fn tree(code: &[char], i: usize, prefix: &[String], found: &mut Vec<Vec<String>>) -> usize {
    let mut i = skip_ws(code, i);
    if code.get(i) == Some(&'{') {
        i += 1;
        loop {
            i = skip_ws(code, i);
            match code.get(i) {
                None => return i,
                Some('}') => return i + 1,
                Some(',') => i += 1,
                _ => {
                    i = tree(code, i, prefix, found);
                    // Past an `as` rename, to the next item.
                    while !matches!(code.get(i), None | Some(',' | '}')) {
                        i += 1;
                    }
                }
            }
        }
    }
    let (word, end) = ident(code, i);
    if word.is_empty() {
        found.push(prefix.to_vec());
        return i;
    }
    let mut path = prefix.to_vec();
    path.push(word);
    if at(code, end, "::") {
        tree(code, skip_ws(code, end) + 2, &path, found)
    } else {
        found.push(path);
        end
    }
}

fn ident(code: &[char], i: usize) -> (String, usize) {
    let end = (i..code.len())
        .find(|&k| !is_ident(code[k]))
        .unwrap_or(code.len());
    let word: String = code[i..end].iter().collect();
    if word.starts_with(|c: char| c.is_ascii_digit()) {
        (String::new(), i)
    } else {
        (word, end)
    }
}

fn skip_ws(code: &[char], i: usize) -> usize {
    (i..code.len())
        .find(|&k| !code[k].is_whitespace())
        .unwrap_or(code.len())
}

fn at(code: &[char], i: usize, token: &str) -> bool {
    let i = skip_ws(code, i);
    token
        .chars()
        .enumerate()
        .all(|(k, t)| code.get(i + k) == Some(&t))
}
