//! The page shell every signed-in dashboard page shares (navigation, who is signed in,
//! sign out, the live-refresh switch), and the security headers of every `/ui` answer.
//!
//! Owns: how a signed-in page is framed. Must not: fetch data. Pages outside the shell
//! are `bare`'s, error pages `errors`'.

use axum::http::{HeaderValue, header};
use axum::response::{Html, IntoResponse, Response};
use maud::{DOCTYPE, Markup, html};

use super::bare::head;
use super::session::Viewer;

/// Which navigation entry a page belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Nav {
    Overview,
    Jobs,
    Types,
    Schedules,
    Usage,
    Workers,
    Tenants,
}

const ENTRIES: [(Nav, &str, &str, &str, bool); 7] = [
    (
        Nav::Overview,
        "nav-overview",
        "/ui/overview",
        "Overview",
        false,
    ),
    (Nav::Jobs, "nav-jobs", "/ui/jobs", "Jobs", false),
    (Nav::Types, "nav-types", "/ui/types", "Job types", false),
    (
        Nav::Schedules,
        "nav-schedules",
        "/ui/schedules",
        "Schedules",
        false,
    ),
    (Nav::Usage, "nav-usage", "/ui/usage", "Usage", false),
    (Nav::Workers, "nav-workers", "/ui/workers", "Workers", true),
    (Nav::Tenants, "nav-tenants", "/ui/tenants", "Tenants", true),
];

/// A page of the signed-in dashboard. `live` pages refresh themselves every 2 s (with a
/// pause switch) when JavaScript runs.
pub fn page(viewer: &Viewer, current: Nav, title: &str, live: bool, body: Markup) -> Response {
    let markup = html! {
        (DOCTYPE)
        html lang="en" {
            (head(title))
            body {
                header {
                    a.brand href="/ui/overview" { "Sluice" }
                    nav {
                        @for (nav, id, href, label, admin_only) in ENTRIES {
                            @if !admin_only || viewer.admin() {
                                a id=(id) href=(href) class=[(nav == current).then_some("current")] { (label) }
                            }
                        }
                    }
                    div.who {
                        span #acting-tenant title="the tenant this session acts for" { (viewer.tenant()) }
                        @if viewer.admin() { span.badge { "admin" } }
                        @if !viewer.can_write() { span.badge.read-only #read-only-badge { "read-only" } }
                        @if live {
                            button #live-toggle type="button" hidden { "Pause live updates" }
                        }
                        form #logout method="post" action="/ui/logout" {
                            input type="hidden" name="csrf" value=(viewer.csrf());
                            button #sign-out type="submit" { "Sign out" }
                        }
                    }
                }
                main data-live=[live.then_some("2000")] {
                    h1 { (title) }
                    (body)
                }
            }
        }
    };
    Html(markup.into_string()).into_response()
}

/// Headers on every `/ui` answer: no caching of tenant data, no framing, and a content
/// policy that allows only this server's own script, styles and forms.
pub async fn security_headers(mut response: Response) -> Response {
    let headers = response.headers_mut();
    let set = |headers: &mut axum::http::HeaderMap, name, value| {
        headers.insert(name, HeaderValue::from_static(value));
    };
    set(headers, header::CACHE_CONTROL, "no-store");
    set(headers, header::X_FRAME_OPTIONS, "DENY");
    set(headers, header::X_CONTENT_TYPE_OPTIONS, "nosniff");
    set(headers, header::REFERRER_POLICY, "same-origin");
    set(
        headers,
        header::CONTENT_SECURITY_POLICY,
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
         connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    );
    response
}
