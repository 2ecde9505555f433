//! Sealing one value: AES-256-GCM under the keyring's current key, a fresh random 96-bit
//! nonce per value (from the operating system), and associated data binding the tenant
//! and the name, so a row copied to another tenant or renamed does not open.
//!
//! Must not: reuse a nonce, return a value that did not authenticate, or put a value in
//! an error.

use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::{Aes256Gcm, Nonce};

use crate::keys::{Keyring, SecretKey};

/// Bytes of a nonce.
pub const NONCE_LEN: usize = 12;

/// Version tag of the associated data; a later format changes it.
const AAD_TAG: &[u8] = b"sluice-secret/v1";

/// A sealed value as stored: which key, the nonce, and the ciphertext with its 16-byte tag.
#[derive(Clone, PartialEq, Eq)]
pub struct Sealed {
    /// The id of the key that sealed it ([`SecretKey::id`], 16 hex characters); picks the
    /// key that opens it.
    pub key_id: String,
    /// The 96-bit nonce, [`NONCE_LEN`] bytes, fresh for this value.
    pub nonce: Vec<u8>,
    /// The encrypted value followed by its 16-byte authentication tag.
    pub ciphertext: Vec<u8>,
}

impl std::fmt::Debug for Sealed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sealed")
            .field("key_id", &self.key_id)
            .field("ciphertext_bytes", &self.ciphertext.len())
            .finish_non_exhaustive()
    }
}

/// Why a value could not be sealed.
#[derive(Debug, thiserror::Error)]
pub enum SealError {
    /// No nonce could be drawn: the operating system's random source failed (its message).
    /// Nothing was sealed; the caller may retry.
    #[error("the operating system's random source failed: {0}")]
    Random(String),
    /// AES-GCM refused to encrypt: the value exceeds the cipher's limit (about 64 GiB), so
    /// no secret of an accepted size meets it.
    #[error("encryption failed")]
    Encrypt,
}

/// Why a stored value could not be opened.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum OpenError {
    /// The row was encrypted under a key this host does not hold.
    #[error(
        "it is encrypted under key id {key_id}, and this host holds key id(s) {held}: give it that key (--secrets-key-file, or --secrets-old-key-file during a rotation)"
    )]
    UnknownKey {
        /// The key id stored with the row.
        key_id: String,
        /// The key ids this host holds, comma-separated, the current one first.
        held: String,
    },
    /// The key is held but the value does not authenticate: the row was altered, or
    /// copied from another tenant or name.
    #[error(
        "it does not authenticate under key id {key_id}: the stored value was altered or copied from another tenant or name; set it again"
    )]
    Corrupt {
        /// The key id stored with the row (held by this host).
        key_id: String,
    },
    /// The value opened but is not UTF-8 text (it was not sealed by Sluice).
    #[error("its value is not UTF-8 text; set it again")]
    NotText,
}

fn aad(tenant: &str, name: &str) -> Vec<u8> {
    // Tenant ids and secret names hold no NUL, so the encoding is unambiguous.
    let mut aad = Vec::with_capacity(AAD_TAG.len() + tenant.len() + name.len() + 2);
    aad.extend_from_slice(AAD_TAG);
    aad.push(0);
    aad.extend_from_slice(tenant.as_bytes());
    aad.push(0);
    aad.extend_from_slice(name.as_bytes());
    aad
}

fn cipher(key: &SecretKey) -> Aes256Gcm {
    Aes256Gcm::new_from_slice(key.bytes()).expect("a 32-byte key")
}

impl Keyring {
    /// `value` of secret `name` of `tenant`, sealed under the current key.
    pub fn seal(&self, tenant: &str, name: &str, value: &str) -> Result<Sealed, SealError> {
        use rand::TryRngCore as _;
        let key = self.current();
        let mut nonce = [0u8; NONCE_LEN];
        rand::rngs::OsRng
            .try_fill_bytes(&mut nonce)
            .map_err(|e| SealError::Random(e.to_string()))?;
        let aad = aad(tenant, name);
        let ciphertext = cipher(key)
            .encrypt(
                &Nonce::from(nonce),
                Payload {
                    msg: value.as_bytes(),
                    aad: &aad,
                },
            )
            .map_err(|_| SealError::Encrypt)?;
        Ok(Sealed {
            key_id: key.id().to_owned(),
            nonce: nonce.to_vec(),
            ciphertext,
        })
    }

    /// The value of a stored row of secret `name` of `tenant`.
    pub fn open(&self, tenant: &str, name: &str, sealed: &Sealed) -> Result<String, OpenError> {
        let key = self
            .find(&sealed.key_id)
            .ok_or_else(|| OpenError::UnknownKey {
                key_id: sealed.key_id.clone(),
                held: self.ids().join(", "),
            })?;
        let corrupt = || OpenError::Corrupt {
            key_id: sealed.key_id.clone(),
        };
        let nonce: [u8; NONCE_LEN] = sealed.nonce.as_slice().try_into().map_err(|_| corrupt())?;
        let aad = aad(tenant, name);
        let plain = cipher(key)
            .decrypt(
                &Nonce::from(nonce),
                Payload {
                    msg: &sealed.ciphertext,
                    aad: &aad,
                },
            )
            .map_err(|_| corrupt())?;
        String::from_utf8(plain).map_err(|_| OpenError::NotText)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ring() -> Keyring {
        Keyring::new(SecretKey::generate().unwrap(), Vec::new())
    }

    #[test]
    fn a_value_opens_only_for_its_own_tenant_and_name() {
        let ring = ring();
        let sealed = ring.seal("acme", "STRIPE_KEY", "sk_live_123").unwrap();
        assert_eq!(sealed.key_id, ring.current().id());
        assert_eq!(sealed.nonce.len(), NONCE_LEN);
        assert!(!sealed.ciphertext.windows(11).any(|w| w == b"sk_live_123"));
        assert_eq!(
            ring.open("acme", "STRIPE_KEY", &sealed).unwrap(),
            "sk_live_123"
        );
        for (tenant, name) in [
            ("other", "STRIPE_KEY"),
            ("acme", "STRIPE_KEY2"),
            ("acm", "eSTRIPE_KEY"),
        ] {
            assert!(matches!(
                ring.open(tenant, name, &sealed),
                Err(OpenError::Corrupt { .. })
            ));
        }
        let mut altered = sealed.clone();
        altered.ciphertext[0] ^= 1;
        assert!(ring.open("acme", "STRIPE_KEY", &altered).is_err());
    }

    #[test]
    fn every_seal_takes_a_fresh_nonce() {
        let ring = ring();
        let a = ring.seal("t", "N", "same").unwrap();
        let b = ring.seal("t", "N", "same").unwrap();
        assert_ne!(a.nonce, b.nonce);
        assert_ne!(a.ciphertext, b.ciphertext);
    }

    #[test]
    fn previous_keys_open_and_unknown_keys_are_named() {
        let old = ring();
        let sealed = old.seal("t", "N", "v").unwrap();
        let rotated = Keyring::new(SecretKey::generate().unwrap(), vec![old.current().clone()]);
        assert_eq!(rotated.open("t", "N", &sealed).unwrap(), "v");
        let other = ring();
        let err = other.open("t", "N", &sealed).unwrap_err();
        assert!(matches!(err, OpenError::UnknownKey { .. }));
        assert!(err.to_string().contains(&sealed.key_id), "{err}");
    }
}
