//! Offline unit tests (no server): URL and query building, error decoding, durations and
//! wait chunks, the string enums, the enqueue builder's JSON, the generated layer against
//! `clients/openapi.json`, and the client's loops against a scripted local HTTP server.

mod document;
mod errors;
mod mock_server;
mod requests;
mod scripted;
mod urls;
mod waiting;
