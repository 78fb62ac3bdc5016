//! The per-tenant admission limit through the router (no socket, paused time): 429 with
//! `Retry-After` over the limit, per tenant, counted in `/stats`; registration never limited.

use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use hubload_hub::{router, HubConfig, HubState, TenantLimit};
use tower::ServiceExt;

/// POST `uri`; the status and the `Retry-After` value.
async fn post(state: &HubState, uri: &str) -> (StatusCode, Option<String>) {
    let req = Request::post(uri)
        .header("content-type", "application/json")
        .body(Body::from("{}"))
        .unwrap();
    let r = router(state.clone()).oneshot(req).await.unwrap();
    let retry_after = r
        .headers()
        .get("retry-after")
        .map(|v| v.to_str().unwrap().to_owned());
    (r.status(), retry_after)
}

#[tokio::test(start_paused = true)]
async fn over_its_limit_a_tenant_is_answered_429_with_retry_after_and_others_are_not() {
    let st = HubState::new(HubConfig {
        // 1 publish per second per tenant, 2 at once.
        tenant_limit: Some(TenantLimit {
            burst: 2,
            ..TenantLimit::new("1/s".parse().unwrap())
        }),
        ..HubConfig::default()
    });
    for t in ["tenant0000.o.login", "tenant0001.o.login"] {
        // Registration is not a publish: never limited, however many.
        for _ in 0..3 {
            post(&st, &format!("/hub?hub.mode=register&hub.topic={t}")).await;
        }
    }
    let noisy = "/hub?hub.mode=publish&hub.topic=tenant0000.o.login";
    let quiet = "/hub?hub.mode=publish&hub.topic=tenant0001.o.login";
    let ok = (StatusCode::OK, None);
    let limited = (StatusCode::TOO_MANY_REQUESTS, Some("1".to_owned()));
    assert_eq!(post(&st, noisy).await, ok);
    assert_eq!(post(&st, noisy).await, ok);
    assert_eq!(post(&st, noisy).await, limited);
    assert_eq!(post(&st, noisy).await, limited);
    // The other tenant has its own bucket.
    assert_eq!(post(&st, quiet).await, ok);
    // A second later one token is back.
    tokio::time::advance(Duration::from_secs(1)).await;
    assert_eq!(post(&st, noisy).await, ok);
    assert_eq!(post(&st, noisy).await, limited);
    let s = st.stats();
    assert_eq!(s.publish.accepted, 4);
    assert_eq!(s.publish.throttled, 3);
    assert_eq!(s.register.accepted + s.register.conflict, 6);
    let noisy = s.tenants["tenant0000"];
    assert_eq!((noisy.admitted, noisy.throttled), (3, 3));
    // The second 429 came within the first's Retry-After; the others each after one.
    assert_eq!(noisy.before_retry_after, 1);
    let quiet = s.tenants["tenant0001"];
    assert_eq!((quiet.admitted, quiet.throttled), (1, 0));
    assert_eq!(s.tenants.len(), 2);
    // The topics count only what was admitted.
    assert_eq!(s.topics["tenant0000.o.login"].published, 3);
}

#[tokio::test]
async fn without_a_limit_nothing_is_throttled_and_stats_have_no_tenants() {
    let st = HubState::new(HubConfig::default());
    post(&st, "/hub?hub.mode=register&hub.topic=t.a").await;
    for _ in 0..50 {
        assert_eq!(
            post(&st, "/hub?hub.mode=publish&hub.topic=t.a").await,
            (StatusCode::OK, None)
        );
    }
    let s = st.stats();
    assert_eq!((s.publish.accepted, s.publish.throttled), (50, 0));
    assert!(s.tenants.is_empty());
}
