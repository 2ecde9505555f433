//! Completions that carry follow-up jobs: the jobs a successful attempt asked for
//! (`sluice:task/jobs.enqueue`) are inserted in the same transaction as the fenced
//! completion, so they exist if and only if the completion was written.
//!
//! Owns: that transaction, each child's parent (the completed job and the child's
//! place among its siblings, unique per `jobs_parent_uidx`), and what happens when a
//! child cannot be inserted (its type was deleted since the guest asked, its payload no
//! longer fits): that parent's completion is not written (`FollowUpRefused`, the job
//! stays running for the caller to fail the attempt) and the rest of the batch is
//! written without it. Must not: write a child for a parent whose lease did not hold
//! (a stale or replayed completion matches no row, so it creates nothing), or insert
//! jobs any other way than `enqueue_many_on` (the one INSERT, `sluice.enqueue_jobs`).
//! Children of contract 0.3 (with reserved ids) and of suspensions are inserted once
//! ([`Store::insert_children_once`]): a durable run that suspended inserted those it had
//! asked for, and the replaying run that completes asks for them again. One whose
//! idempotency key named a job already is not inserted: its reserved id becomes an alias
//! of that job (`sluice.follow_up_aliases`, migration 0029), which `await-jobs` reads.
//! Children of the reserved type `sluice.event` are events, not jobs: the same
//! transaction sends them with `sluice.send_event` (the transactional outbox), so a
//! task's event exists if and only if its attempt's completion was written.

use std::collections::{HashMap, HashSet};

use crate::enqueue::{NewJob, Parent};
use crate::finish::{CompleteColumns, Completion};
use crate::types::Lease;
use crate::webhook_deliveries::{EVENT_JOB_TYPE, EventRequest, send_event_on};
use crate::{Store, StoreError};

/// The children of some parents that exist already (finish/existing_children.sql).
const EXISTING_CHILDREN: &str = include_str!("../sql/finish/existing_children.sql");

/// Reserved ids that stand for the job their key named (finish/insert_aliases.sql).
const INSERT_ALIASES: &str = include_str!("../sql/finish/insert_aliases.sql");

impl Store {
    /// Inserts the follow-up jobs (each with its parent set) that do not exist yet, and
    /// sends the events among them keyed by parent and place, so that each is created
    /// once however often it is asked for: a durable run that suspended inserted those
    /// it had asked for, and the next run, replaying, asks for them again (its
    /// suspension or completion comes here). In the caller's transaction, which holds
    /// the parents' rows.
    pub(crate) async fn insert_children_once(
        &self,
        tx: &mut sqlx::PgConnection,
        follow_ups: &[NewJob],
    ) -> Result<(), StoreError> {
        if follow_ups.is_empty() {
            return Ok(());
        }
        let (events, children): (Vec<&NewJob>, Vec<&NewJob>) = follow_ups
            .iter()
            .partition(|child| child.job_type == EVENT_JOB_TYPE);
        let events: Vec<NewJob> = events.into_iter().map(keyed_event).collect();
        send_events(&mut *tx, &events)
            .await
            .map_err(|(_, error)| error)?;
        let parents: Vec<i64> = children
            .iter()
            .filter_map(|child| child.parent.map(|p| p.id))
            .collect::<HashSet<i64>>()
            .into_iter()
            .collect();
        let existing: HashSet<(i64, i32)> = sqlx::query_as(EXISTING_CHILDREN)
            .bind(&parents)
            .fetch_all(&mut *tx)
            .await?
            .into_iter()
            .collect();
        let mut seen = HashSet::new();
        let new: Vec<NewJob> = children
            .into_iter()
            .filter(|child| {
                let at = child.parent.map_or((0, -1), |p| (p.id, p.seq));
                !existing.contains(&at) && seen.insert(at)
            })
            .cloned()
            .collect();
        if new.is_empty() {
            return Ok(());
        }
        let enqueued = self.enqueue_many_on(&mut *tx, &new).await?;
        // A reserved id whose key folded it onto another job stands for that job.
        let (mut ids, mut parents, mut places, mut holders) = (vec![], vec![], vec![], vec![]);
        for (child, done) in new.iter().zip(&enqueued) {
            if let (Some(id), Some(parent)) = (child.id, child.parent)
                && done.id != id
            {
                ids.push(id);
                parents.push(parent.id);
                places.push(parent.seq);
                holders.push(done.id);
            }
        }
        if !ids.is_empty() {
            sqlx::query(INSERT_ALIASES)
                .bind(&ids)
                .bind(&parents)
                .bind(&places)
                .bind(&holders)
                .execute(&mut *tx)
                .await?;
        }
        Ok(())
    }

    /// `complete_many` for a batch where some completion has follow-up jobs.
    pub(crate) async fn complete_with_follow_ups(
        &self,
        outcomes: &[(Lease, Completion)],
    ) -> Result<Vec<Result<(), StoreError>>, StoreError> {
        let mut refused: HashMap<i64, String> = HashMap::new();
        for (lease, done) in outcomes {
            for (seq, child) in done.follow_ups.iter().enumerate() {
                if let Err(error) = child.validate() {
                    refused.insert(lease.job_id, format!("follow-up job {seq}: {error}"));
                    break;
                }
            }
        }
        let reserving: HashSet<i64> = outcomes
            .iter()
            .filter(|(_, done)| done.follow_ups.iter().any(|child| child.id.is_some()))
            .map(|(lease, _)| lease.job_id)
            .collect();
        let mut applied = HashSet::new();
        loop {
            let live: Vec<&(Lease, Completion)> = outcomes
                .iter()
                .filter(|(lease, _)| !refused.contains_key(&lease.job_id))
                .collect();
            if live.is_empty() {
                break;
            }
            let columns = CompleteColumns::of(live.iter().copied())?;
            let mut tx = self.pool.begin().await?;
            let written: HashSet<i64> = columns
                .query()
                .fetch_all(&mut *tx)
                .await?
                .into_iter()
                .collect();
            // Children of contract 0.3 (reserved ids) may exist already: a durable run that
            // suspended inserted those it had asked for, and this completion asks again.
            let (once, plain): (Vec<NewJob>, Vec<NewJob>) = children_of(&live, &written)
                .into_iter()
                .partition(|child| child.parent.is_some_and(|p| reserving.contains(&p.id)));
            if let Err(error) = self.insert_children_once(&mut tx, &once).await {
                tx.rollback().await?;
                let culprits = culprits(&live, &error);
                if culprits.is_empty() {
                    return Err(error);
                }
                refused.extend(culprits.into_iter().map(|id| (id, error.to_string())));
                continue;
            }
            let (events, children): (Vec<NewJob>, Vec<NewJob>) = plain
                .into_iter()
                .partition(|child| child.job_type == EVENT_JOB_TYPE);
            if let Err((parent, error)) = send_events(&mut tx, &events).await {
                tx.rollback().await?;
                if error.is_transient() {
                    return Err(error);
                }
                refused.insert(parent, error.to_string());
                continue;
            }
            match self.enqueue_many_on(&mut tx, &children).await {
                Ok(_) => {
                    tx.commit().await?;
                    applied = written;
                    break;
                }
                Err(error) => {
                    tx.rollback().await?;
                    let culprits = culprits(&live, &error);
                    if culprits.is_empty() {
                        return Err(error);
                    }
                    for job_id in culprits {
                        refused.insert(job_id, error.to_string());
                    }
                }
            }
        }
        Ok(outcomes
            .iter()
            .map(|(lease, _)| {
                let job_id = lease.job_id;
                if let Some(message) = refused.get(&job_id) {
                    Err(StoreError::FollowUpRefused {
                        job_id,
                        message: message.clone(),
                    })
                } else if applied.contains(&job_id) {
                    Ok(())
                } else {
                    Err(StoreError::LeaseLost { job_id })
                }
            })
            .collect())
    }
}

/// Sends the events that completions asked for (children of type [`EVENT_JOB_TYPE`]),
/// in the completions' transaction; the first failure names its parent.
pub(crate) async fn send_events(
    tx: &mut sqlx::PgConnection,
    events: &[NewJob],
) -> Result<(), (i64, StoreError)> {
    for child in events {
        let parent = child.parent.as_ref().map_or(0, |p| p.id);
        let request = EventRequest::parse(&child.payload).map_err(|e| (parent, e))?;
        send_event_on(
            tx,
            &child.tenant,
            &request.event_type,
            &request.payload,
            request.idempotency_key.as_deref(),
            child.trace.as_ref(),
        )
        .await
        .map_err(|e| (parent, e))?;
    }
    Ok(())
}

/// An event follow-up with an idempotency key derived from its parent and place when it
/// has none, so that an event asked for again by a replayed run is sent once.
fn keyed_event(child: &NewJob) -> NewJob {
    let mut child = child.clone();
    let Some(parent) = child.parent else {
        return child;
    };
    if let Ok(mut value) = serde_json::from_slice::<serde_json::Value>(&child.payload)
        && let Some(object) = value.as_object_mut()
        && object
            .get("idempotency_key")
            .is_none_or(serde_json::Value::is_null)
    {
        object.insert(
            "idempotency_key".into(),
            format!("sluice.follow-up/{}/{}", parent.id, parent.seq).into(),
        );
        if let Ok(bytes) = serde_json::to_vec(&value) {
            child.payload = bytes;
        }
    }
    child
}

/// The follow-up jobs of the completions that were written, each with its parent.
fn children_of(live: &[&(Lease, Completion)], written: &HashSet<i64>) -> Vec<NewJob> {
    let mut children = Vec::new();
    for (lease, done) in live {
        if !written.contains(&lease.job_id) {
            continue;
        }
        for (seq, child) in done.follow_ups.iter().enumerate() {
            let mut child = child.clone();
            child.parent = Some(Parent {
                id: lease.job_id,
                seq: i32::try_from(seq).unwrap_or(i32::MAX),
            });
            children.push(child);
        }
    }
    children
}

/// The parents whose follow-ups caused `error` (none: the error is not about them).
fn culprits(live: &[&(Lease, Completion)], error: &StoreError) -> Vec<i64> {
    let caused = |child: &NewJob| match error {
        StoreError::UnknownJobType { tenant, job_type } => {
            child.tenant == *tenant && child.job_type == *job_type
        }
        StoreError::UnknownTenant(tenant) => child.tenant == *tenant,
        StoreError::PayloadTooLarge { limit, .. } => child.payload.len() as i64 > *limit,
        _ => false,
    };
    live.iter()
        .filter(|(_, done)| done.follow_ups.iter().any(caused))
        .map(|(lease, _)| lease.job_id)
        .collect()
}
