//! A real headless chromium driven over its DevTools protocol: open a page, read its DOM with
//! a script as often as a test needs (a bounded poll, not a fixed load timeout), and take a
//! screenshot of what it shows then.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine;
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;

/// How long chromium may take to start, or to answer one command, on a busy machine.
const PATIENCE: Duration = Duration::from_secs(60);

/// One headless chromium with one page open; killed when dropped.
pub struct Browser {
    child: Child,
    _profile: tempfile::TempDir,
    page: WebSocketStream<TcpStream>,
    next_id: u64,
}

impl Browser {
    /// Starts chromium (the flags a headless browser needs on a closed machine, and a fresh
    /// profile) on `url`, and connects to that page's DevTools socket.
    pub async fn open(bin: &Path, url: &str) -> Browser {
        let profile = tempfile::tempdir().unwrap();
        let child = Command::new(bin)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--hide-scrollbars",
                "--window-size=1280,1500",
                // Port 0: chromium picks one and writes it to DevToolsActivePort.
                "--remote-debugging-port=0",
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg(url)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromium starts");
        let port_file = profile.path().join("DevToolsActivePort");
        let deadline = Instant::now() + PATIENCE;
        let page_ws = loop {
            assert!(Instant::now() < deadline, "chromium never opened {url}");
            if let Some(ws) = page_socket(&port_file, url).await {
                break ws;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        let (host, path) = page_ws
            .strip_prefix("ws://")
            .and_then(|rest| rest.split_once('/'))
            .expect("a ws:// address");
        let tcp = TcpStream::connect(host).await.unwrap();
        let (page, _) = tokio_tungstenite::client_async(page_ws.as_str(), tcp)
            .await
            .unwrap_or_else(|e| panic!("DevTools socket /{path}: {e}"));
        Browser {
            child,
            _profile: profile,
            page,
            next_id: 0,
        }
    }

    /// Sends one DevTools command and returns its `result`.
    async fn call(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let msg = json!({ "id": id, "method": method, "params": params }).to_string();
        self.page.send(Message::text(msg)).await.unwrap();
        let answer = async {
            while let Some(msg) = self.page.next().await {
                let Ok(Message::Text(text)) = msg else {
                    continue;
                };
                let v: Value = serde_json::from_str(text.as_str()).unwrap();
                if v["id"] == id {
                    return v;
                }
            }
            panic!("the DevTools socket closed during {method}");
        };
        let v = tokio::time::timeout(PATIENCE, answer)
            .await
            .unwrap_or_else(|_| panic!("{method}: no answer in {PATIENCE:?}"));
        assert!(v.get("error").is_none(), "{method}: {v}");
        v["result"].clone()
    }

    /// The value of a script evaluated in the page (`returnByValue`: plain JSON).
    pub async fn eval(&mut self, expression: &str) -> Value {
        let r = self
            .call(
                "Runtime.evaluate",
                json!({ "expression": expression, "returnByValue": true }),
            )
            .await;
        assert!(r.get("exceptionDetails").is_none(), "{expression}: {r}");
        r["result"]["value"].clone()
    }

    /// A PNG of the page as it is now.
    pub async fn screenshot(&mut self) -> Vec<u8> {
        let r = self
            .call("Page.captureScreenshot", json!({ "format": "png" }))
            .await;
        base64::engine::general_purpose::STANDARD
            .decode(r["data"].as_str().expect("screenshot data"))
            .unwrap()
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The DevTools socket of the page showing `url`, once chromium has written its port and
/// opened the page (`None` until then).
async fn page_socket(port_file: &Path, url: &str) -> Option<String> {
    let text = std::fs::read_to_string(port_file).ok()?;
    let port: u16 = text.lines().next()?.trim().parse().ok()?;
    let list = reqwest::get(format!("http://127.0.0.1:{port}/json/list"))
        .await
        .ok()?
        .text()
        .await
        .ok()?;
    let list: Value = serde_json::from_str(&list).ok()?;
    list.as_array()?
        .iter()
        .find(|t| {
            t["type"] == "page"
                && t["url"]
                    .as_str()
                    .is_some_and(|u| u.starts_with(url.trim_end_matches('/')))
        })
        .and_then(|t| t["webSocketDebuggerUrl"].as_str().map(str::to_string))
}
