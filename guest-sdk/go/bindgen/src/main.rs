//! `sluice-go-bindgen <wit-dir> <world> <out-dir> <go-package>`: writes wit-bindgen's Go
//! bindings of the world's imports into `<out-dir>/imports/<interface>/`, as packages under
//! the Go import path `<go-package>/imports/`. The world's export (`run`) is not written: the
//! SDK's hand-written `abi.go` exports it for every contract. The code is gofmt'ed, so the
//! toolchain's `gofmt` must be on the PATH (scripts/gen-bindings puts it there).

use std::path::PathBuf;

use anyhow::{Context, bail};
use wit_bindgen_core::Files;
use wit_parser::Resolve;

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [wit, world, out, package] = args.as_slice() else {
        bail!("usage: sluice-go-bindgen <wit-dir> <world> <out-dir> <go-package>");
    };
    let gofmt = std::process::Command::new("gofmt")
        .stdin(std::process::Stdio::null())
        .output();
    if !gofmt.is_ok_and(|o| o.status.success()) {
        bail!("gofmt is not on the PATH: the generated code would not be formatted");
    }
    let mut resolve = Resolve::default();
    let (wit_package, _) = resolve
        .push_path(wit)
        .with_context(|| format!("parse {wit}"))?;
    let world = resolve.select_world(&[wit_package], Some(world))?;
    let opts = wit_bindgen_go::Opts {
        pkg_name: Some(package.clone()),
        quiet: true,
        ..Default::default()
    };
    let mut files = Files::default();
    opts.build().generate(&mut resolve, world, &mut files)?;
    let out = PathBuf::from(out);
    for (name, contents) in files.iter() {
        if !name.starts_with("imports/") {
            continue;
        }
        let path = out.join(name);
        let parent = path.parent().expect("a file in a folder");
        std::fs::create_dir_all(parent).with_context(|| format!("create {}", parent.display()))?;
        std::fs::write(&path, contents).with_context(|| format!("write {}", path.display()))?;
    }
    Ok(())
}
