//! `sluice-secrets`: tenant secrets at rest. The operator's keys ([`SecretKey`],
//! [`Keyring`]: parsing, key ids) and sealing ([`Keyring::seal`], [`Keyring::open`]):
//! AES-256-GCM with a fresh random 96-bit nonce per value and the tenant and the name
//! bound in as associated data, so a ciphertext copied to another tenant or name does not
//! open.
//!
//! Crypto lives here, in its own small crate, so that the store stays a crypto-free
//! keeper of rows (it holds key ids, nonces and ciphertexts it cannot read) and the
//! sandbox only ever receives plain values for one attempt. Both the host and the store's
//! tests use it. Must not: speak SQL, touch wasmtime, log, or let a key or a value reach
//! a `Debug`/`Display` output.

#![warn(missing_docs)]

mod keys;
mod seal;

pub use keys::{KEY_ID_HEX_LEN, KeyError, Keyring, SecretKey};
pub use seal::{NONCE_LEN, OpenError, SealError, Sealed};
