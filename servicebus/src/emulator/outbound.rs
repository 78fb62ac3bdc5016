//! A client's receiver link on a queue or subscription: deliver messages as credit allows,
//! peek-locked (unsettled; the client's disposition completes, abandons, dead-letters or
//! defers) or receive-and-delete (pre-settled), with Azure's message annotations. While the
//! client has credit outstanding the link holds one of the entity's concurrent receive
//! requests (Azure's quota); one over the quota detaches the link with
//! `amqp:resource-limit-exceeded`.

use std::sync::Arc;
use std::time::Duration;

use fe2o3_amqp::types::messaging::{Body, Message, MessageAnnotations, Outcome};
use fe2o3_amqp::types::primitives::{Symbol, Timestamp, Value};
use fe2o3_amqp::{Sendable, Sender};
use rand::RngCore as _;

use super::amqp_errors::refusal;
use super::clock::unix_ms;
use super::namespace::{ReceiveSource, ReceiverSlot};
use super::shared::Shared;
use super::store::{Settle, Stored};
use super::tier::Cost;

/// Longest a taken message waits for link credit before it is given back.
const PARK: Duration = Duration::from_millis(50);

/// Serve one receiver link. `peek_lock` is false when the client asked for pre-settled
/// transfers (snd-settle-mode `settled`: receive-and-delete).
pub async fn entity_sender(
    mut sender: Sender,
    source: ReceiveSource,
    peek_lock: bool,
    shared: Arc<Shared>,
) {
    let store = source.store.clone();
    let mut link_drops = shared.link_drops.subscribe();
    let mut deletions = shared.deletions.subscribe();
    let still_there = || shared.ns.holds(&store);
    let flows = sender.flow_notifier();
    let mut request: Option<ReceiverSlot> = None;
    loop {
        // Registered before looking, so an enqueue (or a flow) between the look and the wait
        // wakes us.
        let notified = store.ready.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        let flowed = flows.notified();
        tokio::pin!(flowed);
        flowed.as_mut().enable();
        // A receive request is pending while the client has granted credit not yet used.
        let credit = sender.link_credit();
        if credit == 0 {
            request = None;
        } else if request.is_none() {
            match source.claim() {
                Ok(slot) => request = Some(slot),
                Err(e) => {
                    // Azure rejects the receive request over its quota: the link goes with
                    // the condition the SDKs read as "quota exceeded".
                    let _ = sender.close_with_error(refusal(e, &shared)).await;
                    return;
                }
            }
        }
        if request.is_none() {
            // No credit: nothing may be sent; wait for the client's next flow.
            tokio::select! {
                _ = &mut flowed => {}
                _ = link_drops.changed() => break,
                () = super::deleted::entity_gone(&mut deletions, still_there) => {
                    let _ = sender.close_with_error(super::deleted::not_found(&store.path)).await;
                    return;
                }
                _ = sender.on_detach() => return,
            }
            continue;
        }
        let now = unix_ms();
        let mut token = [0u8; 16];
        rand::thread_rng().fill_bytes(&mut token);
        let Some(d) = store.take(peek_lock, source.dead_letter, now, token) else {
            // Nothing now: wait for an enqueue or settlement, the next lock expiry (which
            // makes a message available again), or the link's end.
            let wake = store
                .next_lock_expiry()
                .map(|t| Duration::from_millis((t - now).max(1) as u64))
                .unwrap_or(Duration::from_secs(1));
            tokio::select! {
                _ = &mut notified => {}
                _ = &mut flowed => {}
                _ = tokio::time::sleep(wake) => {}
                _ = link_drops.changed() => break,
                () = super::deleted::entity_gone(&mut deletions, still_there) => {
                    let _ = sender.close_with_error(super::deleted::not_found(&store.path)).await;
                    return;
                }
                _ = sender.on_detach() => return,
            }
            continue;
        };
        // A receive is a message operation on the tier's budget: over it, wait (Azure
        // slows receives down; the client sees latency, not an error).
        while let Err(wait) = shared.budget.take(Cost::Messages {
            n: 1,
            bytes: body_len(&d.stored),
        }) {
            tokio::time::sleep(wait).await;
        }
        let msg = annotated(&d.stored, d.lock.map(|l| l.1));
        // The lock token is the delivery tag, as in Azure: the SDKs read a message's lock
        // token from its tag (to renew the lock, or settle it through `$management`).
        let sendable = Sendable::builder()
            .message(msg)
            .settled(!peek_lock)
            .delivery_tag(token.to_vec())
            .build();
        // fe2o3 does not show the link credit, so the message is taken first and the send
        // waits for credit. It waits at most PARK: then the message goes back untouched (the
        // send is cancel-safe), so a link without credit never hides one from other
        // receivers for long, nor holds it while its lock runs out.
        let sent = tokio::select! {
            r = sender.send_batchable(sendable) => Some(r),
            _ = tokio::time::sleep(PARK) => None,
            _ = link_drops.changed() => {
                store.untake(d, source.dead_letter);
                break;
            }
        };
        match sent {
            None => store.untake(d, source.dead_letter),
            Some(Ok(fut)) if peek_lock => {
                let store = store.clone();
                let shared = shared.clone();
                tokio::spawn(async move {
                    // An error means the link went before the client settled: the lock
                    // runs out and the message is delivered again.
                    if let Ok(outcome) = fut.await {
                        if store
                            .settle(&token, settle_of(&outcome), unix_ms())
                            .is_err()
                        {
                            shared.count(|c| c.lock_lost += 1);
                        }
                    }
                });
            }
            Some(Ok(_)) => {}
            Some(Err(_)) => {
                // Never reached the client: give the message back untouched.
                store.untake(d, source.dead_letter);
                return;
            }
        }
    }
    let _ = sender.close().await;
}

/// What the client's outcome does to the message (Azure's mapping: accepted completes,
/// rejected dead-letters, released or modified abandons, modified undeliverable-here defers).
fn settle_of(outcome: &Outcome) -> Settle {
    match outcome {
        Outcome::Accepted(_) => Settle::Complete,
        Outcome::Rejected(r) => Settle::DeadLetter(dead_letter_reason(r.error.as_ref())),
        Outcome::Released(_) => Settle::Abandon,
        Outcome::Modified(m) if m.undeliverable_here == Some(true) => Settle::Defer,
        Outcome::Modified(_) => Settle::Abandon,
    }
}

fn dead_letter_reason(err: Option<&fe2o3_amqp::types::definitions::Error>) -> String {
    let from_info = err
        .and_then(|e| e.info.as_ref())
        .and_then(|i| i.get(&Symbol::from("DeadLetterReason")))
        .and_then(|v| match v {
            Value::String(s) => Some(s.clone()),
            _ => None,
        });
    from_info.unwrap_or_else(|| "DeadLetteredByReceiver".to_string())
}

fn body_len(s: &Stored) -> u64 {
    match &s.msg.body {
        Body::Data(b) => b.iter().map(|d| d.0.len() as u64).sum(),
        _ => 64,
    }
}

/// The message as Azure delivers it: header delivery-count (deliveries before this one),
/// and the `x-opt-*` annotations the SDKs read (sequence number, enqueued time, locked until).
pub fn annotated(s: &Stored, locked_until_ms: Option<i64>) -> Message<Body<Value>> {
    let mut m: Message<Body<Value>> = (*s.msg).clone();
    let mut header = m.header.take().unwrap_or_default();
    header.delivery_count = s.delivery_count.saturating_sub(1);
    m.header = Some(header);
    let mut ann = m
        .message_annotations
        .take()
        .unwrap_or_else(|| MessageAnnotations(Default::default()));
    ann.0.insert(
        Symbol::from("x-opt-sequence-number").into(),
        Value::Long(s.seq),
    );
    ann.0.insert(
        Symbol::from("x-opt-enqueued-time").into(),
        Value::Timestamp(Timestamp::from_milliseconds(s.enqueued_ms)),
    );
    if let Some(until) = locked_until_ms {
        ann.0.insert(
            Symbol::from("x-opt-locked-until").into(),
            Value::Timestamp(Timestamp::from_milliseconds(until)),
        );
    }
    m.message_annotations = Some(ann);
    if let Some(reason) = &s.dead_letter_reason {
        let mut app = m.application_properties.take().unwrap_or_default();
        app.0
            .insert("DeadLetterReason".into(), reason.clone().into());
        m.application_properties = Some(app);
    }
    m
}
