//! Allow lists checked when they are set: bad `--allow-http` entries are refused, each
//! named, and nothing is stored; a tenant's egress bound only narrows what its types may
//! grant (`--deny-all` grants nothing); and each bad worker egress flag stops the worker
//! at start, naming the flag.

use crate::support::Sluice;
use sqlx::PgPool;

#[sqlx::test(migrations = false)]
async fn bad_allow_lists_are_refused_when_set_and_a_tenant_bound_only_narrows(pool: PgPool) {
    let sluice = Sluice::migrated(&pool);
    let file = crate::support::sample("http-get");
    sluice.ok(&[
        "component",
        "push",
        file.to_str().unwrap(),
        "--name",
        "http-get",
    ]);
    for bad in [
        "ftp://x.example.com",
        "https://",
        "https://*.",
        "https://api.example.com/v1",
        "http://10.0.0.1",
        "http://127.0.0.1:8080",
        "https://user@api.example.com",
    ] {
        let out = sluice.run(&[
            "types",
            "set",
            "fetch",
            "--component",
            "http-get",
            "--allow-http",
            bad,
        ]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{bad} was accepted");
        assert!(stderr.contains(bad), "{bad}: {stderr}");
    }
    assert_eq!(
        sluice.json(&["types", "list"]),
        serde_json::json!([]),
        "nothing stored"
    );

    sluice.ok(&[
        "tenants",
        "egress",
        "default",
        "--allow",
        "https://*.example.com",
    ]);
    let out = sluice.run(&[
        "types",
        "set",
        "fetch",
        "--component",
        "http-get",
        "--allow-http",
        "https://evil.test",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("evil.test") && stderr.contains("tenants egress"),
        "{stderr}"
    );
    sluice.ok(&[
        "types",
        "set",
        "fetch",
        "--component",
        "http-get",
        "--allow-http",
        "https://api.example.com",
    ]);
    let types = sluice.json(&["types", "list"]);
    assert_eq!(
        types[0]["allow_http"],
        serde_json::json!(["https://api.example.com:443"])
    );
    // --deny-all: the tenant may grant nothing from now on.
    let tenant = sluice.json(&["tenants", "egress", "default", "--deny-all"]);
    assert_eq!(tenant["egress_allow"], serde_json::json!([]), "{tenant}");
    let out = sluice.run(&[
        "types",
        "set",
        "fetch",
        "--component",
        "http-get",
        "--allow-http",
        "https://api.example.com",
    ]);
    assert!(!out.status.success());

    // The worker's egress flags: each bad value stops it at start, naming the flag.
    let not_pem = std::env::temp_dir().join(format!("sluice-e2e-not-pem-{}", std::process::id()));
    std::fs::write(&not_pem, "not a certificate").unwrap();
    let missing = not_pem.with_extension("missing");
    for (flag, value) in [
        ("--egress-ca-file", not_pem.to_str().unwrap()),
        ("--egress-ca-file", missing.to_str().unwrap()),
        ("--egress-allow-network", "10.1.0.0/99"),
    ] {
        let out = sluice.run(&["worker", "--drain", flag, value]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{flag} {value} was accepted");
        assert!(
            stderr.contains(flag) && stderr.contains(value),
            "{flag} {value}: {stderr}"
        );
    }
    let _ = std::fs::remove_file(not_pem);
}
