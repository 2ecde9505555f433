//! The shared flags (`--database-url`, `--tenant`, `--json`, `--log-format`,
//! `--egress-allow-network`, `--secrets-key-file`, `--secrets-old-key-file`) appear only
//! on the verbs they mean something to (issue #44, 8), and every place they were given
//! before still works: after the verb, between a verb and its subcommand, before the verb,
//! and from the environment.

use std::process::{Command, Output};

use sqlx::PgPool;

use crate::support::Sluice;

fn help(args: &[&str]) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(args)
        .arg("--help")
        .env_remove("DATABASE_URL")
        .output()
        .unwrap();
    assert!(output.status.success(), "{args:?} --help: {output:?}");
    String::from_utf8(output.stdout).unwrap()
}

const SHARED: [&str; 7] = [
    "--database-url",
    "--tenant",
    "--json",
    "--log-format",
    "--egress-allow-network",
    "--secrets-key-file",
    "--secrets-old-key-file",
];

#[test]
fn help_lists_a_shared_flag_only_where_it_applies() {
    let cases: [(&[&str], &[&str]); 9] = [
        (&["task", "new"], &["--json"]),
        (&["run"], &["--json", "--egress-allow-network"]),
        (
            &["jobs", "list"],
            &["--database-url", "--tenant", "--json", "--log-format"],
        ),
        (
            &["worker"],
            &[
                "--database-url",
                "--json",
                "--log-format",
                "--egress-allow-network",
                "--secrets-key-file",
                "--secrets-old-key-file",
            ],
        ),
        (
            &["serve"],
            &[
                "--database-url",
                "--log-format",
                "--egress-allow-network",
                "--secrets-key-file",
                "--secrets-old-key-file",
            ],
        ),
        (
            &["secrets", "list"],
            &["--database-url", "--tenant", "--json", "--log-format"],
        ),
        (
            &["secrets", "rotate-key"],
            &[
                "--database-url",
                "--json",
                "--log-format",
                "--secrets-key-file",
                "--secrets-old-key-file",
            ],
        ),
        (
            &["types", "set"],
            &[
                "--database-url",
                "--tenant",
                "--json",
                "--log-format",
                "--egress-allow-network",
            ],
        ),
        (&["migrate"], &["--database-url", "--json", "--log-format"]),
    ];
    for (verb, expected) in cases {
        let text = help(verb);
        for flag in SHARED {
            assert_eq!(
                text.contains(&format!("{flag} ")) || text.contains(&format!("{flag}\n")),
                expected.contains(&flag),
                "`sluice {} --help` and {flag}:\n{text}",
                verb.join(" ")
            );
        }
    }
    // `sluice --help` lists the verbs, not flags that belong to some of them.
    let top = help(&[]);
    assert!(
        !top.contains("--database-url") && !top.contains("--secrets-key-file"),
        "{top}"
    );
}

/// `sluice ARGS` with `database_url` as DATABASE_URL (or none).
fn run(sluice: &Sluice, env_url: Option<&str>, args: &[&str]) -> Output {
    let mut command = sluice.command(args);
    match env_url {
        Some(url) => command.env("DATABASE_URL", url),
        None => command.env_remove("DATABASE_URL"),
    };
    command.output().unwrap()
}

fn tenant_of(output: &Output) -> String {
    assert!(output.status.success(), "{output:?}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stats: serde_json::Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    stats["tenant"].as_str().unwrap().to_owned()
}

#[sqlx::test(migrations = false)]
async fn the_database_and_tenant_are_taken_wherever_they_were_given(pool: PgPool) {
    let sluice = Sluice::new(&pool);
    sluice.ok(&["migrate"]);
    sluice.ok(&["tenants", "create", "acme"]);
    let url = sluice.url.as_str();
    // A DATABASE_URL nobody answers at: a flag given anywhere wins over it.
    let wrong = "postgres://nobody@127.0.0.1:1/nothing";

    for args in [
        &["stats", "--json", "--database-url", url, "--tenant", "acme"][..],
        &["--database-url", url, "--json", "--tenant", "acme", "stats"],
        &["--json", "stats", "--tenant", "acme", "--database-url", url],
    ] {
        assert_eq!(
            tenant_of(&run(&sluice, Some(wrong), args)),
            "acme",
            "{args:?}"
        );
        assert_eq!(tenant_of(&run(&sluice, None, args)), "acme", "{args:?}");
    }
    // Between a verb and its subcommand, and after it.
    for args in [
        &["jobs", "--database-url", url, "--tenant", "acme", "list"][..],
        &[
            "jobs",
            "list",
            "--database-url",
            url,
            "--tenant",
            "acme",
            "--json",
        ],
        &["--database-url", url, "jobs", "list"],
    ] {
        let output = run(&sluice, None, args);
        assert!(output.status.success(), "{args:?}: {output:?}");
    }
    // From the environment (DATABASE_URL, SLUICE_TENANT); the default tenant otherwise.
    assert_eq!(
        tenant_of(&run(&sluice, Some(url), &["stats", "--json"])),
        "default"
    );
    let output = sluice
        .command(&["stats", "--json"])
        .env("SLUICE_TENANT", "acme")
        .output()
        .unwrap();
    assert_eq!(tenant_of(&output), "acme");
    // After the verb beats before it.
    let both = ["--tenant", "default", "stats", "--json", "--tenant", "acme"];
    assert_eq!(tenant_of(&run(&sluice, Some(url), &both)), "acme");

    // No database at all: said plainly.
    let output = run(&sluice, None, &["jobs", "list"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&output.stderr).contains("no database given"));
    // A verb that takes no database refuses the flag after it (a usage error) ...
    let dir = tempfile_dir(&sluice);
    let output = run(
        &sluice,
        None,
        &[
            "task",
            "new",
            "x",
            "--lang",
            "rust",
            "--dir",
            &dir,
            "--database-url",
            url,
        ],
    );
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    // ... and still runs with the shared flags before it, as scripts wrote them.
    let output = run(
        &sluice,
        None,
        &[
            "--json", "task", "new", "x", "--lang", "rust", "--dir", &dir,
        ],
    );
    assert!(output.status.success(), "{output:?}");
}

fn tempfile_dir(sluice: &Sluice) -> String {
    let dir = sluice.cache.with_extension("task-new");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir.to_string_lossy().into_owned()
}
