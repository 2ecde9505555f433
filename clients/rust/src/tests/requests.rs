//! The JSON the client sends and reads: the enqueue builder, absent vs null fields, the
//! string enums' fallback, the list parameters.

use std::time::Duration;

use chrono::{TimeZone, Utc};
use serde_json::json;

use crate::enqueue::Enqueue;
use crate::generated::{EnqueueRequest, JobState, KeyScope, Priority, PriorityLabel};
use crate::list::ListParams;

#[test]
fn an_enqueue_sends_only_what_was_set() {
    let request: EnqueueRequest = Enqueue::new("echo", json!({"n": 1})).into();
    assert_eq!(
        serde_json::to_value(&request).unwrap(),
        json!({"type": "echo", "payload": {"n": 1}})
    );
}

#[test]
fn every_enqueue_option_has_its_wire_form() {
    let request: EnqueueRequest = Enqueue::new("echo", json!(null))
        .priority(PriorityLabel::High)
        .delay(Duration::from_secs(3600))
        .max_attempts(3)
        .idempotency_key("k-1")
        .key_scope(KeyScope::Unfinished)
        .concurrency_key("acct-7")
        .into();
    assert_eq!(
        serde_json::to_value(&request).unwrap(),
        json!({
            "type": "echo", "payload": null, "priority": "high", "delay": "1h",
            "max_attempts": 3, "idempotency_key": "k-1", "key_scope": "unfinished",
            "concurrency_key": "acct-7",
        })
    );
}

#[test]
fn run_at_and_delay_replace_each_other_and_a_priority_may_be_an_integer() {
    let at = Utc.with_ymd_and_hms(2030, 1, 2, 3, 4, 5).unwrap();
    let request: EnqueueRequest = Enqueue::new("echo", json!({}))
        .delay(Duration::from_millis(250))
        .run_at(at)
        .priority(-5)
        .into();
    let sent = serde_json::to_value(&request).unwrap();
    assert_eq!(sent["run_at"], json!("2030-01-02T03:04:05Z"));
    assert_eq!(sent.get("delay"), None);
    assert_eq!(sent["priority"], json!(-5));
    let request: EnqueueRequest = Enqueue::new("echo", json!({}))
        .run_at(at)
        .delay(Duration::from_millis(250))
        .into();
    let sent = serde_json::to_value(&request).unwrap();
    assert_eq!(sent["delay"], json!("250ms"));
    assert_eq!(sent.get("run_at"), None);
}

#[test]
fn absent_null_and_set_fields_read_back_apart() {
    let absent: EnqueueRequest = serde_json::from_value(json!({"type": "t"})).unwrap();
    assert_eq!(absent.max_attempts, None);
    let null: EnqueueRequest =
        serde_json::from_value(json!({"type": "t", "max_attempts": null})).unwrap();
    assert_eq!(null.max_attempts, Some(None));
    let set: EnqueueRequest =
        serde_json::from_value(json!({"type": "t", "max_attempts": 2})).unwrap();
    assert_eq!(set.max_attempts, Some(Some(2)));
    assert_eq!(
        serde_json::to_value(&null).unwrap(),
        json!({"type": "t", "max_attempts": null})
    );
}

#[test]
fn a_priority_reads_as_a_label_or_an_integer() {
    let label: Priority = serde_json::from_value(json!("critical")).unwrap();
    assert_eq!(label, Priority::Label(PriorityLabel::Critical));
    let number: Priority = serde_json::from_value(json!(25)).unwrap();
    assert_eq!(number, Priority::from(25));
}

#[test]
fn an_unknown_state_is_kept_and_written_back_as_is() {
    let state: JobState = serde_json::from_value(json!("hibernating")).unwrap();
    assert_eq!(state, JobState::Other("hibernating".to_owned()));
    assert_eq!(serde_json::to_value(&state).unwrap(), json!("hibernating"));
    assert_eq!(JobState::from("dead"), JobState::Dead);
    assert_eq!(JobState::Cancelled.to_string(), "cancelled");
}

#[test]
fn list_params_build_the_query() {
    let params = ListParams::default()
        .state(JobState::Pending)
        .job_type("echo")
        .parent(7)
        .limit(1)
        .cursor("42");
    assert_eq!(params.state, Some(JobState::Pending));
    assert_eq!(params.r#type.as_deref(), Some("echo"));
    assert_eq!(params.parent, Some(7));
    assert_eq!(params.limit, Some(1));
    assert_eq!(params.cursor.as_deref(), Some("42"));
}
