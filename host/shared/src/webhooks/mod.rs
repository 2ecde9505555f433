//! Durable signed webhooks (docs/webhooks.md): endpoint secrets created and rotated
//! ([`create_endpoint`], [`rotate_secret`], shared by the CLI and the HTTP API), Standard
//! Webhooks signing ([`signing`]), and the delivery of one event to one endpoint, run
//! by the worker as a job of type `sluice.webhook` ([`deliver`]).
//!
//! SQL is the store's, the outbound connection the egress connector's (the one SSRF
//! implementation), crypto at rest `sluice-secrets`'s. Must not: log or return a signing
//! secret except the one `create`/`rotate-secret` print once, or store a URL or secret
//! in a job.
pub mod deliver;
pub mod signing;

use std::time::Duration;

use sluice_secrets::{Keyring, SealError};
use sluice_store::{
    EndpointInfo, NewEndpoint, SealedValue, Store, StoreError, endpoint_secret_name,
};

/// How long a rotated-out secret keeps signing when the caller names no grace: 24 h.
pub const DEFAULT_ROTATION_GRACE: Duration = Duration::from_secs(24 * 3600);

/// Why an endpoint could not be created or its secret rotated.
#[derive(Debug, thiserror::Error)]
pub enum EndpointError {
    /// This process holds no secrets key to seal the signing secret with: start it with
    /// one.
    #[error(
        "this process has no secrets key to seal the signing secret with: start it with --secrets-key-file PATH or {} (docs/secrets.md)",
        crate::secrets::KEY_ENV
    )]
    NoKey,
    /// Sealing the new secret failed (the random source); nothing was written.
    #[error("cannot seal the signing secret: {0}")]
    Seal(#[from] SealError),
    /// The store refused the endpoint (unknown tenant, bad URL or patterns, too many
    /// endpoints) or could not be reached.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// `ep_12`: how endpoint ids are shown.
pub fn endpoint_label(id: i64) -> String {
    format!("ep_{id}")
}

/// `evt_12`: how event ids are shown.
pub fn event_label(id: i64) -> String {
    format!("evt_{id}")
}

/// The `webhook-id` of event `event` sent to endpoint `endpoint`: the same on every
/// attempt and on a redelivery, so a receiver can drop duplicates.
pub fn message_id(event: i64, endpoint: i64) -> String {
    format!("msg_{event}_{endpoint}")
}

fn seal(
    keyring: &Keyring,
    tenant: &str,
    id: i64,
    secret: &str,
) -> Result<SealedValue, EndpointError> {
    let sealed = keyring.seal(tenant, &endpoint_secret_name(id), secret)?;
    Ok(SealedValue {
        key_id: sealed.key_id,
        nonce: sealed.nonce,
        ciphertext: sealed.ciphertext,
    })
}

/// Creates an endpoint with a new signing secret, sealed under the keyring's current
/// key. Returns the endpoint and the secret (shown once; never stored in clear).
pub async fn create_endpoint(
    store: &Store,
    keyring: Option<&Keyring>,
    spec: &NewEndpoint,
) -> Result<(EndpointInfo, String), EndpointError> {
    let keyring = keyring.ok_or(EndpointError::NoKey)?;
    let id = store.next_webhook_endpoint_id().await?;
    let secret = signing::generate_secret();
    let sealed = seal(keyring, &spec.tenant, id, &secret)?;
    let info = store.create_webhook_endpoint(id, spec, &sealed).await?;
    Ok((info, secret))
}

/// Gives an endpoint a new signing secret; the old one keeps signing beside it for
/// `grace`. Returns the endpoint and the new secret (shown once).
pub async fn rotate_secret(
    store: &Store,
    keyring: Option<&Keyring>,
    tenant: &str,
    id: i64,
    grace: Duration,
) -> Result<(EndpointInfo, String), EndpointError> {
    let keyring = keyring.ok_or(EndpointError::NoKey)?;
    // The endpoint must exist (and be this tenant's) before anything is sealed.
    store.get_webhook_endpoint(tenant, id).await?;
    let secret = signing::generate_secret();
    let sealed = seal(keyring, tenant, id, &secret)?;
    let info = store
        .rotate_webhook_secret(tenant, id, &sealed, grace)
        .await?;
    Ok((info, secret))
}
