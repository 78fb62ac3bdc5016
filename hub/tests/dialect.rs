//! The Ballerina/WSO2 publisher dialect, reconciled with `/stats`.

use crate::util::{raw, TestHub};

const FORM: &str = "application/x-www-form-urlencoded";

#[tokio::test]
async fn register_publish_deregister() {
    let hub = TestHub::default().await;
    let t = "myorg.0d5e.schema.WSO2.v1.event.login";
    // register with the query string and an empty JSON body
    hub.register(t).await;
    // duplicate → 409 with a reason that is not a denial
    let (status, body) = hub
        .post(
            &format!("hub.mode=register&hub.topic={t}"),
            "application/json",
            b"",
        )
        .await;
    assert_eq!(status, 409);
    assert_eq!(
        body,
        format!("hub.reason=Topic+%5B{t}%5D+is+already+registered+with+the+Hub")
    );
    // register as a form body
    assert_eq!(
        hub.form(&[("hub.mode", "register"), ("hub.topic", "t2")])
            .await,
        (200, "hub.mode=accepted".into())
    );
    // publish content, three content types
    for ct in ["application/json", "application/xml", "text/plain"] {
        assert_eq!(
            hub.publish(t, ct, b"{\"a\":1}").await,
            (200, "hub.mode=accepted".into())
        );
    }
    // thin ping
    let r = hub
        .client
        .post(&hub.url)
        .header("content-type", FORM)
        .header("x-ballerina-publisher", "event")
        .body(format!("hub.mode=publish&hub.topic={t}"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.text().await.unwrap(), "hub.mode=accepted");
    // unregistered topic → 404 denied with the WSO2 wording
    let (status, body) = hub.publish("nope", "application/json", b"{}").await;
    assert_eq!(status, 404);
    assert_eq!(
        body,
        "hub.mode=denied&hub.reason=Topic+%5Bnope%5D+is+not+registered+with+the+Hub"
    );
    // deregister, twice
    assert_eq!(
        hub.form(&[("hub.mode", "deregister"), ("hub.topic", "t2")])
            .await,
        (200, "hub.mode=accepted".into())
    );
    let (status, body) = hub
        .form(&[("hub.mode", "deregister"), ("hub.topic", "t2")])
        .await;
    assert_eq!(status, 404);
    assert!(body.starts_with("hub.reason="), "{body}");
    // publishing to a deregistered topic is denied
    assert_eq!(hub.publish("t2", "text/plain", b"x").await.0, 404);
    // "unregister" is not a mode
    let r = hub
        .form(&[("hub.mode", "unregister"), ("hub.topic", t)])
        .await;
    assert_eq!(r.0, 400);

    let s = hub.stats().await;
    assert_eq!(s.requests, 12);
    assert_eq!((s.register.accepted, s.register.conflict), (2, 1));
    assert_eq!((s.publish.accepted, s.publish.denied), (4, 2));
    assert_eq!((s.deregister.accepted, s.deregister.not_found), (1, 1));
    assert_eq!(s.other.bad_request, 1);
    let sum = s.publish.total()
        + s.register.total()
        + s.deregister.total()
        + s.subscribe.total()
        + s.other.total();
    assert_eq!(sum, s.requests);
    assert_eq!(s.topics[t].published, 4);
    assert_eq!(s.topics["t2"].denied, 1);
    assert_eq!(s.topics["nope"].denied, 1);
    assert_eq!(s.distribution.published, 4);
    // the in-process snapshot is the same data
    assert_eq!(hub.state.stats(), s);
    hub.stop().await;
}

#[tokio::test]
async fn bad_modes_are_400_text_plain() {
    let hub = TestHub::default().await;
    for (query, ct, body) in [
        ("", "application/json", &b"{}"[..]),
        ("hub.mode=bogus&hub.topic=t", "application/json", b""),
        ("", FORM, b"hub.topic=t"),
        ("", FORM, b"hub.mode=frobnicate"),
    ] {
        let r = hub
            .client
            .post(format!("{}?{query}", hub.url))
            .header("content-type", ct)
            .body(body.to_vec())
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 400, "{query} {body:?}");
        assert!(r.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/plain"));
    }
    // GET on the hub URL: 405, counted under other
    let (status, _) = raw(hub.addr, "GET", "/hub", &[], b"").await.unwrap();
    assert_eq!(status, 405);
    // register without a topic
    let (status, _) = hub.form(&[("hub.mode", "register")]).await;
    assert_eq!(status, 400);
    let s = hub.stats().await;
    assert_eq!(s.other.bad_request, 5);
    assert_eq!(s.register.bad_request, 1);
    assert_eq!(s.requests, 6);
    hub.stop().await;
}

#[tokio::test]
async fn admin_and_stats_are_not_counted() {
    let hub = TestHub::default().await;
    for path in ["/stats", "/metrics", "/admin/faults"] {
        let (status, _) = raw(hub.addr, "GET", path, &[], b"").await.unwrap();
        assert_eq!(status, 200, "{path}");
    }
    hub.register("t").await;
    let (status, text) = raw(hub.addr, "GET", "/metrics", &[], b"").await.unwrap();
    assert_eq!(status, 200);
    assert!(text.contains("hub_requests_total 1\n"), "{text}");
    assert!(text.contains("hub_answers_total{mode=\"register\",outcome=\"accepted\"} 1\n"));
    assert_eq!(hub.stats().await.requests, 1);
    hub.stop().await;
}

#[tokio::test]
async fn concurrent_publishes_are_all_counted() {
    let hub = TestHub::default().await;
    hub.register("t").await;
    let mut tasks = Vec::new();
    for _ in 0..20 {
        let (client, url) = (hub.client.clone(), hub.url.clone());
        tasks.push(tokio::spawn(async move {
            for _ in 0..50 {
                let r = client
                    .post(format!("{url}?hub.mode=publish&hub.topic=t"))
                    .header("content-type", "application/json")
                    .body("{}")
                    .send()
                    .await
                    .unwrap();
                assert_eq!(r.status(), 200);
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let s = hub.stats().await;
    assert_eq!(s.publish.accepted, 1000);
    assert_eq!(s.topics["t"].published, 1000);
    assert_eq!(s.requests, 1001);
    hub.stop().await;
}

#[tokio::test]
async fn shutdown_lets_open_requests_finish() {
    let hub = TestHub::default().await;
    hub.register("t").await;
    hub.state.set_faults(hubload_hub::FaultConfig {
        broker_latency_ms: 300,
        ..Default::default()
    });
    let (client, url) = (hub.client.clone(), hub.url.clone());
    let open = tokio::spawn(async move {
        let r = client
            .post(format!("{url}?hub.mode=publish&hub.topic=t"))
            .body("{}")
            .send()
            .await
            .unwrap();
        (r.status().as_u16(), r.text().await.unwrap())
    });
    let state = hub.state.clone();
    crate::util::eventually("the publish in flight", || state.inflight() == 1).await;
    let addr = hub.addr;
    hub.stop().await;
    assert_eq!(open.await.unwrap(), (200, "hub.mode=accepted".into()));
    assert_eq!(state.stats().publish.accepted, 1);
    // and it no longer accepts connections
    assert!(tokio::net::TcpStream::connect(addr).await.is_err());
}
