//! Unit tests of the follow-up buffer: its caps, its journaled answers, its options.

use super::*;

struct Anything;

impl FollowUpCheck for Anything {
    fn check<'a>(&'a self, _: &'a FollowUp) -> CheckFuture<'a> {
        Box::pin(async { Ok(()) })
    }

    fn reserve_id(&self) -> ReserveFuture<'_> {
        Box::pin(async { Ok(1) })
    }
}

fn grant(max_count: u32, max_bytes: u64) -> FollowUpGrant {
    FollowUpGrant {
        max_count,
        max_bytes,
        check: Arc::new(Anything),
    }
}

fn options() -> EnqueueOptions {
    EnqueueOptions {
        priority: None,
        delay_ms: None,
        run_at_ms: None,
        max_attempts: None,
        idempotency_key: None,
    }
}

#[test]
fn the_caps_refuse_the_job_past_the_count_or_the_bytes() {
    let grant = grant(2, 10);
    let mut buffer = FollowUpBuffer::new(Some(Arc::new(grant.clone())));
    assert!(buffer.admit(&grant, 4).is_ok());
    buffer
        .jobs
        .push(follow_up("a".into(), vec![0; 4], options()).unwrap());
    buffer.bytes = 4;
    let Err(Refused::LimitExceeded(why)) = buffer.admit(&grant, 7) else {
        panic!("11 bytes is over 10");
    };
    assert!(why.contains("max_follow_up_bytes"), "{why}");
    assert!(buffer.admit(&grant, 6).is_ok(), "exactly at the cap");
    buffer
        .jobs
        .push(follow_up("b".into(), vec![0; 6], options()).unwrap());
    let Err(Refused::LimitExceeded(why)) = buffer.admit(&grant, 0) else {
        panic!("a third job is over the count");
    };
    assert!(why.contains("max_follow_ups"), "{why}");
    assert_eq!(buffer.take().len(), 2);
    assert!(buffer.admit(&grant, 0).is_ok(), "taken: empty again");
}

#[test]
fn journaled_answers_come_back_as_themselves() {
    for answer in [
        Ok(None),
        Ok(Some(42)),
        Err(Refused::UnknownJobType("nope".into())),
        Err(Refused::LimitExceeded("cap\nhit".into())),
    ] {
        let (bytes, _) = encode(&answer);
        assert_eq!(decode(&bytes), answer);
    }
}

#[test]
fn a_delay_and_an_instant_together_are_invalid() {
    let mut both = options();
    both.delay_ms = Some(1);
    both.run_at_ms = Some(1);
    let Err(Refused::Invalid(why)) = follow_up("a".into(), Vec::new(), both) else {
        panic!("refused");
    };
    assert!(why.contains("delay-ms"), "{why}");
}
