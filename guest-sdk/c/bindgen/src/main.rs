//! `sluice-c-bindgen <wit-dir> <world> <out-dir>`: writes wit-bindgen's C bindings of the
//! world (`<world>.h`, `<world>.c`) into `<out-dir>`. No component-type object file: builds
//! embed the type with `wasm-tools component embed` instead, so no binary is committed.

use std::path::PathBuf;

use anyhow::{Context, bail};
use wit_bindgen_core::Files;
use wit_parser::Resolve;

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [wit, world, out] = args.as_slice() else {
        bail!("usage: sluice-c-bindgen <wit-dir> <world> <out-dir>");
    };
    let mut resolve = Resolve::default();
    let (package, _) = resolve
        .push_path(wit)
        .with_context(|| format!("parse {wit}"))?;
    let world = resolve.select_world(&[package], Some(world))?;
    let opts = wit_bindgen_c::Opts {
        no_object_file: true,
        ..Default::default()
    };
    let mut files = Files::default();
    opts.build().generate(&mut resolve, world, &mut files)?;
    let out = PathBuf::from(out);
    std::fs::create_dir_all(&out).with_context(|| format!("create {}", out.display()))?;
    for (name, contents) in files.iter() {
        let path = out.join(name);
        std::fs::write(&path, contents).with_context(|| format!("write {}", path.display()))?;
    }
    Ok(())
}
