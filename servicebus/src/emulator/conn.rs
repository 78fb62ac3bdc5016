//! One emulator connection: accept its sessions and hand each attached link to its node
//! (`$cbs`, an entity's `$management`, a queue or topic to send to, a queue or subscription
//! to receive from), refusing unknown entities and Azure's limits at attach.
//!
//! Authorisation is per connection, as in Azure: a transfer without an unexpired token for its
//! entity is *rejected* with `amqp:unauthorized-access` (Azure detaches; the sender classes
//! both as unauthorized), keeping per-send accounting exact. A link whose right the key's
//! policy lacks is refused at attach.

use std::sync::Arc;

use fe2o3_amqp::acceptor::{
    ConnectionAcceptor, LinkAcceptor, LinkEndpoint, ListenerSessionHandle, SaslAnonymousMechanism,
    SessionAcceptor, SupportedReceiverSettleModes,
};
use fe2o3_amqp::types::definitions::{
    self, AmqpError, ConnectionError, ReceiverSettleMode, Role, SenderSettleMode,
};
use fe2o3_amqp::types::messaging::TargetArchetype;
use fe2o3_amqp::types::performatives::Attach;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinSet;

use super::amqp_errors::{amqp_error, refusal};
use super::cbs::{cbs_node, reply_link, ConnState};
use super::inbound::entity_receiver;
use super::management::management_node;
use super::namespace::{parse_address, path_of, EntityError, ReceiveSource, SendTarget};
use super::outbound::entity_sender;
use super::rights::{denial, Right};
use super::shared::Shared;

/// Serve one connection (TCP, or WebSocket over TLS) until the peer closes it, or the handle drops every connection.
pub(super) async fn serve(
    stream: impl AsyncRead + AsyncWrite + std::fmt::Debug + Send + Unpin + 'static,
    acceptor: Arc<ConnectionAcceptor<(), SaslAnonymousMechanism>>,
    shared: Arc<Shared>,
    mut drop_rx: watch::Receiver<u64>,
) {
    // A client that never finishes its header, SASL or `open` would hold its descriptor
    // for ever.
    let mut connection =
        match tokio::time::timeout(shared.cfg.handshake_timeout, acceptor.accept(stream)).await {
            Ok(Ok(c)) => c,
            Ok(Err(_)) => return shared.count(|c| c.handshake_failures += 1),
            Err(_) => return shared.count(|c| c.handshake_timeouts += 1),
        };
    shared.count(|c| c.connections += 1);
    let state = Arc::new(ConnState::default());
    let session_acceptor = SessionAcceptor::new();
    let mut tasks = JoinSet::new();
    drop_rx.borrow_and_update();
    loop {
        tokio::select! {
            incoming = connection.next_incoming_session() => {
                let Some(incoming) = incoming else { break };
                match session_acceptor.accept_incoming_session(incoming, &mut connection).await {
                    Ok(session) => {
                        tasks.spawn(serve_session(session, shared.clone(), state.clone()));
                    }
                    Err(_) => break,
                }
            }
            changed = drop_rx.changed() => {
                if changed.is_ok() {
                    let err = definitions::Error::new(
                        ConnectionError::ConnectionForced,
                        Some("the emulator dropped the connection".to_string()),
                        None,
                    );
                    let _ = connection.close_with_error(err).await;
                }
                break;
            }
            Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
        }
    }
    tasks.abort_all();
    if let Err(e) = connection.close().await {
        if is_idle_timeout(&e) {
            shared.count(|c| c.idle_timeouts += 1);
        } else if is_protocol_error(&e) {
            shared.count(|c| c.protocol_errors += 1);
        }
    }
}

/// Whether a connection ended because the client sent nothing for the idle timeout.
fn is_idle_timeout(e: &fe2o3_amqp::connection::Error) -> bool {
    use fe2o3_amqp::connection::Error as E;
    use fe2o3_amqp::transport::Error as T;
    matches!(e, E::TransportError(T::IdleTimeoutElapsed))
}

/// Whether a connection ended for the client's fault in the protocol (a malformed or
/// oversized frame, a frame for no session), not because it went away.
fn is_protocol_error(e: &fe2o3_amqp::connection::Error) -> bool {
    use fe2o3_amqp::connection::Error as E;
    use fe2o3_amqp::transport::Error as T;
    match e {
        E::TransportError(T::Io(io)) => io.kind() == std::io::ErrorKind::InvalidData,
        E::TransportError(T::DecodeError(_) | T::FramingError | T::NotImplemented(_)) => true,
        E::NotImplemented(_) | E::NotFound(_) | E::NotAllowed(_) => true,
        _ => false,
    }
}

fn target_address(attach: &Attach) -> Option<String> {
    let target = attach.target.as_deref()?;
    #[allow(irrefutable_let_patterns)]
    if let TargetArchetype::Target(t) = target {
        t.address.clone()
    } else {
        None
    }
}

/// What to do with an attached link, decided from its attach before accepting it.
enum Plan {
    /// The client's sender to `$cbs`.
    Cbs,
    /// The client's sender to an entity's `$management` node.
    Management(ReceiveSource),
    /// The client's receiver of `$cbs` or `$management` replies, for this node.
    Replies(String),
    /// The client's sender to a queue or topic.
    Send(SendTarget),
    /// The client's receiver on a queue or subscription; receive-and-delete when the client
    /// asked for pre-settled transfers. Azure's receive quota is counted on its credit
    /// (outbound.rs), not at attach.
    Receive(ReceiveSource, bool),
    /// Refused: no token for the address.
    Unauthorised,
    /// Refused: the key's policy lacks the right the link needs.
    Denied(Right),
    /// Refused: no such entity, or over one of Azure's limits.
    Refuse(EntityError),
}

fn plan(attach: &Attach, shared: &Shared, state: &ConnState) -> Plan {
    let target = target_address(attach).unwrap_or_default();
    let source = attach
        .source
        .as_ref()
        .and_then(|s| s.address.clone())
        .unwrap_or_default();
    if attach.role == Role::Sender {
        if target == "$cbs" {
            return Plan::Cbs;
        }
        if parse_address(&target).management {
            return match shared.ns.receive_source(&target) {
                Ok(src) => Plan::Management(src),
                Err(e) => Plan::Refuse(e),
            };
        }
        if !shared.cfg.key_rights.has(Right::Send) {
            return Plan::Denied(Right::Send);
        }
        return match shared.ns.send_target(&target) {
            Ok(t) => Plan::Send(t),
            Err(e) => Plan::Refuse(e),
        };
    }
    if source == "$cbs" {
        return Plan::Replies("$cbs".to_string());
    }
    if parse_address(&source).management {
        return Plan::Replies(path_of(&source).to_string());
    }
    if !state.authorised(&source) {
        return Plan::Unauthorised;
    }
    if !shared.cfg.key_rights.has(Right::Listen) {
        return Plan::Denied(Right::Listen);
    }
    let presettled = attach.snd_settle_mode == SenderSettleMode::Settled;
    match shared.ns.receive_source(&source) {
        Ok(src) => Plan::Receive(src, presettled),
        Err(e) => Plan::Refuse(e),
    }
}

async fn serve_session(
    mut session: ListenerSessionHandle,
    shared: Arc<Shared>,
    state: Arc<ConnState>,
) {
    // Links the client sends on: `rcv-settle-mode second` (which Python asks for) is refused
    // at attach, so every disposition the emulator sends is settled, as Python waits for.
    let inbound = LinkAcceptor::builder()
        .max_message_size(shared.cfg.tier.max_message_size())
        .supported_receiver_settle_modes(SupportedReceiverSettleModes::First)
        .fallback_receiver_settle_mode(ReceiverSettleMode::First)
        .build();
    // Links the client receives on: `second` is kept (peek-lock), and fe2o3 settles each
    // disposition the client sends unsettled, echoing its outcome.
    let outbound = LinkAcceptor::builder()
        .max_message_size(shared.cfg.tier.max_message_size())
        .build();
    let mut links = JoinSet::new();
    while let Some(mut attach) = session.next_incoming_attach().await {
        let plan = plan(&attach, &shared, &state);
        let address = match attach.role {
            Role::Sender => target_address(&attach),
            Role::Receiver => attach.source.as_ref().and_then(|s| s.address.clone()),
        }
        .unwrap_or_default();
        let refused = matches!(plan, Plan::Refuse(_) | Plan::Unauthorised | Plan::Denied(_));
        if refused {
            // Azure refuses a link as AMQP says to: an attach without the terminus the
            // client asked for, then a detach with the error. The SDKs read the detach's
            // condition only when the attach was refused that way.
            match attach.role {
                Role::Sender => attach.target = None,
                Role::Receiver => attach.source = None,
            }
        }
        let acceptor = if attach.role == Role::Sender {
            &inbound
        } else {
            &outbound
        };
        // A reply link is routed before its attach is answered: the client sends its first
        // request (a put-token) the moment it has the answer, and the node must find the
        // link to reply on. Routed after, a request could come first and its reply be lost,
        // leaving the client to wait out its timeout.
        let mut replies = match &plan {
            Plan::Replies(node) => {
                let (tx, rx) = mpsc::channel(16);
                let target = target_address(&attach).unwrap_or_default();
                state.add_reply_link(node, target, tx);
                Some(rx)
            }
            _ => None,
        };
        let (sh, st) = (shared.clone(), state.clone());
        match (
            acceptor.accept_incoming_attach(attach, &mut session).await,
            plan,
        ) {
            (Err(_), _) => break,
            (Ok(LinkEndpoint::Receiver(r)), Plan::Cbs) => {
                links.spawn(cbs_node(r, sh, st));
            }
            (Ok(LinkEndpoint::Receiver(r)), Plan::Management(src)) => {
                links.spawn(management_node(r, address, src, sh, st));
            }
            (Ok(LinkEndpoint::Receiver(r)), Plan::Send(t)) => {
                links.spawn(entity_receiver(r, address, t, sh, st));
            }
            (Ok(LinkEndpoint::Sender(s)), Plan::Replies(_)) => {
                if let Some(rx) = replies.take() {
                    links.spawn(reply_link(s, rx));
                }
            }
            (Ok(LinkEndpoint::Sender(s)), Plan::Receive(src, presettled)) => {
                links.spawn(entity_sender(s, src, !presettled, sh));
            }
            (Ok(link), plan) => {
                let err = match plan {
                    Plan::Refuse(e) => refusal(e, &shared),
                    Plan::Denied(right) => {
                        shared.count(|c| c.unauthorized += 1);
                        amqp_error(
                            AmqpError::UnauthorizedAccess.into(),
                            denial(right, &address),
                        )
                    }
                    _ => {
                        shared.count(|c| c.unauthorized += 1);
                        amqp_error(
                            AmqpError::UnauthorizedAccess.into(),
                            "no valid token for this address on this connection".to_string(),
                        )
                    }
                };
                let _ = match link {
                    LinkEndpoint::Receiver(r) => r.close_with_error(err).await,
                    LinkEndpoint::Sender(s) => s.close_with_error(err).await,
                };
            }
        }
    }
    links.abort_all();
}
