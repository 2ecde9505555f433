//! On-disk cache of precompiled components, so a host compiles each component once across
//! restarts.
//!
//! A file is `{sha256}-{engine key}.cwasm`: a header (magic, engine key, the component's
//! sha256, the artifact's sha256 and length) then wasmtime's serialized artifact. Files are
//! written atomically (temp file + rename) with owner-only permissions. On load every header
//! field is checked and the artifact re-hashed before wasmtime sees it; a file that fails
//! any check, or that wasmtime refuses, is reported as rejected and the caller recompiles
//! and rewrites it. Must not decide what to do with a component (that is `component.rs`).

use std::fs;
use std::hash::{Hash, Hasher};
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use sha2::{Digest, Sha256};
use wasmtime::Engine;
use wasmtime::component::Component;

const MAGIC: &[u8; 8] = b"SLUICEC\x01";
const HEADER_LEN: usize = 8 + 32 + 32 + 32 + 8;
/// Refuse to read absurd files (a precompiled component is a few times its wasm size).
const MAX_FILE_BYTES: u64 = 1 << 30;

pub(crate) struct DiskCache {
    dir: PathBuf,
    engine_key: [u8; 32],
}

/// Result of looking a component up on disk.
pub(crate) enum Lookup {
    Hit(Component),
    Miss,
    /// A file was there but could not be trusted or loaded; the reason is for the log.
    Rejected(String),
}

impl DiskCache {
    /// Opens (creating if needed) the cache directory for this engine.
    pub(crate) fn open(dir: &Path, engine: &Engine) -> io::Result<DiskCache> {
        create_private_dir(dir)?;
        Ok(DiskCache {
            dir: dir.to_owned(),
            engine_key: engine_key(engine),
        })
    }

    /// Where the artifact of `sha256` (lowercase hex) lives for this engine.
    pub(crate) fn path(&self, sha256: &str) -> PathBuf {
        let engine = hex::encode(&self.engine_key[..8]);
        self.dir.join(format!("{sha256}-{engine}.cwasm"))
    }

    pub(crate) fn load(&self, engine: &Engine, sha256: &[u8; 32]) -> Lookup {
        let path = self.path(&hex::encode(sha256));
        let data = match read_bounded(&path) {
            Ok(Some(data)) => data,
            Ok(None) => return Lookup::Miss,
            Err(e) => return Lookup::Rejected(format!("read {}: {e}", path.display())),
        };
        let artifact = match self.check(&data, sha256) {
            Ok(artifact) => artifact,
            Err(why) => return Lookup::Rejected(format!("{}: {why}", path.display())),
        };
        match deserialize(engine, artifact) {
            Ok(component) => Lookup::Hit(component),
            Err(e) => Lookup::Rejected(format!("{}: wasmtime refused it: {e}", path.display())),
        }
    }

    /// Checks the header and the artifact's digest; returns the artifact bytes.
    fn check<'a>(&self, data: &'a [u8], sha256: &[u8; 32]) -> Result<&'a [u8], &'static str> {
        if data.len() < HEADER_LEN {
            return Err("shorter than the header");
        }
        let (header, artifact) = data.split_at(HEADER_LEN);
        let (magic, rest) = header.split_at(8);
        let (engine_key, rest) = rest.split_at(32);
        let (component_sha, rest) = rest.split_at(32);
        let (artifact_sha, len) = rest.split_at(32);
        if magic != MAGIC {
            return Err("not a sluice cache file");
        }
        if engine_key != self.engine_key {
            return Err("written by a different engine configuration");
        }
        if component_sha != sha256 {
            return Err("holds a different component");
        }
        let len = u64::from_le_bytes(len.try_into().map_err(|_| "bad length field")?);
        if len != artifact.len() as u64 {
            return Err("truncated or padded");
        }
        if Sha256::digest(artifact)[..] != *artifact_sha {
            return Err("artifact digest does not match (corrupted)");
        }
        Ok(artifact)
    }

    /// Writes the artifact of `sha256` atomically.
    pub(crate) fn store(&self, sha256: &[u8; 32], artifact: &[u8]) -> io::Result<()> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let path = self.path(&hex::encode(sha256));
        let tmp = self.dir.join(format!(
            ".{}.{}.{}.tmp",
            hex::encode(sha256),
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        let result = (|| {
            let mut f = create_private_file(&tmp)?;
            f.write_all(MAGIC)?;
            f.write_all(&self.engine_key)?;
            f.write_all(sha256)?;
            f.write_all(&Sha256::digest(artifact))?;
            f.write_all(&(artifact.len() as u64).to_le_bytes())?;
            f.write_all(artifact)?;
            f.sync_all()?;
            fs::rename(&tmp, &path)
        })();
        if result.is_err() {
            let _ = fs::remove_file(&tmp);
        }
        result
    }
}

/// Loads a precompiled artifact.
///
/// SAFETY: wasmtime runs the bytes as machine code without validating them. They come from
/// a file in the host-private cache directory that this host wrote (`DiskCache::store`),
/// whose header names this engine configuration and this component, and whose contents
/// hash to the digest recorded when it was written. wasmtime also checks its own header
/// (version, compiler flags) and refuses incompatible artifacts.
#[allow(unsafe_code)]
fn deserialize(engine: &Engine, artifact: &[u8]) -> wasmtime::Result<Component> {
    unsafe { Component::deserialize(engine, artifact) }
}

/// A stable key for the engine's compilation settings (target, flags, tunables, features,
/// wasmtime version): the sha256 of `Engine::precompile_compatibility_hash`.
fn engine_key(engine: &Engine) -> [u8; 32] {
    struct Sha256Hasher(Sha256);
    impl Hasher for Sha256Hasher {
        fn write(&mut self, bytes: &[u8]) {
            self.0.update(bytes);
        }
        fn finish(&self) -> u64 {
            let digest = self.0.clone().finalize();
            u64::from_le_bytes(digest[..8].try_into().unwrap_or_default())
        }
    }
    let mut h = Sha256Hasher(Sha256::new());
    engine.precompile_compatibility_hash().hash(&mut h);
    h.0.finalize().into()
}

fn read_bounded(path: &Path) -> io::Result<Option<Vec<u8>>> {
    let meta = match fs::metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    if !meta.is_file() || meta.len() > MAX_FILE_BYTES {
        return Err(io::Error::other("not a regular file of sane size"));
    }
    match fs::read(path) {
        Ok(data) => Ok(Some(data)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

#[cfg(unix)]
fn create_private_dir(dir: &Path) -> io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

#[cfg(not(unix))]
fn create_private_dir(dir: &Path) -> io::Result<()> {
    fs::create_dir_all(dir)
}

#[cfg(unix)]
fn create_private_file(path: &Path) -> io::Result<fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
}

#[cfg(not(unix))]
fn create_private_file(path: &Path) -> io::Result<fs::File> {
    fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
}
