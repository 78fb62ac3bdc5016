//! Every limit: body size, topic and callback length, callback scheme, secret length, bearer token.

use hubload_hub::HubConfig;

use crate::util::{raw, TestHub};

#[tokio::test]
async fn size_and_length_limits() {
    let hub = TestHub::start(HubConfig {
        max_body_bytes: 1000,
        max_topic_len: 20,
        max_callback_len: 40,
        ..HubConfig::default()
    })
    .await;
    hub.register("t").await;
    // declared too large
    assert_eq!(
        hub.publish("t", "application/json", &[b'x'; 1001]).await.0,
        413
    );
    // exactly at the limit is fine
    assert_eq!(
        hub.publish("t", "application/json", &[b'x'; 1000]).await.0,
        200
    );
    // chunked (no Content-Length) and too large
    assert_eq!(chunked_publish(&hub, 2, 600).await, 413);
    assert_eq!(chunked_publish(&hub, 2, 400).await, 200);
    // a form body that is too large: its mode cannot be read, so it counts under other
    let big = format!("hub.mode=publish&hub.topic=t&pad={}", "p".repeat(1000));
    assert_eq!(
        hub.post("", "application/x-www-form-urlencoded", big.as_bytes())
            .await
            .0,
        413
    );
    // over-long topic
    let long = "t".repeat(21);
    assert_eq!(hub.publish(&long, "application/json", b"{}").await.0, 400);
    assert_eq!(
        hub.form(&[("hub.mode", "register"), ("hub.topic", &long)])
            .await
            .0,
        400
    );
    // over-long callback, bad scheme
    let cb = format!("http://127.0.0.1/{}", "c".repeat(30));
    for callback in [cb.as_str(), "ftp://127.0.0.1/cb", "not a url", "mailto:x@y"] {
        let (status, body) = hub
            .form(&[
                ("hub.mode", "subscribe"),
                ("hub.topic", "t"),
                ("hub.callback", callback),
            ])
            .await;
        assert_eq!(status, 400, "{callback}");
        assert!(body.starts_with("hub.callback"), "{body}");
    }
    // secret of 200 bytes
    let secret = "s".repeat(200);
    let (status, body) = hub
        .form(&[
            ("hub.mode", "subscribe"),
            ("hub.topic", "t"),
            ("hub.callback", "http://127.0.0.1:9/cb"),
            ("hub.secret", &secret),
        ])
        .await;
    assert_eq!((status, body.starts_with("hub.secret")), (400, true));

    let s = hub.stats().await;
    assert_eq!(s.publish.too_large, 2);
    assert_eq!(s.publish.accepted, 2);
    assert_eq!(s.publish.bad_request, 1);
    assert_eq!(s.other.too_large, 1);
    assert_eq!(s.register.bad_request, 1);
    assert_eq!(s.subscribe.bad_request, 5);
    hub.stop().await;
}

/// Publish `n` chunks of `size` bytes with `Transfer-Encoding: chunked` (no declared length).
async fn chunked_publish(hub: &TestHub, n: usize, size: usize) -> u16 {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(hub.addr).await.unwrap();
    let mut req = String::from(
        "POST /hub?hub.mode=publish&hub.topic=t HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\
         content-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n",
    );
    for _ in 0..n {
        req.push_str(&format!("{size:x}\r\n{}\r\n", "y".repeat(size)));
    }
    req.push_str("0\r\n\r\n");
    s.write_all(req.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    // The hub may answer 413 and close before reading everything: a reset here is fine.
    let _ = s.read_to_end(&mut out).await;
    String::from_utf8_lossy(&out)[9..12].parse().unwrap()
}

#[tokio::test]
async fn bearer_token() {
    let hub = TestHub::start(HubConfig {
        bearer_token: Some("tok-123".into()),
        ..HubConfig::default()
    })
    .await;
    let q = "/hub?hub.mode=register&hub.topic=t";
    let ct = ("content-type", "application/json");
    let (status, _) = raw(hub.addr, "POST", q, &[ct], b"").await.unwrap();
    assert_eq!(status, 401);
    let wrong = ("authorization", "Bearer tok-124");
    assert_eq!(
        raw(hub.addr, "POST", q, &[ct, wrong], b"").await.unwrap().0,
        401
    );
    let short = ("authorization", "Bearer tok-12");
    assert_eq!(
        raw(hub.addr, "POST", q, &[ct, short], b"").await.unwrap().0,
        401
    );
    let right = ("authorization", "Bearer tok-123");
    let (status, body) = raw(hub.addr, "POST", q, &[ct, right], b"").await.unwrap();
    assert_eq!((status, body.as_str()), (200, "hub.mode=accepted"));
    let p = "/hub?hub.mode=publish&hub.topic=t";
    assert_eq!(raw(hub.addr, "POST", p, &[ct], b"{}").await.unwrap().0, 401);
    assert_eq!(
        raw(hub.addr, "POST", p, &[ct, right], b"{}")
            .await
            .unwrap()
            .0,
        200
    );
    let form = ("content-type", "application/x-www-form-urlencoded");
    let sub = b"hub.mode=subscribe&hub.topic=t&hub.callback=http://127.0.0.1:9/cb";
    assert_eq!(
        raw(hub.addr, "POST", "/hub", &[form], sub).await.unwrap().0,
        401
    );
    let s = hub.stats().await;
    assert_eq!((s.register.unauthorized, s.register.accepted), (3, 1));
    assert_eq!((s.publish.unauthorized, s.publish.accepted), (1, 1));
    assert_eq!(s.subscribe.unauthorized, 1);
    // the token never shows in the stats or the fault settings
    let dump = serde_json::to_string(&s).unwrap() + &format!("{:?}", hub.state.config());
    assert!(!dump.contains("tok-123"));
    hub.stop().await;
}
