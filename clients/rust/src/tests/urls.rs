//! How a call's URL is built: percent-encoded path segments, query pairs, a base URL with
//! a path prefix.

use reqwest::Method;

use crate::generated::JobState;
use crate::transport::{Api, Call, segment};

#[test]
fn path_segments_are_percent_encoded() {
    assert_eq!(segment(&"send-email"), "send-email");
    assert_eq!(segment(&"a b/c?d#e%"), "a%20b%2Fc%3Fd%23e%25");
    assert_eq!(segment(&"é"), "%C3%A9");
    assert_eq!(segment(&42), "42");
}

#[test]
fn query_pairs_are_encoded_and_absent_ones_left_out() {
    let mut call = Call::new(Method::GET, "/v1/jobs".to_owned());
    call.query("state", Some(&JobState::Pending));
    call.query("type", Some(&"send email&more".to_owned()));
    call.query::<i64>("parent", None);
    call.query("limit", Some(&2));
    let url = call.url("http://127.0.0.1:8080").unwrap();
    assert_eq!(
        url.as_str(),
        "http://127.0.0.1:8080/v1/jobs?state=pending&type=send+email%26more&limit=2"
    );
}

#[test]
fn a_list_repeats_its_name() {
    let mut call = Call::new(Method::GET, "/x".to_owned());
    call.query("id", Some(&vec![1_i64, 2]));
    assert_eq!(call.url("http://h").unwrap().query(), Some("id=1&id=2"));
}

#[test]
fn the_base_url_keeps_its_path_prefix_and_drops_its_trailing_slash() {
    let api = Api::new("https://example.com/sluice/", "t").unwrap();
    assert_eq!(api.base_url(), "https://example.com/sluice");
    let call = Call::new(Method::GET, format!("/v1/jobs/{}", segment(&7)));
    assert_eq!(
        call.url(api.base_url()).unwrap().as_str(),
        "https://example.com/sluice/v1/jobs/7"
    );
}

#[test]
fn a_base_url_that_is_not_http_is_refused() {
    for bad in ["127.0.0.1:8080", "ftp://example.com", ""] {
        let error = Api::new(bad, "t").unwrap_err();
        assert!(
            error.to_string().contains("invalid base URL"),
            "{bad}: {error}"
        );
    }
}
