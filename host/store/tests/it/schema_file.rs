//! `host/store/schema.sql`: the `sluice` schema as it stands after every migration,
//! generated from the catalog of a freshly migrated database and committed, so a reader
//! (or a reviewer of a new migration) sees the current tables, indexes and functions in
//! one file instead of replaying ten migrations in their head.
//!
//! Owns: the generator (catalog queries rendered as SQL, every section sorted by name)
//! and the test that fails when the committed file is stale. `SLUICE_BLESS=1` rewrites
//! the file instead. Must not: use pg_dump (its output changes with its version), or
//! print anything that depends on the server version, the role that migrated or the
//! database's name.

use std::fmt::Write as _;
use std::path::PathBuf;

use sqlx::{PgConnection, PgPool};

fn schema_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("schema.sql")
}

const HEADER: &str = "\
-- GENERATED FILE: do not edit by hand.
--
-- The `sluice` schema after every migration in migrations/, read from the catalog of a
-- freshly migrated database by host/store/tests/it/schema_file.rs (not pg_dump). The
-- migrations are the source of truth; this file is what they add up to. A test fails
-- when it is out of date; regenerate it with
--
--   SLUICE_BLESS=1 DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres \\
--       cargo test -p sluice-store --test it schema_file
--
-- Sections: schema, enums, sequences, tables (columns in their physical order, then
-- constraints by name), indexes, views, functions, triggers, comments; each sorted by
-- name.
";

/// Name, type, start, increment, min, max, cycle, owning column.
type SequenceRow = (String, String, i64, i64, i64, i64, bool, Option<String>);
/// Name, type, not null, default or generation expression, attgenerated, attidentity.
type ColumnRow = (String, String, bool, Option<String>, String, String);

/// Renders the schema of the database `conn` is connected to.
async fn render(conn: &mut PgConnection) -> String {
    // Every name outside pg_catalog comes out schema-qualified, whoever runs this.
    sqlx::query("SET search_path TO pg_catalog")
        .execute(&mut *conn)
        .await
        .unwrap();
    let mut out = String::from(HEADER);
    out.push_str("\nCREATE SCHEMA sluice;\n");

    section(&mut out, "Enums");
    let enums: Vec<(String, Vec<String>)> = sqlx::query_as(
        "SELECT t.typname::text, array_agg(quote_literal(e.enumlabel) ORDER BY e.enumsortorder)
         FROM pg_type t
         JOIN pg_namespace n ON n.oid = t.typnamespace
         JOIN pg_enum e ON e.enumtypid = t.oid
         WHERE n.nspname = 'sluice'
         GROUP BY t.typname
         ORDER BY 1",
    )
    .fetch_all(&mut *conn)
    .await
    .unwrap();
    for (name, labels) in enums {
        writeln!(
            out,
            "CREATE TYPE sluice.{name} AS ENUM ({});",
            labels.join(", ")
        )
        .unwrap();
    }

    section(&mut out, "Sequences");
    let sequences: Vec<SequenceRow> = sqlx::query_as(
        "SELECT c.relname::text, format_type(s.seqtypid, NULL), s.seqstart, s.seqincrement,
                    s.seqmin, s.seqmax, s.seqcycle,
                    (SELECT d.refobjid::regclass::text || '.' || quote_ident(a.attname)
                     FROM pg_depend d
                     JOIN pg_attribute a ON a.attrelid = d.refobjid AND a.attnum = d.refobjsubid
                     WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid
                       AND d.refclassid = 'pg_class'::regclass AND d.deptype IN ('a', 'i'))
             FROM pg_sequence s
             JOIN pg_class c ON c.oid = s.seqrelid
             JOIN pg_namespace n ON n.oid = c.relnamespace
             WHERE n.nspname = 'sluice'
             ORDER BY 1",
    )
    .fetch_all(&mut *conn)
    .await
    .unwrap();
    for (name, ty, start, increment, min, max, cycle, owned_by) in sequences {
        write!(
            out,
            "CREATE SEQUENCE sluice.{name} AS {ty} START {start} INCREMENT {increment} \
             MINVALUE {min} MAXVALUE {max}{}",
            if cycle { " CYCLE" } else { " NO CYCLE" }
        )
        .unwrap();
        match owned_by {
            Some(column) => writeln!(out, " OWNED BY {column};").unwrap(),
            None => writeln!(out, ";").unwrap(),
        }
    }

    section(&mut out, "Tables");
    let tables: Vec<(i64, String, Option<Vec<String>>)> = sqlx::query_as(
        "SELECT c.oid::int8, c.relname::text,
                (SELECT array_agg(o ORDER BY o) FROM unnest(c.reloptions) o)
         FROM pg_class c
         JOIN pg_namespace n ON n.oid = c.relnamespace
         WHERE n.nspname = 'sluice' AND c.relkind IN ('r', 'p')
         ORDER BY 2",
    )
    .fetch_all(&mut *conn)
    .await
    .unwrap();
    for (oid, name, options) in tables {
        let columns: Vec<ColumnRow> = sqlx::query_as(
            "SELECT quote_ident(a.attname), format_type(a.atttypid, a.atttypmod),
                        a.attnotnull, pg_get_expr(d.adbin, d.adrelid),
                        a.attgenerated::text, a.attidentity::text
                 FROM pg_attribute a
                 LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
                 WHERE a.attrelid = $1::int8::oid AND a.attnum > 0 AND NOT a.attisdropped
                 ORDER BY a.attnum",
        )
        .bind(oid)
        .fetch_all(&mut *conn)
        .await
        .unwrap();
        // NOT NULL constraints are columns' attributes here; newer servers also list
        // them in pg_constraint (contype 'n'), which would only repeat them.
        let constraints: Vec<(String, String)> = sqlx::query_as(
            "SELECT quote_ident(conname), pg_get_constraintdef(oid)
             FROM pg_constraint
             WHERE conrelid = $1::int8::oid AND contype <> 'n'
             ORDER BY conname",
        )
        .bind(oid)
        .fetch_all(&mut *conn)
        .await
        .unwrap();
        let mut lines = Vec::new();
        for (column, ty, not_null, default, generated, identity) in columns {
            let mut line = format!("    {column} {ty}");
            match (generated.as_str(), default) {
                ("s", Some(expr)) => write!(line, " GENERATED ALWAYS AS ({expr}) STORED").unwrap(),
                (_, Some(expr)) => write!(line, " DEFAULT {expr}").unwrap(),
                _ => {}
            }
            match identity.as_str() {
                "a" => line.push_str(" GENERATED ALWAYS AS IDENTITY"),
                "d" => line.push_str(" GENERATED BY DEFAULT AS IDENTITY"),
                _ => {}
            }
            if not_null {
                line.push_str(" NOT NULL");
            }
            lines.push(line);
        }
        for (constraint, definition) in constraints {
            lines.push(format!("    CONSTRAINT {constraint} {definition}"));
        }
        write!(
            out,
            "\nCREATE TABLE sluice.{name} (\n{}\n)",
            lines.join(",\n")
        )
        .unwrap();
        match options {
            Some(options) => writeln!(out, " WITH (\n    {}\n);", options.join(",\n    ")).unwrap(),
            None => writeln!(out, ";").unwrap(),
        }
    }

    section(
        &mut out,
        "Indexes (including those behind PRIMARY KEY and UNIQUE)",
    );
    let indexes: Vec<(String,)> = sqlx::query_as(
        "SELECT pg_get_indexdef(i.indexrelid)
         FROM pg_index i
         JOIN pg_class ic ON ic.oid = i.indexrelid
         JOIN pg_class tc ON tc.oid = i.indrelid
         JOIN pg_namespace n ON n.oid = ic.relnamespace
         WHERE n.nspname = 'sluice'
         ORDER BY tc.relname, ic.relname",
    )
    .fetch_all(&mut *conn)
    .await
    .unwrap();
    for (definition,) in indexes {
        writeln!(out, "{definition};").unwrap();
    }

    section(&mut out, "Views");
    let views: Vec<(String, String)> = sqlx::query_as(
        "SELECT c.relname::text, pg_get_viewdef(c.oid, true)
         FROM pg_class c
         JOIN pg_namespace n ON n.oid = c.relnamespace
         WHERE n.nspname = 'sluice' AND c.relkind = 'v'
         ORDER BY 1",
    )
    .fetch_all(&mut *conn)
    .await
    .unwrap();
    for (name, definition) in views {
        writeln!(
            out,
            "\nCREATE VIEW sluice.{name} AS\n{}",
            definition.trim_end()
        )
        .unwrap();
    }

    section(&mut out, "Functions");
    let functions: Vec<(String, String, bool)> = sqlx::query_as(
        "SELECT p.proname::text || '(' || pg_get_function_identity_arguments(p.oid) || ')',
                pg_get_functiondef(p.oid),
                has_function_privilege('public', p.oid, 'EXECUTE')
         FROM pg_proc p
         JOIN pg_namespace n ON n.oid = p.pronamespace
         WHERE n.nspname = 'sluice'
         ORDER BY p.proname, pg_get_function_identity_arguments(p.oid)",
    )
    .fetch_all(&mut *conn)
    .await
    .unwrap();
    for (signature, definition, public) in functions {
        writeln!(out, "\n{};", definition.trim_end()).unwrap();
        if !public {
            writeln!(
                out,
                "REVOKE EXECUTE ON FUNCTION sluice.{signature} FROM PUBLIC;"
            )
            .unwrap();
        }
    }

    section(&mut out, "Triggers");
    let triggers: Vec<(String,)> = sqlx::query_as(
        "SELECT pg_get_triggerdef(t.oid)
         FROM pg_trigger t
         JOIN pg_class c ON c.oid = t.tgrelid
         JOIN pg_namespace n ON n.oid = c.relnamespace
         WHERE n.nspname = 'sluice' AND NOT t.tgisinternal
         ORDER BY c.relname, t.tgname",
    )
    .fetch_all(&mut *conn)
    .await
    .unwrap();
    if triggers.is_empty() {
        out.push_str("-- (none)\n");
    }
    for (definition,) in triggers {
        writeln!(out, "{definition};").unwrap();
    }

    section(&mut out, "Comments");
    let comments: Vec<(String,)> = sqlx::query_as(
        "SELECT format('COMMENT ON %s %s IS %s;', kind, name, quote_literal(comment))
         FROM (
             SELECT CASE c.relkind WHEN 'v' THEN 'VIEW' ELSE 'TABLE' END AS kind,
                    'sluice.' || quote_ident(c.relname) AS name, d.description AS comment
             FROM pg_description d
             JOIN pg_class c ON d.classoid = 'pg_class'::regclass AND d.objoid = c.oid
             JOIN pg_namespace n ON n.oid = c.relnamespace
             WHERE n.nspname = 'sluice' AND d.objsubid = 0
             UNION ALL
             SELECT 'COLUMN', 'sluice.' || quote_ident(c.relname) || '.' || quote_ident(a.attname),
                    d.description
             FROM pg_description d
             JOIN pg_class c ON d.classoid = 'pg_class'::regclass AND d.objoid = c.oid
             JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = d.objsubid
             JOIN pg_namespace n ON n.oid = c.relnamespace
             WHERE n.nspname = 'sluice' AND d.objsubid > 0
             UNION ALL
             SELECT 'FUNCTION',
                    'sluice.' || quote_ident(p.proname) || '('
                        || pg_get_function_identity_arguments(p.oid) || ')',
                    d.description
             FROM pg_description d
             JOIN pg_proc p ON d.classoid = 'pg_proc'::regclass AND d.objoid = p.oid
             JOIN pg_namespace n ON n.oid = p.pronamespace
             WHERE n.nspname = 'sluice'
             UNION ALL
             SELECT 'TYPE', 'sluice.' || quote_ident(t.typname), d.description
             FROM pg_description d
             JOIN pg_type t ON d.classoid = 'pg_type'::regclass AND d.objoid = t.oid
             JOIN pg_namespace n ON n.oid = t.typnamespace
             WHERE n.nspname = 'sluice'
         ) x
         ORDER BY kind, name",
    )
    .fetch_all(&mut *conn)
    .await
    .unwrap();
    if comments.is_empty() {
        out.push_str("-- (none)\n");
    }
    for (comment,) in comments {
        writeln!(out, "{comment}").unwrap();
    }
    // One trailing newline, no trailing blanks: the file is compared byte for byte.
    let mut out: String = out
        .lines()
        .map(str::trim_end)
        .collect::<Vec<_>>()
        .join("\n");
    out.push('\n');
    out
}

fn section(out: &mut String, title: &str) {
    write!(out, "\n\n-- {title}\n-- {}\n", "-".repeat(title.len())).unwrap();
}

/// A line diff of `old` against `new` (longest common subsequence), showing only the
/// changed lines with two lines of context, capped so a wholly different file stays
/// readable.
pub fn line_diff(old: &str, new: &str) -> String {
    let a: Vec<&str> = old.lines().collect();
    let b: Vec<&str> = new.lines().collect();
    // lcs[i][j]: length of the LCS of a[i..] and b[j..].
    let mut lcs = vec![vec![0u32; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = if a[i] == b[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    // (tag, line number in the new file, text)
    let mut ops: Vec<(char, usize, &str)> = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            ops.push((' ', j + 1, a[i]));
            i += 1;
            j += 1;
        } else if i < a.len() && (j == b.len() || lcs[i + 1][j] >= lcs[i][j + 1]) {
            ops.push(('-', j + 1, a[i]));
            i += 1;
        } else {
            ops.push(('+', j + 1, b[j]));
            j += 1;
        }
    }
    let changed: Vec<usize> = (0..ops.len()).filter(|&k| ops[k].0 != ' ').collect();
    let mut out = String::new();
    let mut last_shown: Option<usize> = None;
    let mut shown = 0;
    for (k, (tag, line, text)) in ops.iter().enumerate() {
        if !changed.iter().any(|&c| c.abs_diff(k) <= 2) {
            continue;
        }
        if last_shown.is_none_or(|l| k > l + 1) {
            writeln!(out, "@@ line {line} of the generated file @@").unwrap();
        }
        writeln!(out, "{tag}{text}").unwrap();
        last_shown = Some(k);
        shown += 1;
        if shown >= 200 {
            out.push_str("... (diff cut at 200 lines)\n");
            break;
        }
    }
    out
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn schema_sql_is_the_migrated_schema(pool: PgPool) {
    let mut conn = pool.acquire().await.unwrap();
    let generated = render(&mut conn).await;
    // Deterministic: a second rendering of the same database is identical.
    assert_eq!(render(&mut conn).await, generated);
    let path = schema_path();
    if std::env::var("SLUICE_BLESS").is_ok_and(|v| v == "1") {
        std::fs::write(&path, &generated).unwrap();
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "{} is not the schema the migrations produce. If the change is intended, \
         regenerate it:\n    SLUICE_BLESS=1 cargo test -p sluice-store --test it schema_file\n\
         Diff (- committed, + generated):\n{}",
        path.display(),
        line_diff(&committed, &generated)
    );
}

#[test]
fn the_diff_shows_changed_lines_with_context() {
    let old = "a\nb\nc\nd\ne\nf\ng\n";
    let new = "a\nb\nc\nD\ne\nf\ng\nh\n";
    let diff = line_diff(old, new);
    assert!(diff.contains("-d\n+D\n"), "{diff}");
    assert!(diff.contains("+h\n"), "{diff}");
    assert!(!diff.contains(" a\n"), "far context is left out: {diff}");
    assert_eq!(line_diff(old, old), "");
}
