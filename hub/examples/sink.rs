//! A minimal WebSub subscriber for benchmarks: echoes every verification challenge and
//! answers every delivery 204, on any path. Usage: `sink 127.0.0.1:39101`.

use axum::extract::Query;
use axum::http::StatusCode;
use axum::routing::get;
use axum::Router;

async fn verify(Query(q): Query<Vec<(String, String)>>) -> String {
    q.into_iter()
        .find(|(k, _)| k == "hub.challenge")
        .map(|(_, v)| v)
        .unwrap_or_default()
}

async fn deliver() -> StatusCode {
    StatusCode::NO_CONTENT
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::io::Result<()> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:39101".into());
    let app = Router::new().route("/{*path}", get(verify).post(deliver));
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    axum::serve(listener, app).await
}
