//! [`Client`]: the ergonomic entry point over the generated [`Api`]: one method per thing
//! an application does with jobs (enqueue, get, cancel, retry, signal; `wait` and `list`
//! live in their own modules), each a thin call of one operation.
//!
//! Owns: the client's setup (base URL, token, tenant). Must not: build requests itself
//! (the generated layer does) or retry anything on its own.

use serde_json::Value;

use crate::enqueue::Enqueued;
use crate::error::Error;
use crate::generated::{
    BatchItem, BatchRequest, EnqueueRequest, JobView, SignalRequest, SignalSent,
};
use crate::transport::Api;

/// A client of one Sluice server, acting for one tenant. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Client {
    api: Api,
}

impl Client {
    /// A client of the server at `base_url` (e.g. `http://127.0.0.1:8080`) with `token`
    /// (a tenant's token, `sluice tenants token create`). Fails on a malformed URL.
    pub fn new(base_url: &str, token: &str) -> Result<Self, Error> {
        Ok(Client {
            api: Api::new(base_url, token)?,
        })
    }

    /// A client over an [`Api`] set up by hand (your own `reqwest` client, timeouts).
    pub fn from_api(api: Api) -> Self {
        Client { api }
    }

    /// Acts for `tenant` (sent as `X-Sluice-Tenant`): admin tokens only may name a tenant
    /// other than their own (403 `forbidden` otherwise).
    pub fn with_tenant(self, tenant: impl Into<String>) -> Self {
        Client {
            api: self.api.with_tenant(tenant),
        }
    }

    /// The low-level API: every operation of the document, one request each.
    pub fn api(&self) -> &Api {
        &self.api
    }

    /// Enqueues one job; `created` is false when its idempotency key was taken (the job
    /// is then the one holding it, and nothing was created).
    pub async fn enqueue(&self, job: impl Into<EnqueueRequest>) -> Result<Enqueued, Error> {
        let reply = self.api.enqueue(None, None, &job.into()).await?;
        Ok(Enqueued {
            created: reply.status == 201,
            job: reply.body,
        })
    }

    /// Enqueues 1 to 1000 jobs in one call, all or none: their ids and whether each was
    /// created, in request order.
    pub async fn enqueue_batch<J>(
        &self,
        jobs: impl IntoIterator<Item = J>,
    ) -> Result<Vec<BatchItem>, Error>
    where
        J: Into<EnqueueRequest>,
    {
        let request = BatchRequest {
            jobs: jobs.into_iter().map(Into::into).collect(),
        };
        Ok(self.api.enqueue_batch(None, None, &request).await?.jobs)
    }

    /// One job, with its payload and output (404 `not_found` for a missing job or
    /// another tenant's).
    pub async fn get(&self, id: i64) -> Result<JobView, Error> {
        self.api.get_job(id, &Default::default()).await
    }

    /// Cancels a pending job at once, or asks a running one to stop (409 `conflict` when
    /// it is finished already).
    pub async fn cancel(&self, id: i64) -> Result<JobView, Error> {
        self.api.cancel_job(id).await
    }

    /// Runs a dead or cancelled job again with fresh attempts (409 `conflict` otherwise).
    pub async fn retry(&self, id: i64) -> Result<JobView, Error> {
        self.api.retry_job(id).await
    }

    /// Sends the signal `name` with `payload` to a job (a durable job awaiting it wakes;
    /// otherwise it is kept until the job awaits it).
    pub async fn signal(&self, id: i64, name: &str, payload: Value) -> Result<SignalSent, Error> {
        let body = SignalRequest {
            payload: Some(payload),
        };
        self.api.send_signal(id, name, &body).await
    }
}
