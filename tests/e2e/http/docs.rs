//! Runs the ```sh examples of `docs/http-api.md` with the real `curl` against a real
//! server, in order, and checks each call's status against the block's `# expect N`
//! comments.

use std::process::Command;

use sqlx::PgPool;

use crate::support::http::Api;
use crate::support::{repo_root, sample};

/// The ```sh blocks of a Markdown text.
fn sh_blocks(markdown: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in markdown.lines() {
        match (&mut current, line.trim_end()) {
            (None, "```sh") => current = Some(String::new()),
            (Some(_), "```") => blocks.push(current.take().unwrap()),
            (Some(block), text) => {
                block.push_str(text);
                block.push('\n');
            }
            (None, _) => {}
        }
    }
    blocks
}

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn the_curl_examples_of_the_http_doc_run_and_answer_as_documented(pool: PgPool) {
    if Command::new("curl").arg("--version").output().is_err() {
        panic!("curl is needed to run the documentation examples");
    }
    // With a secrets key, for the `PUT /v1/secrets/{name}` example.
    let key = sluice_secrets::SecretKey::generate().unwrap();
    let api = Api::start_with(
        &pool,
        sluice_http::app_state::ServeConfig {
            admin_token: Some(crate::support::http::ENV_ADMIN_TOKEN.into()),
            secrets: Some(sluice_secrets::Keyring::new(key, Vec::new())),
            ..sluice_http::app_state::ServeConfig::default()
        },
    )
    .await;
    let token = api.tenant("acme").await;
    let dir = std::env::temp_dir().join(format!(
        "sluice-http-doc-{}",
        pool.connect_options().get_database().unwrap_or("db")
    ));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(sample("echo"), dir.join("echo.wasm")).unwrap();

    let doc = std::fs::read_to_string(repo_root().join("docs/http-api.md")).unwrap();
    let blocks = sh_blocks(&doc);
    assert!(blocks.len() >= 8, "found {} sh blocks", blocks.len());
    for block in blocks {
        let expected: Vec<u16> = block
            .lines()
            .filter_map(|l| l.trim().strip_prefix("# expect "))
            .map(|n| n.trim().parse().unwrap())
            .collect();
        assert!(
            !expected.is_empty(),
            "a doc example without `# expect`:\n{block}"
        );
        // Each curl call also prints its status on a line of its own.
        let script = format!(
            "set -e\ncurl() {{ command curl -w '\\n@status %{{http_code}}\\n' \"$@\"; }}\n{block}"
        );
        let (base, token, dir) = (api.base.clone(), token.clone(), dir.clone());
        let output = tokio::task::spawn_blocking(move || {
            Command::new("bash")
                .arg("-c")
                .arg(script)
                .current_dir(dir)
                .env("SLUICE_URL", base)
                .env("SLUICE_TOKEN", token)
                .output()
                .unwrap()
        })
        .await
        .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success(),
            "example failed:\n{block}\nstdout: {stdout}\nstderr: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let statuses: Vec<u16> = stdout
            .lines()
            .filter_map(|l| l.strip_prefix("@status "))
            .map(|n| n.parse().unwrap())
            .collect();
        assert_eq!(statuses, expected, "example:\n{block}\noutput:\n{stdout}");
    }
}
