//! HTML form bodies (`application/x-www-form-urlencoded`), including repeated fields
//! (`ids=1&ids=2`, which axum's `Form` cannot collect).
//!
//! Owns: parsing a body into name/value pairs. Must not: decide what a field means.

use axum::body::Bytes;

/// A parsed form: every (name, value) pair, in order.
#[derive(Debug, Default, Clone)]
pub struct FormData(Vec<(String, String)>);

impl FormData {
    pub fn parse(body: &Bytes) -> FormData {
        FormData(
            form_urlencoded::parse(body)
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect(),
        )
    }

    /// The first value of `name`.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// Every value of `name`.
    pub fn all<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.0
            .iter()
            .filter(move |(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// `pairs` as a query string.
pub fn query_string<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> String {
    let mut out = form_urlencoded::Serializer::new(String::new());
    for (k, v) in pairs {
        out.append_pair(k, v);
    }
    out.finish()
}

/// One value, percent-encoded for a query string or a path segment.
pub fn urlencode(value: &str) -> String {
    form_urlencoded::byte_serialize(value.as_bytes()).collect()
}
