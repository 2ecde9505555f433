//! Signing in and out of the dashboard, and an admin's switch between tenants.
//!
//! Owns: the exchange of a token (the same tenant, admin and read-only tokens as the HTTP
//! API, or `SLUICE_ADMIN_TOKEN`) for a session cookie. Must not: keep the token — only
//! the session's own random secret travels in the cookie, and only its hash is stored.

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use maud::html;
use sluice_store::{UiIdentity, token_hash};

use super::bare::bare_page;
use super::errors::store_error;
use super::forms::FormData;
use super::session::{self, SESSION_TTL, Viewer};
use crate::app_state::{AppState, ENV_ADMIN_HOME_TENANT};

/// `/ui`: the overview when signed in, else the sign-in page.
pub async fn root(State(state): State<AppState>, headers: HeaderMap) -> Response {
    match session::current(&headers, &state).await {
        Ok(Some(_)) => Redirect::to("/ui/overview").into_response(),
        Ok(None) => Redirect::to("/ui/login").into_response(),
        Err(response) => response,
    }
}

/// The sign-in form.
pub async fn login_page() -> Response {
    login_form(StatusCode::OK, None)
}

fn login_form(status: StatusCode, error: Option<&str>) -> Response {
    bare_page(
        status,
        "Sign in to Sluice",
        html! {
            @if let Some(error) = error { p.error { (error) } }
            form #login-form method="post" action="/ui/login" {
                label for="token" { "Token" }
                input #token type="password" name="token" autocomplete="off" required autofocus;
                button #sign-in type="submit" { "Sign in" }
            }
            p.hint {
                "A tenant token (" code { "sluice tenants token create TENANT" } ") shows that tenant; "
                "an admin token can switch between tenants; a read-only token ("
                code { "--read-only" } ") looks without changing anything."
            }
        },
    )
}

/// Exchanges the posted token for a session cookie.
pub async fn sign_in(State(state): State<AppState>, headers: HeaderMap, body: Bytes) -> Response {
    let form = FormData::parse(&body);
    let token = form.get("token").unwrap_or_default().trim();
    if token.is_empty() {
        return login_form(StatusCode::BAD_REQUEST, Some("Enter a token."));
    }
    let hash = token_hash(token);
    let identity = if state.is_env_admin_token(&hash) {
        UiIdentity {
            token_id: None,
            env_admin_hash: Some(hash),
            tenant: ENV_ADMIN_HOME_TENANT.to_owned(),
            admin: true,
            read_only: false,
        }
    } else {
        match state.store().authenticate(token).await {
            Ok(Some(identity)) => UiIdentity {
                token_id: Some(identity.token_id),
                env_admin_hash: None,
                tenant: identity.tenant,
                admin: identity.admin,
                read_only: identity.read_only,
            },
            Ok(None) => {
                return login_form(StatusCode::UNAUTHORIZED, Some("Unknown or revoked token."));
            }
            Err(error) => return store_error(&error),
        }
    };
    match state
        .store()
        .create_ui_session(&identity, SESSION_TTL)
        .await
    {
        Ok((secret, _)) => {
            let mut response = Redirect::to("/ui/overview").into_response();
            response.headers_mut().insert(
                header::SET_COOKIE,
                session::session_cookie(&headers, &secret),
            );
            response
        }
        Err(error) => store_error(&error),
    }
}

/// Ends the session (its row is deleted, so the cookie is worthless even if kept).
pub async fn sign_out(State(state): State<AppState>, headers: HeaderMap, body: Bytes) -> Response {
    match session::current(&headers, &state).await {
        Ok(Some(session)) => {
            // Sign-out is harmless, but a cross-site form must not do it either.
            if let Err(refused) = (Viewer { session }).check_csrf(&FormData::parse(&body)) {
                return refused;
            }
            if let Some(secret) = session::cookie(&headers, session::SESSION_COOKIE)
                && let Err(error) = state.store().delete_ui_session(secret).await
            {
                return store_error(&error);
            }
        }
        Ok(None) => {}
        Err(response) => return response,
    }
    let mut response = Redirect::to("/ui/login").into_response();
    response
        .headers_mut()
        .insert(header::SET_COOKIE, session::cleared_cookie());
    response
}

/// An admin session acts for another tenant from now on.
pub async fn switch_tenant(State(state): State<AppState>, viewer: Viewer, body: Bytes) -> Response {
    let form = FormData::parse(&body);
    // Acting for another tenant changes nothing stored: read-only admins may switch.
    if let Err(refused) = viewer.check_csrf(&form) {
        return refused;
    }
    if let Err(refused) = viewer.must_be_admin("Switching tenants") {
        return refused;
    }
    let tenant = form.get("tenant").unwrap_or_default();
    match state
        .store()
        .set_ui_session_tenant(viewer.session.id, tenant)
        .await
    {
        Ok(()) => Redirect::to("/ui/overview").into_response(),
        Err(error) => store_error(&error),
    }
}
