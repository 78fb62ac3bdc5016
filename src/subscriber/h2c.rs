//! A subscription request over h2c with prior knowledge (`--http-version 2` on an http hub):
//! one connection, one stream, the same form and headers as the HTTP/1.1 request.

use bytes::Bytes;
use tokio::net::TcpStream;

use crate::targets::request::ExtraHeaders;

/// `POST url` with `form` on `tcp` as an HTTP/2 stream: the answer's status and body (cut at
/// `cap` bytes). Errors are one line and never contain a header value.
pub(super) async fn exchange(
    url: &url::Url,
    tcp: TcpStream,
    form: &str,
    headers: &ExtraHeaders,
    cap: usize,
) -> Result<(u16, Vec<u8>), String> {
    let _ = tcp.set_nodelay(true);
    let (send, conn) = h2::client::handshake(tcp)
        .await
        .map_err(|e| format!("h2 handshake: {e}"))?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    let mut req = http::Request::post(url.as_str())
        .header("content-type", "application/x-www-form-urlencoded")
        .header("content-length", form.len());
    // The hub's credentials and gateway headers (validated in config); HTTP/2 names are
    // lowercase, which `http` makes them.
    for h in &headers.0 {
        req = req.header(h.name.as_str(), h.value.expose());
    }
    let req = req
        .body(())
        .map_err(|_| "a header cannot be sent over HTTP/2".to_string())?;
    let mut send = send.ready().await.map_err(|e| format!("h2: {e}"))?;
    let (response, mut stream) = send
        .send_request(req, false)
        .map_err(|e| format!("h2: {e}"))?;
    stream
        .send_data(Bytes::copy_from_slice(form.as_bytes()), true)
        .map_err(|e| format!("h2: {e}"))?;
    let response = response.await.map_err(|e| format!("h2: {e}"))?;
    let status = response.status().as_u16();
    let mut data = response.into_body();
    let mut body = Vec::new();
    while let Some(chunk) = data.data().await {
        let chunk = chunk.map_err(|e| format!("h2: {e}"))?;
        let _ = data.flow_control().release_capacity(chunk.len());
        let room = cap.saturating_sub(body.len());
        body.extend_from_slice(&chunk[..chunk.len().min(room)]);
    }
    Ok((status, body))
}
