//! What one send ended in ([`SendOutcome`]) and the pure mapping from AMQP results to it.
//!
//! Conditions (docs/protocol.md §6): `com.microsoft:server-busy` → throttled;
//! `amqp:unauthorized-access` → unauthorized; `amqp:not-found` → not found;
//! `amqp:link:message-size-exceeded` → too large; a connection that closed → connection
//! error; a session the broker ended → session ended; a link it detached (forced, stolen,
//! or over credit) → link detached; anything else → rejected, with the condition kept.

use fe2o3_amqp::link::{DetachError, LinkStateError, SendError, SessionStopReason};
use fe2o3_amqp::types::definitions::{self, ErrorCondition};
use fe2o3_amqp::types::messaging::Outcome;
use fe2o3_amqp::types::primitives::Symbol;

/// Condition Azure uses when it throttles a namespace.
pub const SERVER_BUSY: &str = "com.microsoft:server-busy";

/// The class of one send attempt.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum SendOutcome {
    /// Settled *accepted*.
    Accepted,
    /// Rejected with `com.microsoft:server-busy`.
    Throttled,
    /// Rejected (or detached) with any other condition.
    Rejected {
        /// The AMQP error condition, e.g. `com.microsoft:entity-disabled`.
        condition: String,
    },
    /// CBS put-token answered 401, or `amqp:unauthorized-access`.
    Unauthorized,
    /// CBS put-token answered 404, or `amqp:not-found`.
    NotFound,
    /// The message is larger than the link allows (`amqp:link:message-size-exceeded`).
    TooLarge,
    /// No settlement within the send timeout.
    Timeout,
    /// TCP was refused (or the host unreachable): nothing listens there.
    Connect,
    /// The HTTP proxy answered the CONNECT with this status (403, 407, 502…) instead of
    /// opening the tunnel.
    ProxyRefused {
        /// The proxy's status code.
        status: u16,
    },
    /// The connection could not be (re)opened before the send's deadline or the connect
    /// timeout, whichever came first: TCP, TLS, the AMQP open, the CBS put-token or the link
    /// attach did not finish.
    ConnectTimeout,
    /// The connection closed (or was reset, or failed its handshake) while sending.
    ConnectionError,
    /// The broker ended the session the link was on (the connection stayed open).
    SessionEnded {
        /// The end's error condition (`none` for a clean end).
        condition: String,
    },
    /// The broker detached the link, e.g. `amqp:link:detach-forced`.
    LinkDetached {
        /// The detach's error condition.
        condition: String,
    },
}

/// The result of [`crate::SbSender::send`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SendResult {
    /// What the attempt ended in.
    pub outcome: SendOutcome,
    /// Body bytes written to the link (0 when the transfer was never written).
    pub bytes_sent: u64,
}

/// The text of an AMQP error condition, e.g. `amqp:not-found`.
pub fn condition_str(c: &ErrorCondition) -> String {
    let sym: Symbol = match c {
        ErrorCondition::AmqpError(e) => e.into(),
        ErrorCondition::ConnectionError(e) => e.into(),
        ErrorCondition::SessionError(e) => e.into(),
        ErrorCondition::LinkError(e) => e.into(),
        ErrorCondition::Custom(s) => s.clone(),
    };
    sym.0
}

/// Classify an error condition carried by a rejection or a detach.
pub fn classify_condition(condition: &str) -> SendOutcome {
    match condition {
        SERVER_BUSY => SendOutcome::Throttled,
        "amqp:unauthorized-access" => SendOutcome::Unauthorized,
        "amqp:not-found" => SendOutcome::NotFound,
        "amqp:link:message-size-exceeded" => SendOutcome::TooLarge,
        "amqp:link:detach-forced"
        | "amqp:link:stolen"
        | "amqp:link:transfer-limit-exceeded"
        | "amqp:link:redirect" => SendOutcome::LinkDetached {
            condition: condition.to_string(),
        },
        c if c.starts_with("amqp:connection:") => SendOutcome::ConnectionError,
        c if c.starts_with("amqp:session:") => SendOutcome::SessionEnded {
            condition: c.to_string(),
        },
        c => SendOutcome::Rejected {
            condition: c.to_string(),
        },
    }
}

/// Classify the settlement of a delivery.
pub fn classify_settlement(outcome: &Outcome) -> SendOutcome {
    match outcome {
        Outcome::Accepted(_) => SendOutcome::Accepted,
        Outcome::Rejected(r) => match &r.error {
            Some(e) => classify_condition(&condition_str(&e.condition)),
            None => SendOutcome::Rejected {
                condition: "rejected".to_string(),
            },
        },
        Outcome::Released(_) => SendOutcome::Rejected {
            condition: "released".to_string(),
        },
        Outcome::Modified(_) => SendOutcome::Rejected {
            condition: "modified".to_string(),
        },
        #[allow(unreachable_patterns)]
        _ => SendOutcome::Rejected {
            condition: "unexpected-outcome".to_string(),
        },
    }
}

fn classify_error(e: &definitions::Error) -> SendOutcome {
    classify_condition(&condition_str(&e.condition))
}

/// Classify a stopped session: its end's condition when it names a class (unauthorized,
/// say), else [`SendOutcome::SessionEnded`] with it.
pub fn classify_stop(reason: &SessionStopReason) -> SendOutcome {
    let ended = |condition: String| SendOutcome::SessionEnded { condition };
    match reason {
        SessionStopReason::RemoteEndedWithError(e) | SessionStopReason::EndedWithError(e) => {
            match classify_error(e) {
                SendOutcome::Rejected { condition } | SendOutcome::LinkDetached { condition } => {
                    ended(condition)
                }
                other => other,
            }
        }
        SessionStopReason::Ended | SessionStopReason::RemoteEnded => ended("none".into()),
        SessionStopReason::ConnectionStopped(_) => SendOutcome::ConnectionError,
    }
}

/// Classify an error from writing a transfer or waiting for its settlement.
pub fn classify_send_error(e: &SendError) -> SendOutcome {
    match e {
        SendError::MessageSizeExceeded(_) => SendOutcome::TooLarge,
        SendError::Detached(d) => classify_detach(d),
        SendError::LinkStateError(l) => match l {
            LinkStateError::RemoteDetachedWithError(e)
            | LinkStateError::RemoteClosedWithError(e) => classify_error(e),
            LinkStateError::SessionStopped(r) => classify_stop(r),
            _ => SendOutcome::ConnectionError,
        },
        SendError::NonTerminalDeliveryState | SendError::IllegalDeliveryState => {
            SendOutcome::Rejected {
                condition: "hubload:non-terminal-state".to_string(),
            }
        }
        SendError::MessageEncodeError => SendOutcome::Rejected {
            condition: "hubload:encode-error".to_string(),
        },
    }
}

/// Classify a detach (from a send or an attach).
pub fn classify_detach(d: &DetachError) -> SendOutcome {
    match d {
        DetachError::RemoteDetachedWithError(e) | DetachError::RemoteClosedWithError(e) => {
            classify_error(e)
        }
        DetachError::SessionStopped(r) => classify_stop(r),
        _ => SendOutcome::ConnectionError,
    }
}

/// Whether a CBS put-token status means the token was taken: Azure answers 202; 200 is
/// accepted too, as Microsoft's own AMQP library (azure-amqp's `AmqpCbsLink`) does.
pub fn cbs_status_ok(code: u16) -> bool {
    matches!(code, 200 | 202)
}

/// Classify a CBS put-token status code that is not [`cbs_status_ok`].
pub fn classify_cbs_status(code: u16) -> SendOutcome {
    match code {
        401 | 403 => SendOutcome::Unauthorized,
        404 => SendOutcome::NotFound,
        c => SendOutcome::Rejected {
            condition: format!("cbs-status-{c}"),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fe2o3_amqp::types::definitions::{AmqpError, ConnectionError, LinkError};
    use fe2o3_amqp::types::messaging::{Accepted, Modified, Rejected, Released};

    fn err(c: impl Into<ErrorCondition>) -> definitions::Error {
        definitions::Error::new(c.into(), None, None)
    }
    fn custom(s: &str) -> ErrorCondition {
        ErrorCondition::Custom(Symbol::from(s))
    }
    fn rejected(c: ErrorCondition) -> Outcome {
        Outcome::Rejected(Rejected {
            error: Some(err(c)),
        })
    }

    #[test]
    fn settlement_table() {
        let cases = [
            (Outcome::Accepted(Accepted {}), SendOutcome::Accepted),
            (rejected(custom(SERVER_BUSY)), SendOutcome::Throttled),
            (
                rejected(AmqpError::UnauthorizedAccess.into()),
                SendOutcome::Unauthorized,
            ),
            (rejected(AmqpError::NotFound.into()), SendOutcome::NotFound),
            (
                rejected(LinkError::MessageSizeExceeded.into()),
                SendOutcome::TooLarge,
            ),
            (
                rejected(custom("com.microsoft:entity-disabled")),
                SendOutcome::Rejected {
                    condition: "com.microsoft:entity-disabled".into(),
                },
            ),
            (
                rejected(AmqpError::InternalError.into()),
                SendOutcome::Rejected {
                    condition: "amqp:internal-error".into(),
                },
            ),
            (
                Outcome::Rejected(Rejected { error: None }),
                SendOutcome::Rejected {
                    condition: "rejected".into(),
                },
            ),
            (
                Outcome::Released(Released {}),
                SendOutcome::Rejected {
                    condition: "released".into(),
                },
            ),
            (
                Outcome::Modified(Modified {
                    delivery_failed: None,
                    undeliverable_here: None,
                    message_annotations: None,
                }),
                SendOutcome::Rejected {
                    condition: "modified".into(),
                },
            ),
        ];
        for (o, want) in cases {
            assert_eq!(classify_settlement(&o), want, "{o:?}");
        }
    }

    #[test]
    fn send_error_table() {
        use fe2o3_amqp::link::MessageSizeExceeded;
        let cases = [
            (
                SendError::MessageSizeExceeded(MessageSizeExceeded {
                    size: 2,
                    max_size: 1,
                }),
                SendOutcome::TooLarge,
            ),
            (
                SendError::Detached(DetachError::RemoteClosedWithError(err(
                    AmqpError::UnauthorizedAccess,
                ))),
                SendOutcome::Unauthorized,
            ),
            (
                SendError::Detached(DetachError::RemoteDetachedWithError(err(
                    AmqpError::NotFound,
                ))),
                SendOutcome::NotFound,
            ),
            (
                SendError::Detached(DetachError::RemoteDetachedWithError(err(
                    LinkError::DetachForced,
                ))),
                SendOutcome::LinkDetached {
                    condition: "amqp:link:detach-forced".into(),
                },
            ),
            (
                SendError::LinkStateError(LinkStateError::RemoteDetachedWithError(err(
                    LinkError::TransferLimitExceeded,
                ))),
                SendOutcome::LinkDetached {
                    condition: "amqp:link:transfer-limit-exceeded".into(),
                },
            ),
            (
                SendError::LinkStateError(LinkStateError::SessionStopped(
                    SessionStopReason::RemoteEndedWithError(err(AmqpError::InternalError)),
                )),
                SendOutcome::SessionEnded {
                    condition: "amqp:internal-error".into(),
                },
            ),
            (
                SendError::LinkStateError(LinkStateError::SessionStopped(
                    SessionStopReason::RemoteEnded,
                )),
                SendOutcome::SessionEnded {
                    condition: "none".into(),
                },
            ),
            (
                SendError::LinkStateError(LinkStateError::RemoteClosedWithError(err(
                    LinkError::MessageSizeExceeded,
                ))),
                SendOutcome::TooLarge,
            ),
            (
                SendError::LinkStateError(LinkStateError::SessionStopped(
                    SessionStopReason::ConnectionStopped(
                        fe2o3_amqp::connection::ConnectionStopReason::RemoteClosedWithError(err(
                            ConnectionError::ConnectionForced,
                        )),
                    ),
                )),
                SendOutcome::ConnectionError,
            ),
            (
                SendError::LinkStateError(LinkStateError::SessionStopped(
                    SessionStopReason::RemoteEndedWithError(err(AmqpError::UnauthorizedAccess)),
                )),
                SendOutcome::Unauthorized,
            ),
            (
                SendError::LinkStateError(LinkStateError::RemoteClosed),
                SendOutcome::ConnectionError,
            ),
            (
                SendError::MessageEncodeError,
                SendOutcome::Rejected {
                    condition: "hubload:encode-error".into(),
                },
            ),
        ];
        for (e, want) in cases {
            assert_eq!(classify_send_error(&e), want, "{e:?}");
        }
    }

    #[test]
    fn cbs_status_table() {
        assert!(cbs_status_ok(200) && cbs_status_ok(202));
        assert!(!cbs_status_ok(201) && !cbs_status_ok(204) && !cbs_status_ok(401));
        assert_eq!(classify_cbs_status(401), SendOutcome::Unauthorized);
        assert_eq!(classify_cbs_status(403), SendOutcome::Unauthorized);
        assert_eq!(classify_cbs_status(404), SendOutcome::NotFound);
        assert_eq!(
            classify_cbs_status(500),
            SendOutcome::Rejected {
                condition: "cbs-status-500".into()
            }
        );
    }
}
