//! One pooled AMQP connection: open (TCP_NODELAY, TLS or plain, SASL ANONYMOUS), one session,
//! a CBS client, SAS put-token per audience, and the sender links it caches per topic.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex as StdMutex, OnceLock, Weak};
use std::time::Duration;

use fe2o3_amqp::connection::ConnectionHandle;
use fe2o3_amqp::link::{SenderAttachError, SessionStopReason};
use fe2o3_amqp::sasl_profile::SaslProfile;
use fe2o3_amqp::session::SessionHandle;
use fe2o3_amqp::types::primitives::Timestamp;
use fe2o3_amqp::{Connection, Sender, Session};
use fe2o3_amqp_cbs::client::CbsClient;
use fe2o3_amqp_cbs::token::CbsToken;
use tokio::net::TcpStream;
use tokio::sync::Mutex;
use tokio_rustls::rustls::pki_types::ServerName;
use tokio_rustls::TlsConnector;

use super::describe::{self, one_line};
use crate::connection_string::ConnectionString;
use crate::outcome::{
    cbs_status_ok, classify_cbs_status, classify_condition, condition_str, SendOutcome,
};
use crate::sas;
use crate::transport::{tunnel, ws_client};

/// What every pooled connection shares: the parsed string, the TLS connector, timeouts.
pub(crate) struct Shared {
    pub cs: ConnectionString,
    pub tls: Option<TlsConnector>,
    pub connect_timeout: Duration,
    pub token_ttl: Duration,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("cs", &self.cs)
            .field("tls", &self.tls.is_some())
            .field("connect_timeout", &self.connect_timeout)
            .field("token_ttl", &self.token_ttl)
            .finish()
    }
}

/// A failure while opening, putting a token or attaching, with a one-line reason.
#[derive(Debug)]
pub(crate) struct Fail {
    pub outcome: SendOutcome,
    pub reason: String,
    /// CBS status code, when the failure is a put-token answer.
    pub status: Option<u16>,
}

impl Fail {
    fn new(outcome: SendOutcome, reason: impl Into<String>) -> Self {
        Fail {
            outcome,
            reason: reason.into(),
            status: None,
        }
    }
}

/// A cached sender link; `generation` tells a stale failure from a fresh link.
#[derive(Debug, Default)]
pub(crate) struct LinkState {
    pub sender: Option<Sender>,
    pub generation: u64,
}

/// TCP straight to the endpoint, with TCP_NODELAY.
async fn direct(host: &str, port: u16) -> Result<TcpStream, Fail> {
    let stream = TcpStream::connect((host, port)).await.map_err(|e| {
        // Only a refusal (or no route) is `Connect`: a reset is a closed connection.
        let outcome = match e.kind() {
            std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::ConnectionAborted => {
                SendOutcome::ConnectionError
            }
            _ => SendOutcome::Connect,
        };
        Fail::new(
            outcome,
            format!("TCP connect failed: {}", describe::io_error(&e)),
        )
    })?;
    // Without TCP_NODELAY the p99 shows a ~40 ms Nagle/delayed-ACK artefact (docs/protocol.md §6).
    let _ = stream.set_nodelay(true);
    Ok(stream)
}

/// One connection of the pool.
#[derive(Debug)]
pub(crate) struct PooledConn {
    pub id: u64,
    shared: Arc<Shared>,
    connection: Mutex<ConnectionHandle<()>>,
    /// The session; the receiver attaches its links on it too.
    pub(crate) session: Mutex<SessionHandle<()>>,
    cbs: Mutex<CbsClient>,
    /// Audiences with a token on this connection; the refresh task puts them again.
    audiences: StdMutex<HashSet<String>>,
    links: StdMutex<HashMap<String, Arc<Mutex<LinkState>>>>,
    broken: AtomicBool,
    /// The condition the broker ended the session with, once it has (`none`: no error).
    session_end: OnceLock<String>,
    link_seq: AtomicU64,
    /// CBS put-tokens done (first puts and refreshes), for tests and logs.
    pub puts: AtomicU64,
}

impl PooledConn {
    /// Open TCP (TCP_NODELAY), TLS when in production, AMQP with SASL ANONYMOUS, one session
    /// and the CBS links. Bounded by the caller's timeout.
    pub async fn open(id: u64, shared: Arc<Shared>) -> Result<Arc<PooledConn>, Fail> {
        let cs = &shared.cs;
        let port = cs.amqp_port();
        let stream = match &cs.proxy {
            None => direct(&cs.host, port).await?,
            // Through the proxy's CONNECT tunnel (transport/tunnel.rs); it sets TCP_NODELAY.
            Some(proxy) => tunnel::through(proxy, &cs.host, port).await.map_err(|e| {
                let outcome = match (e.status, e.refused) {
                    (Some(status), _) => SendOutcome::ProxyRefused { status },
                    (None, true) => SendOutcome::Connect,
                    (None, false) => SendOutcome::ConnectionError,
                };
                Fail::new(outcome, e.reason)
            })?,
        };
        let container = format!("hubload-{}-{id}", std::process::id());
        let builder = Connection::builder()
            .container_id(container)
            .hostname(cs.host.as_str())
            .sasl_hostname(cs.host.as_str())
            .sasl_profile(SaslProfile::Anonymous)
            .scheme("amqp");
        let opened = match &shared.tls {
            // AMQP over WebSockets: TLS, then the upgrade (transport/ws_client.rs).
            Some(connector) if cs.websockets() => {
                let ws = ws_client::upgrade(stream, &cs.host, port, connector)
                    .await
                    .map_err(|e| Fail::new(SendOutcome::Connect, e.to_string()))?;
                builder.open_with_stream(ws).await
            }
            // TLS straight away, no AMQP TLS header: the same as fe2o3's
            // `alt_tls_establishment(true)`, done here so the socket gets TCP_NODELAY.
            Some(connector) => {
                let name = ServerName::try_from(cs.host.clone()).map_err(|_| {
                    Fail::new(
                        SendOutcome::Connect,
                        "the host is not a valid TLS server name",
                    )
                })?;
                let tls = connector.connect(name, stream).await.map_err(|e| {
                    Fail::new(
                        SendOutcome::ConnectionError,
                        format!("TLS handshake failed: {}", describe::io_error(&e)),
                    )
                })?;
                builder.open_with_stream(tls).await
            }
            None => builder.open_with_stream(stream).await,
        };
        let mut connection = opened.map_err(|e| {
            let what = match &e {
                fe2o3_amqp::connection::OpenError::SaslError { .. } => "SASL",
                _ => "AMQP open",
            };
            Fail::new(
                SendOutcome::ConnectionError,
                format!("{what} failed: {}", describe::open_error(&e)),
            )
        })?;
        let mut session = Session::begin(&mut connection).await.map_err(|e| {
            Fail::new(
                SendOutcome::ConnectionError,
                format!("AMQP session begin failed: {}", one_line(&e.to_string())),
            )
        })?;
        let cbs = CbsClient::attach(&mut session).await.map_err(|e| {
            Fail::new(
                SendOutcome::ConnectionError,
                format!("CBS link attach failed: {}", one_line(&e.to_string())),
            )
        })?;
        Ok(Arc::new(PooledConn {
            id,
            shared,
            connection: Mutex::new(connection),
            session: Mutex::new(session),
            cbs: Mutex::new(cbs),
            audiences: StdMutex::new(HashSet::new()),
            links: StdMutex::new(HashMap::new()),
            broken: AtomicBool::new(false),
            session_end: OnceLock::new(),
            link_seq: AtomicU64::new(0),
            puts: AtomicU64::new(0),
        }))
    }

    /// Resolves once the connection's event loop has stopped (the broker closed it, or the
    /// socket died) or the broker ended the session, checked every 20 ms while a caller
    /// waits, with the class of what stopped. A delivery in flight on a connection or
    /// session the broker ended is never settled by the AMQP client, so a send waits on this
    /// beside its settlement to end as soon as it stops, not at its timeout.
    pub async fn stopped(&self) -> SendOutcome {
        loop {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            if let Some(stopped) = self.stop_now() {
                return stopped;
            }
        }
    }

    /// The class of what stopped, if the connection's event loop has stopped or the broker
    /// ended the session, as far as can be seen now without waiting (a handle held by another
    /// task is not waited for). Marks the connection broken when the session has ended.
    pub fn stop_now(&self) -> Option<SendOutcome> {
        if let Ok(c) = self.connection.try_lock() {
            if c.is_closed() {
                self.mark_broken();
                return Some(SendOutcome::ConnectionError);
            }
        }
        let condition = self.session_end()?;
        Some(SendOutcome::SessionEnded { condition })
    }

    /// The session's end condition once it has ended (`none`: no error), read once.
    fn session_end(&self) -> Option<String> {
        if let Some(c) = self.session_end.get() {
            return Some(c.clone());
        }
        let session = self.session.try_lock().ok()?;
        if !session.is_ended() {
            return None;
        }
        // The condition the end carried: the broker's, or the one this side ended it with.
        let condition = match session.stop_reason() {
            Some(
                SessionStopReason::RemoteEndedWithError(e) | SessionStopReason::EndedWithError(e),
            ) => condition_str(&e.condition),
            _ => "none".to_string(),
        };
        self.mark_broken();
        Some(self.session_end.get_or_init(|| condition).clone())
    }

    /// Whether a send saw this connection (or its session) stop.
    pub fn is_broken(&self) -> bool {
        self.broken.load(Ordering::Relaxed)
    }

    /// Mark the connection for replacement on the next send.
    pub fn mark_broken(&self) {
        self.broken.store(true, Ordering::Relaxed);
    }

    /// CBS put-token for `audience`: a fresh SAS token, or the connection string's own.
    pub async fn put_token(&self, audience: &str) -> Result<(), Fail> {
        let (token, expiry) = self.shared.cs.token_for(audience, self.shared.token_ttl);
        let cbs_token = CbsToken::new(
            token,
            sas::SAS_TOKEN_TYPE,
            Timestamp::from_milliseconds((expiry * 1000) as i64),
        );
        let mut cbs = self.cbs.lock().await;
        let res = tokio::time::timeout(
            self.shared.connect_timeout,
            cbs.put_token(audience.to_string(), cbs_token),
        )
        .await;
        use fe2o3_amqp_management::error::Error as MgmtError;
        match res {
            Ok(Err(MgmtError::Status(s))) if cbs_status_ok(s.code.0.get()) => {
                self.took(audience);
                Ok(())
            }
            Ok(Ok(())) => {
                self.took(audience);
                Ok(())
            }
            Ok(Err(MgmtError::Status(s))) => {
                let code = s.code.0.get();
                Err(Fail {
                    outcome: classify_cbs_status(code),
                    reason: format!("CBS put-token for {audience} was answered {code}"),
                    status: Some(code),
                })
            }
            Ok(Err(e)) => {
                // The CBS links are in an unknown state: replace the connection.
                self.mark_broken();
                Err(Fail::new(
                    SendOutcome::ConnectionError,
                    format!("CBS put-token for {audience} failed: {}", mgmt_error(&e)),
                ))
            }
            Err(_) => {
                // A late reply would be read by the next request: replace the connection.
                self.mark_broken();
                Err(Fail::new(
                    SendOutcome::ConnectTimeout,
                    format!(
                        "CBS put-token for {audience} was not answered within {:?}",
                        self.shared.connect_timeout
                    ),
                ))
            }
        }
    }

    /// Count a put-token taken for `audience`, which the refresh task puts again.
    fn took(&self, audience: &str) {
        self.puts.fetch_add(1, Ordering::Relaxed);
        self.audiences
            .lock()
            .expect("audiences lock")
            .insert(audience.to_string());
    }

    /// Put every audience of this connection again (the refresh task).
    pub async fn refresh_all(&self) -> Result<(), Fail> {
        let audiences: Vec<String> = self
            .audiences
            .lock()
            .expect("audiences lock")
            .iter()
            .cloned()
            .collect();
        for a in audiences {
            self.put_token(&a).await?;
        }
        Ok(())
    }

    /// The cached link slot for `topic` (created empty on first use).
    pub fn link_slot(&self, topic: &str) -> Arc<Mutex<LinkState>> {
        let mut links = self.links.lock().expect("links lock");
        if let Some(l) = links.get(topic) {
            return l.clone();
        }
        let l = Arc::new(Mutex::new(LinkState::default()));
        links.insert(topic.to_string(), l.clone());
        l
    }

    /// Put a token for the topic's address, then attach a sender link whose target is that
    /// full address.
    pub async fn attach(&self, topic: &str) -> Result<Sender, Fail> {
        let address = self.shared.cs.entity_address(topic);
        self.put_token(&address).await?;
        let name = format!(
            "hubload-{}-{}-{topic}",
            self.id,
            self.link_seq.fetch_add(1, Ordering::Relaxed)
        );
        let mut session = self.session.lock().await;
        Sender::builder()
            .name(name)
            .target(address)
            .attach(&mut *session)
            .await
            .map_err(|e| {
                let outcome = match &e {
                    SenderAttachError::RemoteClosedWithError(err) => {
                        classify_condition(&condition_str(&err.condition))
                    }
                    SenderAttachError::SessionStopped(_) | SenderAttachError::SessionNotMapped => {
                        self.mark_broken();
                        SendOutcome::ConnectionError
                    }
                    _ => SendOutcome::ConnectionError,
                };
                let why = match &e {
                    SenderAttachError::RemoteClosedWithError(err) => describe::error(err),
                    other => one_line(&other.to_string()),
                };
                Fail::new(
                    outcome,
                    format!("attach of the sender link to {topic} failed: {why}"),
                )
            })
    }

    /// End the session and close the connection, each within a second.
    pub async fn close(&self) {
        let t = Duration::from_secs(1);
        let _ = tokio::time::timeout(t, async { self.cbs.lock().await }).await;
        let _ = tokio::time::timeout(t, async { self.session.lock().await.end().await }).await;
        let _ = tokio::time::timeout(t, async { self.connection.lock().await.close().await }).await;
    }
}

/// Put every token of `conn` again every `period` until it is dropped or broken.
pub(crate) async fn refresh_loop(conn: Weak<PooledConn>, period: Duration) {
    loop {
        tokio::time::sleep(period).await;
        let Some(c) = conn.upgrade() else { return };
        if c.is_broken() {
            return;
        }
        if let Err(f) = c.refresh_all().await {
            tracing::warn!(conn = c.id, "SAS token refresh failed: {}", f.reason);
            // The links keep their old token until it expires; a send then fails,
            // is classified, and the next one reconnects.
            c.mark_broken();
            return;
        }
    }
}

/// A CBS request's failure as a sentence.
fn mgmt_error(e: &fe2o3_amqp_management::error::Error) -> String {
    use fe2o3_amqp_management::error::Error as E;
    match e {
        E::Send(fe2o3_amqp::link::SendError::LinkStateError(l)) => link_state(l),
        E::Recv(fe2o3_amqp::link::RecvError::LinkStateError(l)) => link_state(l),
        other => one_line(&other.to_string()),
    }
}

/// Why a link stopped, as a sentence.
pub(crate) fn link_state(e: &fe2o3_amqp::link::LinkStateError) -> String {
    use fe2o3_amqp::link::{LinkStateError as L, SessionStopReason as S};
    match e {
        L::RemoteDetachedWithError(err) => {
            format!("the broker detached the link: {}", describe::error(err))
        }
        L::RemoteClosedWithError(err) => {
            format!("the broker closed the link: {}", describe::error(err))
        }
        L::SessionStopped(S::RemoteEndedWithError(err)) => {
            format!("the broker ended the session: {}", describe::error(err))
        }
        L::SessionStopped(S::EndedWithError(err)) => {
            format!("hubload ended the session: {}", describe::error(err))
        }
        L::SessionStopped(S::ConnectionStopped(_)) => "the connection closed".into(),
        other => one_line(&other.to_string()),
    }
}
