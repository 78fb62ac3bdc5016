//! Settling a peek-locked message (complete, abandon, dead-letter): the disposition goes out
//! unsettled (`rcv-settle-mode = second`) and the call returns once the broker's settled answer
//! comes back, or fails with a [`ReceiveError`] saying why, within the settle timeout.

use fe2o3_amqp::link::{DispositionError, IllegalLinkStateError};
use fe2o3_amqp::types::definitions::{self, ErrorCondition};
use fe2o3_amqp::types::messaging::{DeliveryState, Modified};
use fe2o3_amqp::types::primitives::{OrderedMap, Symbol, Value};
use fe2o3_amqp::Receiver;
use tokio::time::{timeout_at, Instant};

use super::{ReceiveError, Received, SbReceiver};
use crate::outcome::{condition_str, SendOutcome};

/// The condition Service Bus answers a settlement with when the message's lock had run out.
const LOCK_LOST: &str = "com.microsoft:message-lock-lost";

/// What a settlement asks of the broker, to judge its answer by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Asked {
    Complete,
    Abandon,
    DeadLetter,
}

/// The disposition a settlement sends on `Receiver`.
type Op = for<'a> fn(
    &'a Receiver,
    fe2o3_amqp::link::delivery::DeliveryInfo,
    Option<definitions::Error>,
) -> std::pin::Pin<
    Box<dyn std::future::Future<Output = Result<(), DispositionError>> + Send + 'a>,
>;

impl SbReceiver {
    /// Complete the message: the broker removes it. `Ok` means the broker confirmed it (its
    /// settled answer came back `accepted`), so the message will not come again. An error
    /// says why not: the link was already gone (`LinkLost`), the session ended before the
    /// answer (`SessionEnded`), the lock had run out (`LockLost`), the broker settled it
    /// otherwise (`Rejected`), or no answer within the settle timeout (`Timeout`). After
    /// any of them the message may come again once its lock expires.
    pub async fn complete(&mut self, msg: &Received) -> Result<(), ReceiveError> {
        let op: Op = |r, info, _| Box::pin(r.accept(info));
        self.settle(msg, Asked::Complete, op, None).await
    }

    /// Abandon the message: the broker unlocks it and delivers it again (to the dead-letter
    /// sub-queue once its delivery count reaches the entity's `MaxDeliveryCount`). Returns
    /// once the broker confirms, as [`Self::complete`] does.
    pub async fn abandon(&mut self, msg: &Received) -> Result<(), ReceiveError> {
        let op: Op = |r, info, _| {
            let modified = Modified {
                delivery_failed: Some(true),
                undeliverable_here: None,
                message_annotations: None,
            };
            Box::pin(r.modify(info, modified))
        };
        self.settle(msg, Asked::Abandon, op, None).await
    }

    /// Dead-letter the message with a reason and description (Azure's `DeadLetterReason`
    /// and `DeadLetterErrorDescription`): the broker moves it to the dead-letter sub-queue.
    /// Returns once the broker confirms, as [`Self::complete`] does.
    pub async fn dead_letter(
        &mut self,
        msg: &Received,
        reason: &str,
        description: &str,
    ) -> Result<(), ReceiveError> {
        let mut info = OrderedMap::new();
        info.insert(
            Symbol::from("DeadLetterReason"),
            Value::String(reason.to_string()),
        );
        info.insert(
            Symbol::from("DeadLetterErrorDescription"),
            Value::String(description.to_string()),
        );
        let error = definitions::Error::new(
            ErrorCondition::Custom(Symbol::from("com.microsoft:dead-letter")),
            Some(description.to_string()),
            Some(info),
        );
        let op: Op = |r, info, error| Box::pin(r.reject(info, error));
        self.settle(msg, Asked::DeadLetter, op, Some(error)).await
    }

    async fn settle(
        &mut self,
        msg: &Received,
        asked: Asked,
        op: Op,
        error: Option<definitions::Error>,
    ) -> Result<(), ReceiveError> {
        if msg.generation != self.link.generation {
            return Err(ReceiveError::LinkLost);
        }
        let (Some(receiver), Some(conn)) = (self.link.receiver.as_ref(), self.conn.clone()) else {
            return Err(ReceiveError::LinkLost);
        };
        // A disposition handed to a session that has ended is dropped without a word.
        if conn.stop_now().is_some() {
            conn.mark_broken();
            self.link.receiver = None;
            return Err(ReceiveError::LinkLost);
        }
        let deadline = Instant::now() + self.cfg.settle_timeout;
        // Waited for before the disposition goes out, so the answer cannot come first.
        let mut answer = receiver.settlement(&msg.info);
        match timeout_at(deadline, op(receiver, msg.info.clone(), error)).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                self.link.receiver = None;
                // A link lost with its session (or connection) is re-attached on a new
                // connection: the ended session takes no attach.
                let stopped = matches!(e, IllegalLinkStateError::SessionStopped(_));
                if stopped || conn.stop_now().is_some() {
                    conn.mark_broken();
                }
                return Err(ReceiveError::LinkLost);
            }
            Err(_) => return Err(ReceiveError::Timeout),
        }
        let settled = tokio::select! {
            biased;
            a = timeout_at(deadline, answer.settled()) => a,
            _ = conn.stopped() => Ok(None),
        };
        match settled {
            Ok(Some(state)) => judge(asked, state),
            // The link's relay is gone: the broker detached the link, or the session or the
            // connection ended. No answer can come on it any more.
            Ok(None) => {
                self.link.receiver = None;
                let why = match conn.stop_now() {
                    Some(SendOutcome::SessionEnded { condition }) => {
                        conn.mark_broken();
                        format!("the broker ended the session ({condition})")
                    }
                    Some(_) => {
                        conn.mark_broken();
                        "the connection closed".to_string()
                    }
                    None => "the link was detached".to_string(),
                };
                Err(ReceiveError::SessionEnded(why))
            }
            Err(_) => Err(ReceiveError::Timeout),
        }
    }
}

/// The broker's settled answer to what was `asked`: `Ok` when it applied it.
fn judge(asked: Asked, state: Option<DeliveryState>) -> Result<(), ReceiveError> {
    let named = match state {
        // A settlement with no outcome: the broker applied what it was sent.
        None => return Ok(()),
        Some(DeliveryState::Rejected(r)) => {
            let condition = r.error.as_ref().map(|e| condition_str(&e.condition));
            if condition.as_deref() == Some(LOCK_LOST) {
                return Err(ReceiveError::LockLost);
            }
            // A dead-letter is a `rejected` of its own: answered in kind, it was applied.
            if asked == Asked::DeadLetter {
                return Ok(());
            }
            condition.map_or_else(|| "rejected".to_string(), |c| format!("rejected ({c})"))
        }
        Some(_) if asked != Asked::Complete => return Ok(()),
        Some(DeliveryState::Accepted(_)) => return Ok(()),
        Some(DeliveryState::Released(_)) => "released".to_string(),
        Some(DeliveryState::Modified(_)) => "modified".to_string(),
        Some(_) => "a non-terminal state".to_string(),
    };
    Err(ReceiveError::Rejected(named))
}

#[cfg(test)]
mod tests {
    use super::*;
    use fe2o3_amqp::types::messaging::{Accepted, Rejected, Released};

    fn rejected(condition: &str) -> Option<DeliveryState> {
        let error =
            definitions::Error::new(ErrorCondition::Custom(Symbol::from(condition)), None, None);
        Some(DeliveryState::Rejected(Rejected { error: Some(error) }))
    }

    #[test]
    fn the_brokers_answer_is_judged_by_what_was_asked() {
        let accepted = || Some(DeliveryState::Accepted(Accepted {}));
        let released = || Some(DeliveryState::Released(Released {}));
        let cases = [
            (Asked::Complete, accepted(), Ok(())),
            (Asked::Complete, None, Ok(())),
            (
                Asked::Complete,
                rejected(LOCK_LOST),
                Err(ReceiveError::LockLost),
            ),
            (
                Asked::Complete,
                rejected("amqp:not-found"),
                Err(ReceiveError::Rejected("rejected (amqp:not-found)".into())),
            ),
            (
                Asked::Complete,
                released(),
                Err(ReceiveError::Rejected("released".into())),
            ),
            (Asked::Abandon, released(), Ok(())),
            (
                Asked::Abandon,
                rejected(LOCK_LOST),
                Err(ReceiveError::LockLost),
            ),
            (
                Asked::DeadLetter,
                rejected("com.microsoft:dead-letter"),
                Ok(()),
            ),
            (
                Asked::DeadLetter,
                rejected(LOCK_LOST),
                Err(ReceiveError::LockLost),
            ),
        ];
        for (asked, state, want) in cases {
            assert_eq!(judge(asked, state.clone()), want, "{asked:?} {state:?}");
        }
    }
}
