//! Who is looking at the dashboard: a [`Viewer`] is the session behind the
//! `sluice_session` cookie — the tenant it acts for, whether it is an admin or read-only
//! session, and its CSRF token.
//!
//! Owns: the cookie (name, attributes, parsing), the session lookup and its rules (a
//! revoked token, an expired session, or an env admin token the server no longer has
//! ends it), and the write check every action runs first ([`Viewer::may_write`]: the
//! CSRF token, then read-only). Must not: read or change anything else; the session rows
//! themselves are the store's (`ui_sessions`).

use std::time::Duration;

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use sluice_store::UiSession;

use super::errors::{error_page, store_error};
use super::forms::FormData;
use crate::app_state::AppState;

/// The session cookie's name.
pub const SESSION_COOKIE: &str = "sluice_session";

/// How long a sign-in lasts.
pub const SESSION_TTL: Duration = Duration::from_secs(12 * 3600);

/// The signed-in session a dashboard request acts for.
#[derive(Debug, Clone)]
pub struct Viewer {
    pub session: UiSession,
}

impl Viewer {
    /// The tenant every store call of this request is scoped to.
    pub fn tenant(&self) -> &str {
        &self.session.acting_tenant
    }

    pub fn admin(&self) -> bool {
        self.session.admin
    }

    /// True when the session may change things (forms are shown).
    pub fn can_write(&self) -> bool {
        !self.session.read_only
    }

    pub fn csrf(&self) -> &str {
        &self.session.csrf_token
    }

    /// The form's CSRF token must be this session's (403 otherwise).
    pub fn check_csrf(&self, form: &FormData) -> Result<(), Response> {
        let sent = form.get("csrf").unwrap_or_default();
        if same_secret(sent.as_bytes(), self.session.csrf_token.as_bytes()) {
            Ok(())
        } else {
            Err(error_page(
                StatusCode::FORBIDDEN,
                "Refused",
                "This form's CSRF token is missing or is not this session's: reload the page and try again.",
            ))
        }
    }

    /// The check every action runs before anything else: the CSRF token
    /// ([`Viewer::check_csrf`]), then the session must not be read-only (403).
    pub fn may_write(&self, form: &FormData) -> Result<(), Response> {
        self.check_csrf(form)?;
        if self.session.read_only {
            return Err(error_page(
                StatusCode::FORBIDDEN,
                "Read-only",
                "This session signed in with a read-only token: it can look, not change anything.",
            ));
        }
        Ok(())
    }

    /// The admin-only pages' check (403 for a tenant's session).
    pub fn must_be_admin(&self, what: &str) -> Result<(), Response> {
        if self.admin() {
            Ok(())
        } else {
            Err(error_page(
                StatusCode::FORBIDDEN,
                "Admins only",
                &format!("{what} covers the whole fleet: sign in with an admin token to see it."),
            ))
        }
    }
}

/// Constant-time equality of two secrets (the time says nothing about where they
/// differ; lengths are not secret).
fn same_secret(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The value of cookie `name` in the request's `Cookie` headers.
pub fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(key, _)| *key == name)
        .map(|(_, value)| value.trim())
}

/// True when the request reached us over TLS (said by a TLS-terminating proxy): the
/// cookie is then marked `Secure`. `sluice serve` itself speaks plain HTTP.
fn over_tls(headers: &HeaderMap) -> bool {
    headers
        .get("x-forwarded-proto")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("https"))
}

/// `Set-Cookie` for a new session (HttpOnly, SameSite=Strict, path `/ui`, expiring with
/// the session; `Secure` behind TLS).
pub fn session_cookie(headers: &HeaderMap, secret: &str) -> HeaderValue {
    let secure = if over_tls(headers) { "; Secure" } else { "" };
    let value = format!(
        "{SESSION_COOKIE}={secret}; HttpOnly; SameSite=Strict; Path=/ui; Max-Age={}{secure}",
        SESSION_TTL.as_secs()
    );
    HeaderValue::from_str(&value).expect("the secret is URL-safe text")
}

/// `Set-Cookie` that removes the session cookie.
pub fn cleared_cookie() -> HeaderValue {
    HeaderValue::from_static("sluice_session=; HttpOnly; SameSite=Strict; Path=/ui; Max-Age=0")
}

/// The session of a request, if it has a live one.
pub async fn current(headers: &HeaderMap, state: &AppState) -> Result<Option<UiSession>, Response> {
    let Some(secret) = cookie(headers, SESSION_COOKIE) else {
        return Ok(None);
    };
    let session = state
        .store()
        .ui_session(secret)
        .await
        .map_err(|error| store_error(&error))?;
    Ok(session.filter(|session| match &session.env_admin_hash {
        // A session made from the env admin token lasts while this server has that token.
        Some(hash) => {
            <[u8; 32]>::try_from(hash.as_slice()).is_ok_and(|hash| state.is_env_admin_token(&hash))
        }
        None => session.token_id.is_some(),
    }))
}

impl FromRequestParts<AppState> for Viewer {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Response> {
        match current(&parts.headers, state).await? {
            Some(session) => Ok(Viewer { session }),
            None if parts.method == Method::GET || parts.method == Method::HEAD => {
                Err(Redirect::to("/ui/login").into_response())
            }
            None => Err(error_page(
                StatusCode::UNAUTHORIZED,
                "Signed out",
                "This session has ended (signed out, expired, or its token was revoked): sign in again.",
            )),
        }
    }
}
