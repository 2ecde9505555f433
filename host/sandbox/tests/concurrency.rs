//! Fresh instance per attempt, at concurrency: no state leaks between jobs.

mod common;

use common::*;
use futures::future::join_all;
use sluice_sandbox::CancellationToken;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn counter_is_always_one() {
    let sb = sandbox(); // max_concurrency 4
    let counter = prepare(&sb, "counter");
    let runs = (0..20).map(|i| {
        let (sb, counter) = (sb.clone(), counter.clone());
        async move {
            let mut j = job("");
            j.id = i;
            sb.run(&counter, j, &limits(), CancellationToken::new())
                .await
        }
    });
    let reports = join_all(runs).await;
    assert_eq!(reports.len(), 20);
    for report in &reports {
        assert_eq!(output(report), b"1");
        assert!(report.instantiate_time <= report.elapsed);
    }
}
