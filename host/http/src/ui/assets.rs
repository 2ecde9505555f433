//! The dashboard's two static files, embedded in the binary: nothing is downloaded or
//! built at build time, and nothing is read from disk at run time.
//!
//! Owns: `/ui/assets/{name}`. Must not: serve anything but these two files.

use axum::extract::Path;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};

const CSS: &str = include_str!("assets/ui.css");
const JS: &str = include_str!("assets/ui.js");

pub async fn asset(Path(name): Path<String>) -> Response {
    let (body, kind) = match name.as_str() {
        "ui.css" => (CSS, "text/css; charset=utf-8"),
        "ui.js" => (JS, "text/javascript; charset=utf-8"),
        _ => return super::errors::not_found("There is no such asset."),
    };
    let mut response = body.into_response();
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(kind));
    response
}
