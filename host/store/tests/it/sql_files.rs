//! The store's SQL files (`host/store/sql/`) and the documents that name them.
//!
//! Owns: checks that need no database: every statement file is used by the crate and
//! says what its parameters are, and every statement and function
//! `docs/state-machine.md` names exists. Must not: run SQL (the other test files do).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every file under `dir` whose name ends with `ext`, relative to `base`, sorted.
fn files(base: &Path, dir: &Path, ext: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.to_string_lossy().ends_with(ext) {
                let relative = path.strip_prefix(base).unwrap();
                found.push(relative.to_string_lossy().replace('\\', "/"));
            }
        }
    }
    found.sort();
    found
}

/// The crate's Rust sources, concatenated.
fn sources() -> String {
    let dir = crate_dir();
    files(&dir, &dir.join("src"), ".rs")
        .iter()
        .map(|f| std::fs::read_to_string(dir.join(f)).unwrap())
        .collect::<Vec<_>>()
        .join("\n")
}

/// `$n` placeholders in `sql` outside comments.
fn placeholders(sql: &str) -> BTreeSet<u32> {
    let mut found = BTreeSet::new();
    for line in sql.lines() {
        let code = line.split("--").next().unwrap_or("");
        let bytes = code.as_bytes();
        for (i, _) in code.match_indices('$') {
            let digits: String = code[i + 1..]
                .chars()
                .take_while(|c| c.is_ascii_digit())
                .collect();
            // `$fn$` / `$$` quoting is not a parameter.
            if !digits.is_empty() && (i == 0 || bytes[i - 1] != b'$') {
                found.insert(digits.parse().unwrap());
            }
        }
    }
    found
}

/// The leading comment block of a file.
fn header(sql: &str) -> String {
    sql.lines()
        .take_while(|l| l.trim_start().starts_with("--"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Each statement file is included by the crate (no dead files), starts with a comment
/// that names each parameter it uses, and the crate includes no file that is missing.
#[test]
fn every_sql_file_is_used_and_documents_its_parameters() {
    let dir = crate_dir();
    let sql_files = files(&dir, &dir.join("sql"), ".sql");
    assert!(
        sql_files.len() >= 40,
        "expected the store's statements under sql/, found {sql_files:?}"
    );
    let src = sources();
    let mut problems = Vec::new();
    for file in &sql_files {
        let name = file.strip_prefix("sql/").unwrap();
        if !src.contains(&format!("sql/{name}\")")) {
            problems.push(format!(
                "{file}: not included by any source file (include_str!)"
            ));
        }
        let sql = std::fs::read_to_string(dir.join(file)).unwrap();
        let head = header(&sql);
        if head.is_empty() {
            problems.push(format!("{file}: no header comment"));
        }
        for n in placeholders(&sql) {
            if !head.contains(&format!("${n}")) {
                problems.push(format!(
                    "{file}: ${n} is used but the header does not say what it is"
                ));
            }
        }
    }
    // The other direction: every include_str! of a statement names an existing file.
    for (i, _) in src.match_indices("include_str!(\"") {
        let rest = &src[i + "include_str!(\"".len()..];
        let target = &rest[..rest.find('"').unwrap()];
        if let Some(at) = target.find("sql/") {
            let file = &target[at..];
            if !dir.join(file).is_file() {
                problems.push(format!("include_str!({target:?}): no such file"));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// No SQL assembled from fragments: the statements are whole files.
#[test]
fn no_sql_fragment_macros_are_left() {
    let src = sources();
    assert!(
        !src.contains("macro_rules!"),
        "host/store/src defines a macro again; keep each statement whole in sql/"
    );
}

/// The backticked names in the "Store function (statement)" column of the table in
/// docs/state-machine.md, row by row.
fn state_machine_rows() -> Vec<(String, Vec<String>)> {
    let path = crate_dir().join("../../docs/state-machine.md");
    let doc = std::fs::read_to_string(&path).unwrap();
    let mut rows = Vec::new();
    let mut in_table = false;
    for line in doc.lines() {
        if line.starts_with("| Edge |") {
            in_table = true;
            continue;
        }
        if !in_table {
            continue;
        }
        if !line.starts_with('|') {
            break;
        }
        let cells: Vec<&str> = line.split('|').collect();
        if cells.len() < 4 || cells[1].trim_start().starts_with("---") {
            continue;
        }
        let names = cells[2]
            .split('`')
            .skip(1)
            .step_by(2)
            .map(str::to_owned)
            .collect();
        rows.push((cells[1].trim().to_owned(), names));
    }
    rows
}

/// Every statement file, SQL function and store function the state machine's table
/// names exists, and every edge names at least one statement or function.
#[test]
fn every_statement_the_state_machine_names_exists() {
    let dir = crate_dir();
    let rows = state_machine_rows();
    assert!(rows.len() >= 15, "the edge table was not found: {rows:?}");
    let src = sources();
    let schema = std::fs::read_to_string(dir.join("schema.sql")).unwrap();
    let mut problems = Vec::new();
    for (edge, names) in &rows {
        let mut statements = 0;
        for name in names {
            if name.ends_with(".sql") {
                statements += 1;
                if !dir.join(name).is_file() {
                    problems.push(format!("{edge}: {name} does not exist under host/store/"));
                }
                if !src.contains(&format!("{name}\")")) {
                    problems.push(format!("{edge}: {name} is not included by the store"));
                }
            } else if let Some(function) = name.strip_prefix("sluice.") {
                statements += 1;
                let function = function.split('(').next().unwrap();
                if !schema.contains(&format!("FUNCTION sluice.{function}(")) {
                    problems.push(format!(
                        "{edge}: function sluice.{function} is not in schema.sql"
                    ));
                }
            } else if name.chars().all(|c| c.is_ascii_lowercase() || c == '_') {
                if !src.contains(&format!("pub async fn {name}(")) {
                    problems.push(format!("{edge}: Store::{name} does not exist"));
                }
            } else {
                problems.push(format!(
                    "{edge}: `{name}` is neither a sql/ file, a sluice.* function nor a store function"
                ));
            }
        }
        if statements == 0 {
            problems.push(format!("{edge}: names no statement file or SQL function"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn placeholders_are_found_outside_comments_and_dollar_quotes() {
    let sql = "-- $9 in a comment\nSELECT $1, $12 AS x $fn$ $$ FROM t WHERE a = $2";
    assert_eq!(placeholders(sql), BTreeSet::from([1, 2, 12]));
}
