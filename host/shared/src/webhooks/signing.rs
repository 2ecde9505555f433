//! Standard Webhooks signing: `whsec_` secrets ([`generate_secret`]) and the
//! `webhook-signature` header ([`signature_header`]): `v1,<base64 HMAC-SHA256 of
//! "id.timestamp.body">`, one per active secret, space-separated.
//!
//! Pure functions over bytes: no I/O, no storage, no clock (the caller passes the
//! timestamp). Must not: log or put a secret in an error.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use ring::hmac;
use zeroize::Zeroize;

/// The prefix of a signing secret, as Standard Webhooks libraries expect it.
pub const SECRET_PREFIX: &str = "whsec_";

/// Random key bytes in a new secret (Svix uses 24).
const SECRET_BYTES: usize = 24;

/// A new signing secret: `whsec_` + base64 of 24 random bytes.
pub fn generate_secret() -> String {
    let mut key = [0u8; SECRET_BYTES];
    rand::fill(&mut key);
    let secret = format!("{SECRET_PREFIX}{}", STANDARD.encode(key));
    key.zeroize();
    secret
}

/// Why a stored secret cannot sign (it was altered outside Sluice).
#[derive(Debug, thiserror::Error)]
#[error("the endpoint's signing secret is not `whsec_` + base64")]
pub struct BadSecret;

/// `v1,<sig>` for each secret, space-separated, over `id.timestamp.body`.
pub fn signature_header(
    secrets: &[String],
    id: &str,
    timestamp: i64,
    body: &[u8],
) -> Result<String, BadSecret> {
    let mut message = Vec::with_capacity(id.len() + 24 + body.len());
    message.extend_from_slice(id.as_bytes());
    message.push(b'.');
    message.extend_from_slice(timestamp.to_string().as_bytes());
    message.push(b'.');
    message.extend_from_slice(body);
    let mut parts = Vec::with_capacity(secrets.len());
    for secret in secrets {
        let encoded = secret.strip_prefix(SECRET_PREFIX).unwrap_or(secret);
        let mut key_bytes = STANDARD.decode(encoded).map_err(|_| BadSecret)?;
        if key_bytes.is_empty() {
            return Err(BadSecret);
        }
        let key = hmac::Key::new(hmac::HMAC_SHA256, &key_bytes);
        key_bytes.zeroize();
        let tag = hmac::sign(&key, &message);
        parts.push(format!("v1,{}", STANDARD.encode(tag.as_ref())));
    }
    Ok(parts.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The example of the Standard Webhooks specification (and Svix's docs).
    #[test]
    fn signs_the_specification_example() {
        let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw".to_owned();
        let body = br#"{"test": 2432232314}"#;
        let header =
            signature_header(&[secret], "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body).unwrap();
        assert_eq!(header, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
    }

    #[test]
    fn two_secrets_give_two_space_separated_signatures_and_new_secrets_differ() {
        let (a, b) = (generate_secret(), generate_secret());
        assert!(a.starts_with("whsec_") && a != b);
        let header = signature_header(&[a.clone(), b], "msg_1", 1, b"{}").unwrap();
        let parts: Vec<&str> = header.split(' ').collect();
        assert_eq!(parts.len(), 2);
        assert!(parts.iter().all(|p| p.starts_with("v1,")));
        assert_ne!(parts[0], parts[1]);
        assert_eq!(signature_header(&[a], "msg_1", 1, b"{}").unwrap(), parts[0]);
        assert!(signature_header(&["whsec_not base64!".into()], "m", 1, b"").is_err());
    }
}
