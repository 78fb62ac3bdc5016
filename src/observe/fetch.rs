//! One bounded HTTP GET for the observers (a metrics page, a PromQL query), over hyper's
//! client connection; http or https, basic auth from the URL's user info, never shown.

use std::time::Duration;

use base64::Engine;
use http_body_util::{BodyExt, Full, Limited};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite};

use crate::targets::http::Tls;

/// The largest body read (a kubelet's cAdvisor page is a few MB).
const MAX_BODY: usize = 64 << 20;

/// A URL to fetch, with what it needs to be reached and how it is shown.
#[derive(Clone)]
pub struct Endpoint {
    url: url::Url,
    tls: Option<Tls>,
    /// `Authorization` value from the URL's user info; never logged.
    auth: Option<String>,
    /// `host:port/path`, without credentials or query.
    pub shown: String,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The URL and the header carry no credentials in `shown`; nothing else is printed.
        f.debug_struct("Endpoint")
            .field("shown", &self.shown)
            .finish_non_exhaustive()
    }
}

impl Endpoint {
    /// `url` (its user info becomes basic auth), reached with `tls` when it is https.
    pub fn new(mut url: url::Url, tls: Option<Tls>) -> Self {
        let auth = (!url.username().is_empty() || url.password().is_some()).then(|| {
            let user = percent_encoding::percent_decode_str(url.username()).decode_utf8_lossy();
            let pass = url
                .password()
                .map(|p| {
                    percent_encoding::percent_decode_str(p)
                        .decode_utf8_lossy()
                        .into_owned()
                })
                .unwrap_or_default();
            let token = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{pass}"));
            format!("Basic {token}")
        });
        let _ = url.set_username("");
        let _ = url.set_password(None);
        let shown = shown(&url);
        Endpoint {
            url,
            tls,
            auth,
            shown,
        }
    }

    /// This endpoint's URL with `path_and_query` in place of its own path (PromQL's API).
    pub fn at(&self, path_and_query: &str) -> Self {
        let mut e = self.clone();
        let base = self.url.path().trim_end_matches('/');
        let (path, query) = path_and_query
            .split_once('?')
            .map_or((path_and_query, None), |(p, q)| (p, Some(q)));
        e.url.set_path(&format!("{base}{path}"));
        e.url.set_query(query);
        e
    }

    /// GET within `timeout`: the status and the body, or why not (one line, no secrets).
    pub async fn get(&self, timeout: Duration) -> Result<(u16, String), String> {
        self.send(Call::default(), timeout).await
    }

    /// POST `body` with `headers` within `timeout`: the status and the answer's body.
    pub async fn post(
        &self,
        body: Vec<u8>,
        headers: &[(&'static str, &'static str)],
        timeout: Duration,
    ) -> Result<(u16, String), String> {
        let call = Call {
            body: Some(body),
            headers: headers.to_vec(),
        };
        self.send(call, timeout).await
    }

    async fn send(&self, call: Call, timeout: Duration) -> Result<(u16, String), String> {
        match tokio::time::timeout(timeout, self.send_unbounded(call)).await {
            Ok(r) => r,
            Err(_) => Err(format!(
                "no answer within {}",
                humantime::format_duration(timeout)
            )),
        }
    }

    async fn send_unbounded(&self, call: Call) -> Result<(u16, String), String> {
        let host = self.url.host_str().ok_or("no host")?.to_string();
        let port = self.url.port_or_known_default().ok_or("no port")?;
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        let tcp = tokio::net::TcpStream::connect((bare, port))
            .await
            .map_err(|e| format!("connect: {e}"))?;
        let _ = tcp.set_nodelay(true);
        match &self.tls {
            None => self.exchange(tcp, &host, port, call).await,
            Some(tls) => {
                let stream = tls
                    .connector
                    .connect(tls.server_name.clone(), tcp)
                    .await
                    .map_err(|e| format!("TLS: {e}"))?;
                self.exchange(stream, &host, port, call).await
            }
        }
    }

    async fn exchange<S>(
        &self,
        io: S,
        host: &str,
        port: u16,
        call: Call,
    ) -> Result<(u16, String), String>
    where
        S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let (mut send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(io))
            .await
            .map_err(|e| format!("HTTP: {e}"))?;
        let driver = tokio::spawn(conn);
        let target = match self.url.query() {
            Some(q) => format!("{}?{q}", self.url.path()),
            None => self.url.path().to_string(),
        };
        let method = match call.body {
            Some(_) => http::Method::POST,
            None => http::Method::GET,
        };
        let mut req = http::Request::builder()
            .method(method)
            .uri(target)
            .header(http::header::HOST, format!("{host}:{port}"))
            .header(http::header::USER_AGENT, "hubload")
            .header(http::header::ACCEPT, "text/plain, application/json");
        for (k, v) in &call.headers {
            req = req.header(*k, *v);
        }
        if let Some(a) = &self.auth {
            req = req.header(http::header::AUTHORIZATION, a);
        }
        let req = req
            .body(Full::new(bytes::Bytes::from(call.body.unwrap_or_default())))
            .map_err(|e| format!("request: {e}"))?;
        let answer = async {
            let res = send
                .send_request(req)
                .await
                .map_err(|e| format!("HTTP: {e}"))?;
            let status = res.status().as_u16();
            let body = Limited::new(res.into_body(), MAX_BODY)
                .collect()
                .await
                .map_err(|e| format!("body: {e}"))?
                .to_bytes();
            Ok((status, String::from_utf8_lossy(&body).into_owned()))
        }
        .await;
        driver.abort();
        answer
    }
}

/// A request's method-specific parts: a body makes it a POST.
#[derive(Debug, Default)]
struct Call {
    body: Option<Vec<u8>>,
    headers: Vec<(&'static str, &'static str)>,
}

/// `host:port/path` of `url`: what reports and messages show of a metrics source.
fn shown(url: &url::Url) -> String {
    let host = url.host_str().unwrap_or("");
    match url.port() {
        Some(p) => format!("{host}:{p}{}", url.path()),
        None => format!("{host}{}", url.path()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_become_auth_and_are_never_shown() {
        let e = Endpoint::new(
            url::Url::parse("http://user:s3cr%40t@127.0.0.1:9100/metrics?x=1").unwrap(),
            None,
        );
        assert_eq!(e.shown, "127.0.0.1:9100/metrics");
        assert_eq!(
            format!("{e:?}"),
            "Endpoint { shown: \"127.0.0.1:9100/metrics\", .. }"
        );
        let expect = base64::engine::general_purpose::STANDARD.encode("user:s3cr@t");
        assert_eq!(e.auth.as_deref(), Some(format!("Basic {expect}").as_str()));
        let q = e.at("/api/v1/query?query=up");
        assert_eq!(
            q.url.as_str(),
            "http://127.0.0.1:9100/metrics/api/v1/query?query=up"
        );
    }
}
