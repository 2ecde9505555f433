//! How an error answer becomes an [`Error`]: the API's body, an unknown code kept, a body
//! that is not the API's, `Retry-After`.

use reqwest::header::{HeaderMap, HeaderValue, RETRY_AFTER};

use crate::error::Error;
use crate::generated::ErrorCode;
use crate::transport::api_error;

fn decode(status: u16, body: &str, retry_after: Option<&str>) -> Error {
    let mut headers = HeaderMap::new();
    if let Some(value) = retry_after {
        headers.insert(RETRY_AFTER, HeaderValue::from_str(value).unwrap());
    }
    api_error(status, &headers, body.as_bytes())
}

#[test]
fn a_known_code_is_its_variant() {
    let error = decode(
        404,
        r#"{"error": {"code": "job_type_not_found", "message": "unknown job type \"x\""}}"#,
        None,
    );
    match &error {
        Error::Api {
            status,
            code,
            message,
            retry_after,
        } => {
            assert_eq!(*status, 404);
            assert_eq!(*code, ErrorCode::JobTypeNotFound);
            assert_eq!(message, "unknown job type \"x\"");
            assert_eq!(*retry_after, None);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(error.code(), Some(&ErrorCode::JobTypeNotFound));
    assert_eq!(error.status(), Some(404));
    assert!(!error.is_retryable());
    assert_eq!(
        error.to_string(),
        "HTTP 404 job_type_not_found: unknown job type \"x\""
    );
}

#[test]
fn an_unknown_code_is_kept() {
    let error = decode(
        418,
        r#"{"error": {"code": "teapot", "message": "short and stout"}}"#,
        None,
    );
    assert_eq!(error.code(), Some(&ErrorCode::Other("teapot".to_owned())));
    assert_eq!(error.code().unwrap().as_str(), "teapot");
}

#[test]
fn retry_after_is_read_in_seconds() {
    let error = decode(
        429,
        r#"{"error": {"code": "rate_limited", "message": "slow down"}}"#,
        Some("3"),
    );
    assert_eq!(error.retry_after(), Some(std::time::Duration::from_secs(3)));
    assert!(error.is_retryable());
    assert!(matches!(
        error,
        Error::Api {
            retry_after: Some(3),
            ..
        }
    ));
}

#[test]
fn a_body_that_is_not_the_apis_keeps_its_start_as_the_message() {
    let error = decode(502, "<html>bad gateway</html>", None);
    match error {
        Error::Api { code, message, .. } => {
            assert_eq!(code, ErrorCode::Other(String::new()));
            assert_eq!(message, "<html>bad gateway</html>");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn every_error_code_round_trips_through_json() {
    for code in ErrorCode::KNOWN {
        let json = serde_json::to_string(code).unwrap();
        assert_eq!(json, format!("\"{}\"", code.as_str()));
        assert_eq!(&serde_json::from_str::<ErrorCode>(&json).unwrap(), code);
    }
}
