//! The connector fits wasmtime's `WasiHttpHooks`: the connector, the send future, the
//! response body and the io future are `Send` (the connector `Sync` too).

use super::*;

fn assert_send<T: Send>(_: &T) {}
fn assert_send_sync<T: Send + Sync>() {}

#[test]
fn the_connector_fits_wasmtime_hooks() {
    // `WasiHttpHooks::send_request` returns `Box<dyn Future + Send>`: the send future,
    // the body and the io future must all be Send.
    assert_send_sync::<Connector>();
    fn body_is_send<T: Send + 'static>() {}
    body_is_send::<ResponseBody>();
    body_is_send::<IoFuture>();
    let c = Connector::new(ConnectorConfig::default()).unwrap();
    let g = Grant::default();
    let fut = c.send(
        get("http://example.com/"),
        &g,
        Instant::now(),
        RequestTimeouts::default(),
    );
    assert_send(&fut);
}
