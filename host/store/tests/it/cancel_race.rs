//! Cancelling a job while a worker claims and finishes it: every cancel answers one of
//! the documented outcomes (cancelled, cancel requested, or a refusal naming a finished
//! state), never a database error, and no row breaks the schema's checks.

use std::time::Duration;

use sluice_store::{CancelResult, Completion, JobState, StoreError};
use sqlx::PgPool;

use crate::common::*;

#[sqlx::test(migrator = "sluice_store::MIGRATOR")]
async fn cancel_racing_a_claim_and_a_completion_answers_cleanly(pool: PgPool) {
    let store = setup(&pool).await;
    for round in 0..150 {
        let id = store.enqueue(&job(&format!("{round}"))).await.unwrap().id;
        let worker = {
            let store = store.clone();
            tokio::spawn(async move {
                let mut claimed = store.claim(&claim_req("w", 1)).await.unwrap();
                if let Some(job) = claimed.pop() {
                    let done = Completion {
                        output: b"1".to_vec(),
                        fuel_used: None,
                        follow_ups: Vec::new(),
                        log: None,
                    };
                    let _ = store.complete(&job.lease, &done).await;
                }
            })
        };
        if round % 2 == 1 {
            tokio::time::sleep(Duration::from_micros(200 * (round % 7))).await;
        }
        match store.cancel(Some(TENANT), id).await {
            Ok(CancelResult::Cancelled | CancelResult::CancelRequested) => {}
            Err(StoreError::IllegalTransition { state, .. }) => {
                assert!(state.is_terminal(), "round {round}: refused for {state}")
            }
            Err(other) => panic!("round {round}: cancel failed: {other:?}"),
        }
        worker.await.unwrap();
        // Whatever happened, the job ends finished or running with its request.
        let job = store.get(None, id).await.unwrap().unwrap();
        assert!(
            job.state.is_terminal() || job.state == JobState::Running,
            "round {round}: {:?}",
            job.state
        );
    }
}
