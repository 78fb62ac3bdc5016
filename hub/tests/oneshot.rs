//! The router driven directly with `tower::ServiceExt::oneshot`: no socket.

use axum::body::Body;
use axum::http::{Request, StatusCode};
use hubload_hub::{router, FaultConfig, HubConfig, HubState, StatsSnapshot};
use tower::ServiceExt;

async fn call(state: &HubState, req: Request<Body>) -> (StatusCode, String) {
    let r = router(state.clone()).oneshot(req).await.unwrap();
    let status = r.status();
    let body = axum::body::to_bytes(r.into_body(), 1 << 20).await.unwrap();
    (status, String::from_utf8(body.to_vec()).unwrap())
}

fn post(uri: &str, ct: &str, body: &str) -> Request<Body> {
    Request::post(uri)
        .header("content-type", ct)
        .body(Body::from(body.to_owned()))
        .unwrap()
}

#[tokio::test]
async fn dialect_without_a_socket() {
    let st = HubState::new(HubConfig::default());
    let json = "application/json";
    let reg = "/?hub.mode=register&hub.topic=a.b";
    assert_eq!(
        call(&st, post(reg, json, "")).await,
        (StatusCode::OK, "hub.mode=accepted".into())
    );
    assert_eq!(call(&st, post(reg, json, "")).await.0, StatusCode::CONFLICT);
    let publish = "/?hub.mode=publish&hub.topic=a.b";
    assert_eq!(call(&st, post(publish, json, "{}")).await.0, StatusCode::OK);
    let (status, body) = call(&st, post("/?hub.mode=publish&hub.topic=zz", json, "{}")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(body.starts_with("hub.mode=denied&hub.reason=Topic+%5Bzz%5D"));
    let s = st.stats();
    assert_eq!((s.register.accepted, s.register.conflict), (1, 1));
    assert_eq!((s.publish.accepted, s.publish.denied), (1, 1));
}

#[tokio::test]
async fn stats_endpoint_serializes_the_snapshot() {
    let st = HubState::new(HubConfig::default());
    call(
        &st,
        post("/hub?hub.mode=register&hub.topic=t", "application/json", ""),
    )
    .await;
    let (status, body) = call(&st, Request::get("/stats").body(Body::empty()).unwrap()).await;
    assert_eq!(status, StatusCode::OK);
    let parsed: StatsSnapshot = serde_json::from_str(&body).unwrap();
    assert_eq!(parsed, st.stats());
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["register"]["accepted"], 1);
    assert_eq!(v["publish"]["abandoned"], 0);
    assert_eq!(v["topics"]["t"]["published"], 0);
    assert_eq!(v["distribution"]["pending"], 0);
}

#[tokio::test]
async fn admin_faults_get_and_put() {
    let st = HubState::new(HubConfig::default());
    let put = |body: &str| {
        Request::put("/admin/faults")
            .header("content-type", "application/json")
            .body(Body::from(body.to_owned()))
            .unwrap()
    };
    let (status, body) = call(&st, put(r#"{"fail_503_every": 2, "latency_ms": 0}"#)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(st.faults().fail_503_every, Some(2));
    let (_, body) = call(
        &st,
        Request::get("/admin/faults").body(Body::empty()).unwrap(),
    )
    .await;
    let got: FaultConfig = serde_json::from_str(&body).unwrap();
    assert_eq!(got, st.faults());
    // bad values and unknown keys are refused, naming the field; the settings stay
    let (status, body) = call(&st, put(r#"{"fail_502_ratio": 3}"#)).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(body.contains("fail_502_ratio"), "{body}");
    let (status, body) = call(&st, put(r#"{"fail_502_ratoi": 0.5}"#)).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(body.contains("fail_502_ratoi"), "{body}");
    assert_eq!(st.faults().fail_503_every, Some(2));
    // admin calls are not hub requests
    assert_eq!(st.stats().requests, 0);
}

#[tokio::test]
async fn faults_without_a_socket() {
    let st = HubState::new(HubConfig::default());
    st.set_faults(FaultConfig {
        fail_502_every: Some(3),
        reset_every: Some(2),
        ..FaultConfig::default()
    });
    let mut statuses = Vec::new();
    for _ in 0..6 {
        let req = post("/?hub.mode=register&hub.topic=t", "application/json", "");
        statuses.push(call(&st, req).await.0.as_u16());
    }
    // 1 ok, 2 reset (500 without a connection), 3 502, 4 reset, 5 conflict, 6 502
    assert_eq!(statuses, [200, 500, 502, 500, 409, 502]);
    let r = st.stats().register;
    assert_eq!(
        (r.accepted, r.fault_reset, r.fault_502, r.conflict),
        (1, 2, 2, 1)
    );
}
