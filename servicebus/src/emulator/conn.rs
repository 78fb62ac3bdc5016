//! One emulator connection: accept its sessions and hand each attached link to its node
//! (`$cbs`, an entity's `$management`, a queue or topic to send to, a queue or subscription
//! to receive from), refusing unknown entities and Azure's limits at attach.
//!
//! Authorisation is per connection, as in Azure: a transfer is accepted only if this
//! connection holds an unexpired token for the link's entity. Without one, the emulator
//! *rejects the delivery* with `amqp:unauthorized-access` (Azure detaches the link instead;
//! the sender classifies both as unauthorized), which keeps the per-send accounting exact.

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
use tokio::net::TcpStream;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinSet;

use super::cbs::{cbs_node, reply_link, ConnState};
use super::inbound::{amqp_error, entity_receiver};
use super::management::management_node;
use super::namespace::{parse_address, path_of, EntityError};
use super::outbound::entity_sender;
use super::{Shared, MAX_MESSAGE_SIZE};

/// Serve one TCP connection until the peer closes it, or the handle drops every connection.
pub(super) async fn serve(
    stream: TcpStream,
    acceptor: Arc<ConnectionAcceptor<(), SaslAnonymousMechanism>>,
    shared: Arc<Shared>,
    mut drop_rx: watch::Receiver<u64>,
) {
    let Ok(mut connection) = acceptor.accept(stream).await else {
        return;
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
    let _ = connection.close().await;
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

/// The link as the client attached it.
struct Wanted {
    target: String,
    source: String,
    /// Client sends pre-settled (receive-and-delete when it is the receiver).
    presettled: bool,
}

async fn serve_session(
    mut session: ListenerSessionHandle,
    shared: Arc<Shared>,
    state: Arc<ConnState>,
) {
    // Links the client sends on: `rcv-settle-mode second` (which Python asks for) is refused
    // at attach, so every disposition the emulator sends is settled, as Python waits for.
    let inbound = LinkAcceptor::builder()
        .max_message_size(MAX_MESSAGE_SIZE)
        .supported_receiver_settle_modes(SupportedReceiverSettleModes::First)
        .fallback_receiver_settle_mode(ReceiverSettleMode::First)
        .build();
    // Links the client receives on: `second` is kept (peek-lock), and fe2o3 settles each
    // disposition the client sends unsettled, echoing its outcome.
    let outbound = LinkAcceptor::builder()
        .max_message_size(MAX_MESSAGE_SIZE)
        .build();
    let mut links = JoinSet::new();
    while let Some(attach) = session.next_incoming_attach().await {
        let wanted = Wanted {
            target: target_address(&attach).unwrap_or_default(),
            source: attach
                .source
                .as_ref()
                .and_then(|s| s.address.clone())
                .unwrap_or_default(),
            presettled: attach.snd_settle_mode == SenderSettleMode::Settled,
        };
        let acceptor = if attach.role == Role::Sender {
            &inbound
        } else {
            &outbound
        };
        match acceptor.accept_incoming_attach(attach, &mut session).await {
            Ok(LinkEndpoint::Receiver(r)) => {
                client_sender(r, wanted, &shared, &state, &mut links).await;
            }
            Ok(LinkEndpoint::Sender(s)) => {
                client_receiver(s, wanted, &shared, &state, &mut links).await;
            }
            Err(_) => break,
        }
    }
    links.abort_all();
}

/// The condition and description a refused attach is detached with.
fn refusal(e: EntityError, shared: &Shared) -> definitions::Error {
    match e {
        EntityError::NotFound(d) => {
            shared.count(|c| c.not_found += 1);
            amqp_error(AmqpError::NotFound.into(), d)
        }
        EntityError::LimitExceeded(d) => {
            shared.count(|c| c.limit_exceeded += 1);
            amqp_error(AmqpError::ResourceLimitExceeded.into(), d)
        }
    }
}

/// A link the client sends on: to `$cbs`, a `$management` node, or a queue or topic.
async fn client_sender(
    r: fe2o3_amqp::Receiver,
    w: Wanted,
    shared: &Arc<Shared>,
    state: &Arc<ConnState>,
    links: &mut JoinSet<()>,
) {
    if w.target == "$cbs" {
        links.spawn(cbs_node(r, shared.clone(), state.clone()));
        return;
    }
    let (shared, state) = (shared.clone(), state.clone());
    if parse_address(&w.target).management {
        match shared.ns.receive_source(&w.target) {
            Ok(src) => {
                links.spawn(management_node(r, w.target, src, shared, state));
            }
            Err(e) => {
                let _ = r.close_with_error(refusal(e, &shared)).await;
            }
        }
        return;
    }
    match shared.ns.send_target(&w.target) {
        Ok(t) => {
            links.spawn(entity_receiver(r, w.target, t, shared, state));
        }
        Err(e) => {
            let _ = r.close_with_error(refusal(e, &shared)).await;
        }
    }
}

/// A link the client receives on: replies of `$cbs` or `$management`, or a queue or
/// subscription.
async fn client_receiver(
    s: fe2o3_amqp::Sender,
    w: Wanted,
    shared: &Arc<Shared>,
    state: &Arc<ConnState>,
    links: &mut JoinSet<()>,
) {
    if w.source == "$cbs" || parse_address(&w.source).management {
        let node = if w.source == "$cbs" {
            "$cbs".to_string()
        } else {
            path_of(&w.source).to_string()
        };
        let (tx, rx) = mpsc::channel(16);
        state.add_reply_link(&node, w.target, tx);
        links.spawn(reply_link(s, rx));
        return;
    }
    if !state.authorised(&w.source) {
        shared.count(|c| c.unauthorized += 1);
        let err = amqp_error(
            AmqpError::UnauthorizedAccess.into(),
            "no valid token for this address on this connection".to_string(),
        );
        let _ = s.close_with_error(err).await;
        return;
    }
    let claimed = shared
        .ns
        .receive_source(&w.source)
        .and_then(|src| src.claim().map(|slot| (src, slot)));
    match claimed {
        Ok((src, slot)) => {
            links.spawn(entity_sender(s, src, slot, !w.presettled, shared.clone()));
        }
        Err(e) => {
            let _ = s.close_with_error(refusal(e, shared)).await;
        }
    }
}
