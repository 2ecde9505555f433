//! What every dashboard page's HTML starts with (`<head>`), and the bare page: one
//! outside the signed-in shell (sign-in, errors).
//!
//! Owns: the page head and the bare frame. Must not: fetch data or know who is signed in
//! (`layout` frames signed-in pages).

use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Response};
use maud::{DOCTYPE, Markup, html};

/// `<head>` of every page.
pub fn head(title: &str) -> Markup {
    html! {
        head {
            meta charset="utf-8";
            meta name="viewport" content="width=device-width, initial-scale=1";
            title { (title) " · Sluice" }
            link rel="stylesheet" href="/ui/assets/ui.css";
            script src="/ui/assets/ui.js" defer {}
        }
    }
}

/// A page outside the signed-in shell (sign-in, errors).
pub fn bare_page(status: StatusCode, title: &str, body: Markup) -> Response {
    let markup = html! {
        (DOCTYPE)
        html lang="en" {
            (head(title))
            body.bare {
                main {
                    h1 { (title) }
                    (body)
                    p { a href="/ui/overview" { "Back to the dashboard" } }
                }
            }
        }
    };
    (status, Html(markup.into_string())).into_response()
}
