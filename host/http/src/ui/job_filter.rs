//! The jobs list's filter: the query fields (`state`, `type`, `priority`, `id`, `key`,
//! `parent`, `created_from`, `created_to`, `payload`) parsed into the store's
//! [`JobSearch`], with an error naming each field that does not parse.
//!
//! Owns: the field names and their parsing. Must not: query anything.

use chrono::{DateTime, NaiveDate, NaiveDateTime, Utc};
use sluice_store::JobSearch;

use super::forms::FormData;
use super::views::parse_state;

/// The filter fields, in form order.
pub const FIELDS: [&str; 9] = [
    "state",
    "type",
    "priority",
    "id",
    "key",
    "parent",
    "created_from",
    "created_to",
    "payload",
];

/// A filter as typed (kept to fill the form again) and as parsed.
#[derive(Debug, Default)]
pub struct Filter {
    /// Non-empty fields as sent, in [`FIELDS`] order.
    pub fields: Vec<(&'static str, String)>,
    pub search: JobSearch,
    /// One message per field that did not parse.
    pub errors: Vec<String>,
}

impl Filter {
    /// The filter in `form` (a query string or a posted form), for `tenant`.
    pub fn parse(form: &FormData, tenant: &str) -> Filter {
        let mut filter = Filter {
            search: JobSearch {
                tenant: tenant.to_owned(),
                ..JobSearch::default()
            },
            ..Filter::default()
        };
        for name in FIELDS {
            let values: Vec<&str> = form
                .all(name)
                .map(str::trim)
                .filter(|v| !v.is_empty())
                .collect();
            for value in values {
                filter.fields.push((name, value.to_owned()));
                if let Err(error) = filter.apply(name, value) {
                    filter.errors.push(format!("{name}: {error}"));
                }
            }
        }
        filter
    }

    fn apply(&mut self, name: &str, value: &str) -> Result<(), String> {
        let search = &mut self.search;
        match name {
            "state" => search.states.push(parse_state(value).ok_or_else(|| {
                format!("{value:?} is not a state (pending, running, waiting, completed, dead, cancelled)")
            })?),
            "type" => search.job_type = Some(value.to_owned()),
            "priority" => search.priority = Some(number(value)?),
            "id" => search.id = Some(number(value)?),
            "key" => search.idempotency_key = Some(value.to_owned()),
            "parent" => search.parent = Some(number(value)?),
            "created_from" => search.created_from = Some(instant(value)?),
            "created_to" => search.created_to = Some(instant(value)?),
            "payload" => {
                let json: serde_json::Value = serde_json::from_str(value)
                    .map_err(|e| format!("not JSON ({e}); e.g. {{\"customer\": 42}}"))?;
                if !json.is_object() && !json.is_array() {
                    return Err("give a JSON object or array the payload must contain".into());
                }
                // The store's rule: jsonb, which the filter is compared as, cannot hold it.
                if let Some(at) = sluice_store::json_nul_at(&json) {
                    return Err(format!(
                        "holds a NUL character (\\u0000) at {at}, which no payload can be searched for"
                    ));
                }
                search.payload_contains = Some(json);
            }
            _ => {}
        }
        Ok(())
    }

    /// The first value of field `name`, as typed.
    pub fn value(&self, name: &str) -> &str {
        self.fields
            .iter()
            .find(|(n, _)| *n == name)
            .map_or("", |(_, v)| v.as_str())
    }

    /// True when the filter has state `label`.
    pub fn has_state(&self, label: &str) -> bool {
        self.fields.iter().any(|(n, v)| *n == "state" && v == label)
    }

    /// The filter as query pairs (for links and hidden fields).
    pub fn pairs(&self) -> impl Iterator<Item = (&str, &str)> {
        self.fields.iter().map(|(n, v)| (*n, v.as_str()))
    }
}

fn number<T: std::str::FromStr>(value: &str) -> Result<T, String> {
    value
        .parse()
        .map_err(|_| format!("{value:?} is not a whole number"))
}

/// A point in time: RFC 3339 (`2026-12-03T16:00:00Z`), or `YYYY-MM-DD[ T]HH:MM[:SS]` or
/// `YYYY-MM-DD`, read as UTC.
pub fn instant(value: &str) -> Result<DateTime<Utc>, String> {
    if let Ok(at) = DateTime::parse_from_rfc3339(value) {
        return Ok(at.with_timezone(&Utc));
    }
    for format in [
        "%Y-%m-%dT%H:%M:%S",
        "%Y-%m-%dT%H:%M",
        "%Y-%m-%d %H:%M:%S",
        "%Y-%m-%d %H:%M",
    ] {
        if let Ok(at) = NaiveDateTime::parse_from_str(value, format) {
            return Ok(at.and_utc());
        }
    }
    NaiveDate::parse_from_str(value, "%Y-%m-%d")
        .map(|day| day.and_hms_opt(0, 0, 0).expect("midnight exists").and_utc())
        .map_err(|_| {
            format!("{value:?} is not a time (2026-12-03T16:00:00Z or 2026-12-03 16:00, UTC)")
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Bytes;

    #[test]
    fn fields_parse_and_errors_name_the_field() {
        let form = FormData::parse(&Bytes::from_static(
            b"state=dead&state=cancelled&type=echo&priority=x&created_from=2026-12-03+16%3A00&payload=%7B%22a%22%3A1%7D",
        ));
        let filter = Filter::parse(&form, "acme");
        assert_eq!(filter.search.tenant, "acme");
        assert_eq!(filter.search.states.len(), 2);
        assert_eq!(filter.search.job_type.as_deref(), Some("echo"));
        assert_eq!(filter.errors, ["priority: \"x\" is not a whole number"]);
        assert_eq!(
            filter.search.created_from.unwrap().to_rfc3339(),
            "2026-12-03T16:00:00+00:00"
        );
        assert_eq!(
            filter.search.payload_contains,
            Some(serde_json::json!({"a": 1}))
        );
        assert!(filter.has_state("dead") && !filter.has_state("pending"));

        let bad = Filter::parse(
            &FormData::parse(&Bytes::from_static(b"payload=3&state=nope")),
            "t",
        );
        assert_eq!(bad.errors.len(), 2, "{:?}", bad.errors);
        let nul = Filter::parse(
            &FormData::parse(&Bytes::from_static(
                b"payload=%7B%22a%22%3A%22%5Cu0000%22%7D",
            )),
            "t",
        );
        assert_eq!(
            nul.errors,
            [
                "payload: holds a NUL character (\\u0000) at $.a, which no payload can be searched for"
            ]
        );
        assert!(instant("2026-12-03").is_ok() && instant("yesterday").is_err());
    }
}
