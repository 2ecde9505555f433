//! The operator's keys: [`SecretKey`] (32 bytes, written as 64 hex characters) and its
//! key id, and [`Keyring`] (the current key, which encrypts, plus previous keys that only
//! decrypt, during a rotation).
//!
//! Must not: show key bytes anywhere (`Debug` prints the key id only; errors describe the
//! text without echoing it). Key bytes are wiped when dropped.

use std::fmt;

use sha2::{Digest, Sha256};
use zeroize::Zeroizing;

/// Hex characters of a key id: the first 8 bytes of the key's SHA-256.
pub const KEY_ID_HEX_LEN: usize = 16;

/// One AES-256 key.
#[derive(Clone)]
pub struct SecretKey {
    bytes: Zeroizing<[u8; 32]>,
    id: String,
}

impl fmt::Debug for SecretKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SecretKey")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

/// Key material that is not a key, naming where it came from (a flag or a variable).
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    /// The text is not 64 hex characters of random bytes; the message says how to make a
    /// key.
    #[error(
        "{origin}: not a secrets key: {problem} (expected 64 hex characters, 32 random bytes; make one with `openssl rand -hex 32`)"
    )]
    Malformed {
        /// The flag or variable the text came from, as passed to [`SecretKey::parse`].
        origin: String,
        /// What is wrong with the text (its length, a non-hex character), never the text.
        problem: String,
    },
    /// No key could be made at all ([`SecretKey::generate`]: the operating system's
    /// random source failed).
    #[error("{origin}: {problem}")]
    Unusable {
        /// What was making the key (`generate`).
        origin: String,
        /// Why it failed (the random source's own error).
        problem: String,
    },
}

impl SecretKey {
    /// Parses 64 hex characters (surrounding whitespace, such as a file's trailing
    /// newline, is ignored). `origin` names the flag or variable in errors.
    pub fn parse(origin: &str, text: &str) -> Result<SecretKey, KeyError> {
        let malformed = |problem: String| KeyError::Malformed {
            origin: origin.to_owned(),
            problem,
        };
        let text = text.trim();
        if text.is_empty() {
            return Err(malformed("it is empty".into()));
        }
        if text.len() != 64 {
            return Err(malformed(format!(
                "{} characters long",
                text.chars().count()
            )));
        }
        let mut bytes = Zeroizing::new([0u8; 32]);
        hex::decode_to_slice(text, bytes.as_mut_slice())
            .map_err(|_| malformed("it holds a character that is not a hex digit".into()))?;
        if bytes.iter().all(|b| *b == bytes[0]) {
            return Err(malformed("every byte is the same: it is not random".into()));
        }
        Ok(SecretKey::from_bytes(bytes))
    }

    fn from_bytes(bytes: Zeroizing<[u8; 32]>) -> SecretKey {
        let digest = Sha256::digest(bytes.as_slice());
        SecretKey {
            id: hex::encode(&digest[..KEY_ID_HEX_LEN / 2]),
            bytes,
        }
    }

    /// A fresh random key (tests, and `openssl rand -hex 32` without openssl).
    pub fn generate() -> Result<SecretKey, KeyError> {
        use rand::TryRngCore as _;
        let mut bytes = Zeroizing::new([0u8; 32]);
        rand::rngs::OsRng
            .try_fill_bytes(bytes.as_mut_slice())
            .map_err(|e| KeyError::Unusable {
                origin: "generate".into(),
                problem: format!("the operating system's random source failed: {e}"),
            })?;
        Ok(SecretKey::from_bytes(bytes))
    }

    /// The key as 64 hex characters (to write a key file; never log it).
    pub fn to_hex(&self) -> Zeroizing<String> {
        Zeroizing::new(hex::encode(self.bytes.as_slice()))
    }

    /// The key id stored beside each value: first 8 bytes of SHA-256 of the key, in hex.
    /// Says which key encrypted a row without saying anything usable about the key.
    pub fn id(&self) -> &str {
        &self.id
    }

    pub(crate) fn bytes(&self) -> &[u8; 32] {
        &self.bytes
    }
}

/// The keys one host holds: `current` encrypts (and decrypts), `previous` only decrypt
/// (rows not yet re-encrypted during a rotation). The key id of a row picks its key.
#[derive(Clone, Debug)]
pub struct Keyring {
    current: SecretKey,
    previous: Vec<SecretKey>,
}

impl Keyring {
    /// A keyring; previous keys equal to the current one, or repeated, are dropped.
    pub fn new(current: SecretKey, previous: Vec<SecretKey>) -> Keyring {
        let mut kept: Vec<SecretKey> = Vec::new();
        for key in previous {
            if key.id != current.id && !kept.iter().any(|k| k.id == key.id) {
                kept.push(key);
            }
        }
        Keyring {
            current,
            previous: kept,
        }
    }

    /// The key that encrypts.
    pub fn current(&self) -> &SecretKey {
        &self.current
    }

    /// Every key id this keyring decrypts, the current one first.
    pub fn ids(&self) -> Vec<String> {
        std::iter::once(&self.current)
            .chain(&self.previous)
            .map(|k| k.id.clone())
            .collect()
    }

    /// The key with this id, if held.
    pub fn find(&self, key_id: &str) -> Option<&SecretKey> {
        std::iter::once(&self.current)
            .chain(&self.previous)
            .find(|k| k.id == key_id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";

    #[test]
    fn a_key_parses_from_hex_with_a_trailing_newline_and_has_a_short_id() {
        let key = SecretKey::parse("--secrets-key-file k", &format!("{KEY}\n")).unwrap();
        assert_eq!(key.id().len(), KEY_ID_HEX_LEN);
        assert_eq!(key.id(), SecretKey::parse("x", KEY).unwrap().id());
        assert!(!format!("{key:?}").contains("0a0b"), "{key:?}");
        assert_eq!(&*key.to_hex(), KEY);
    }

    #[test]
    fn bad_material_is_refused_naming_the_origin_and_never_echoed() {
        for (text, problem) in [
            ("", "empty"),
            ("abcd", "4 characters"),
            (&KEY.replace('0', "g"), "not a hex digit"),
            (&"a".repeat(64), "not random"),
        ] {
            let err = SecretKey::parse("SLUICE_SECRETS_KEY", text)
                .unwrap_err()
                .to_string();
            assert!(err.starts_with("SLUICE_SECRETS_KEY: "), "{err}");
            assert!(err.contains(problem), "{err}");
            if text.len() > 8 {
                assert!(!err.contains(text), "{err}");
            }
        }
    }

    #[test]
    fn a_keyring_finds_its_keys_by_id_and_drops_duplicates() {
        let (a, b) = (
            SecretKey::generate().unwrap(),
            SecretKey::generate().unwrap(),
        );
        let ring = Keyring::new(a.clone(), vec![b.clone(), a.clone(), b.clone()]);
        assert_eq!(ring.ids(), [a.id(), b.id()]);
        assert_eq!(ring.find(b.id()).unwrap().id(), b.id());
        assert!(ring.find("0000000000000000").is_none());
        assert_eq!(ring.current().id(), a.id());
    }
}
