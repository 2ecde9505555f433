//! The dashboard's error pages: a status with a title and a message, 404s, and a store
//! error as a page.
//!
//! Owns: how errors look and which store errors are the caller's. Must not: show
//! internals (a database failure is logged, the page says only that it failed).

use axum::http::StatusCode;
use axum::response::Response;
use maud::html;
use sluice_store::StoreError;

use super::bare::bare_page;

/// An error page: the status, a title and what went wrong.
pub fn error_page(status: StatusCode, title: &str, message: &str) -> Response {
    bare_page(status, title, html! { p.error { (message) } })
}

/// 404 for anything not found (another tenant's job looks exactly like a missing one).
pub fn not_found(what: &str) -> Response {
    error_page(StatusCode::NOT_FOUND, "Not found", what)
}

/// The fallback of `/ui`.
pub async fn not_found_page() -> Response {
    not_found("There is no dashboard page at this address.")
}

/// A store error as a page: bad input is the caller's (400, with the store's message),
/// anything else is ours (500, logged, without internals).
pub fn store_error(error: &StoreError) -> Response {
    match error {
        StoreError::InvalidInput { .. }
        | StoreError::Conflict { .. }
        | StoreError::IllegalTransition { .. }
        | StoreError::UnknownJobType { .. } => {
            error_page(StatusCode::BAD_REQUEST, "Refused", &error.to_string())
        }
        StoreError::NotFound { .. } | StoreError::UnknownTenant(_) => {
            error_page(StatusCode::NOT_FOUND, "Not found", &error.to_string())
        }
        _ => {
            tracing::error!(%error, "dashboard request failed");
            error_page(
                StatusCode::INTERNAL_SERVER_ERROR,
                "Something went wrong",
                "The database call failed; the server log has the details.",
            )
        }
    }
}
