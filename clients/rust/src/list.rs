//! Listing jobs: [`ListParams`] (the generated query of `GET /v1/jobs`, with builder
//! methods), [`Client::list`] for one page, [`Client::pages`] to walk every page by its
//! `next_cursor`, and [`Client::list_all`] to collect them.
//!
//! Owns: the paging loop. Must not: filter anything itself (the server does).

use crate::client::Client;
use crate::error::Error;
use crate::generated::{JobListItem, JobPage, JobState, ListJobsQuery};

/// Filters and paging of [`Client::list`]: `ListParams::default().state(..).limit(..)`.
pub type ListParams = ListJobsQuery;

impl ListJobsQuery {
    /// Only jobs in this state.
    pub fn state(mut self, state: JobState) -> Self {
        self.state = Some(state);
        self
    }

    /// Only jobs of this type.
    pub fn job_type(mut self, job_type: impl Into<String>) -> Self {
        self.r#type = Some(job_type.into());
        self
    }

    /// Only the follow-up jobs of this job.
    pub fn parent(mut self, parent: i64) -> Self {
        self.parent = Some(parent);
        self
    }

    /// Jobs per page, 1 to 1000 (default 100).
    pub fn limit(mut self, limit: u32) -> Self {
        self.limit = Some(limit.try_into().unwrap_or(1000));
        self
    }

    /// Starts after this cursor (the `next_cursor` of the previous page).
    pub fn cursor(mut self, cursor: impl Into<String>) -> Self {
        self.cursor = Some(cursor.into());
        self
    }
}

impl Client {
    /// One page of the tenant's jobs, newest first; `next_cursor` is set when there may
    /// be more.
    pub async fn list(&self, params: &ListParams) -> Result<JobPage, Error> {
        self.api().list_jobs(params).await
    }

    /// Every page of a listing, from `params.cursor` on (from the newest without one):
    /// `while let Some(page) = pages.next_page().await { ... }`.
    pub fn pages(&self, params: ListParams) -> Pages<'_> {
        Pages {
            client: self,
            params,
            done: false,
        }
    }

    /// Every job a listing has, all pages read in turn.
    pub async fn list_all(&self, params: ListParams) -> Result<Vec<JobListItem>, Error> {
        let mut pages = self.pages(params);
        let mut jobs = Vec::new();
        while let Some(page) = pages.next_page().await {
            jobs.extend(page?.jobs);
        }
        Ok(jobs)
    }
}

/// The pages of a listing, read one request at a time ([`Client::pages`]).
#[derive(Debug)]
pub struct Pages<'a> {
    client: &'a Client,
    params: ListParams,
    done: bool,
}

impl Pages<'_> {
    /// The next page, `None` after the last one (or after an error).
    pub async fn next_page(&mut self) -> Option<Result<JobPage, Error>> {
        if self.done {
            return None;
        }
        let page = self.client.list(&self.params).await;
        match &page {
            Ok(JobPage {
                next_cursor: Some(cursor),
                ..
            }) => self.params.cursor = Some(cursor.clone()),
            _ => self.done = true,
        }
        Some(page)
    }
}
