//! The subscription phase: subscribe (or unsubscribe) every subscriber, then wait for the hub's verification.
//!
//! Requests go out with bounded concurrency; a 2xx (202 per WebSub) is "accepted", anything
//! else is refused with the hub's reason kept for the first failure. The hub then verifies
//! each accepted request with a GET that the callback server answers; the phase waits until
//! every accepted request is verified or denied, or the timeout passes.

use std::net::SocketAddr;
use std::time::Duration;

use futures_util::stream::{self, StreamExt};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::client::{self, post_form};
use super::fleet::Fleet;
use super::fleet_shared::{Intent, Shared, Subscriber};
use crate::targets::request::ExtraHeaders;

/// How to reach the hub for the phase.
#[derive(Debug, Clone)]
pub struct PhaseSettings {
    /// The hub URL the requests are POSTed to.
    pub hub_url: url::Url,
    /// Where to connect (`--resolve`); `None`: the URL's host as DNS gives it.
    pub connect_to: Option<Vec<SocketAddr>>,
    /// Credentials and gateway headers for the hub (validated in config; never shown).
    pub headers: ExtraHeaders,
    /// Requests in flight at once (≥ 1).
    pub concurrency: usize,
    /// Per request, and for the verification wait after the last request.
    pub timeout: Duration,
    /// Send the requests over h2c with prior knowledge (`--http-version 2`, http hub).
    pub http2: bool,
}

impl PhaseSettings {
    /// POST the form `body` to the hub as these settings say (address, headers, timeout,
    /// h2c): every (un)subscribe request of the phase and of churn goes through here.
    pub(super) async fn post(&self, body: &str) -> Result<client::Reply, String> {
        post_form(
            &self.hub_url,
            self.connect_to.as_deref(),
            body,
            &self.headers,
            self.timeout,
            self.http2,
        )
        .await
    }
}

/// How a subscription (or unsubscription) phase went, in subscribers.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SubscriptionPhase {
    /// Requests sent.
    pub requested: u64,
    /// Answered 2xx (202).
    pub accepted: u64,
    /// Verified by the hub (challenge echoed).
    pub verified: u64,
    /// Denied by the hub (`hub.mode=denied`).
    pub denied: u64,
    /// Accepted but neither verified nor denied within the timeout.
    pub unverified: u64,
    /// Not accepted: another status or no answer.
    pub refused: u64,
    /// Abandoned in flight because the run was stopped (not the hub's doing).
    pub cancelled: u64,
    /// Wall-clock duration, seconds.
    pub duration_s: f64,
    /// The first refusal, as one line with the hub's reason.
    pub first_error: Option<String>,
}

impl Fleet {
    /// Subscribe every subscriber (`hub.mode=subscribe`). Once `cancel` fires no request
    /// starts, those in flight are abandoned (`cancelled`) and the verification wait ends.
    pub async fn subscribe(
        &self,
        p: &PhaseSettings,
        cancel: &CancellationToken,
    ) -> SubscriptionPhase {
        run_phase(&self.shared, p, true, cancel).await
    }

    /// Unsubscribe every subscriber (`hub.mode=unsubscribe`); `cancel` as for `subscribe`.
    pub async fn unsubscribe(
        &self,
        p: &PhaseSettings,
        cancel: &CancellationToken,
    ) -> SubscriptionPhase {
        run_phase(&self.shared, p, false, cancel).await
    }
}

/// The form of a (un)subscribe request for `s`.
pub(super) fn form(sh: &Shared, s: &Subscriber, subscribe: bool) -> String {
    let mut f = url::form_urlencoded::Serializer::new(String::new());
    f.append_pair(
        "hub.mode",
        if subscribe {
            "subscribe"
        } else {
            "unsubscribe"
        },
    )
    .append_pair("hub.callback", &sh.callback(s))
    .append_pair("hub.topic", &s.hub_topic);
    if subscribe {
        f.append_pair("hub.lease_seconds", &sh.lease_seconds.to_string())
            .append_pair("hub.secret", sh.secret.expose());
    }
    f.finish()
}

async fn run_phase(
    sh: &Shared,
    p: &PhaseSettings,
    subscribe: bool,
    cancel: &CancellationToken,
) -> SubscriptionPhase {
    let started = Instant::now();
    let (pending, done) = if subscribe {
        (Intent::Subscribing, Intent::Verified)
    } else {
        (Intent::Unsubscribing, Intent::Unsubscribed)
    };
    // The futures are built up front, not by a closure inside the stream: a closure there
    // makes the whole run's future fail the `Send` check (rustc's higher-ranked lifetimes).
    // Each is polled only when a slot frees: after the stop it starts nothing (`None`), and
    // one in flight is abandoned (`Some(None)`, counted `cancelled`).
    let requests: Vec<_> = sh
        .subs
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let body = form(sh, s, subscribe);
            async move {
                if cancel.is_cancelled() {
                    return (i, None);
                }
                s.set_intent(pending);
                let post = p.post(&body);
                let r = tokio::select! {
                    biased;
                    _ = cancel.cancelled() => None,
                    r = post => Some(r),
                };
                (i, Some(r))
            }
        })
        .collect();
    let replies: Vec<(usize, Option<Result<client::Reply, String>>)> = stream::iter(requests)
        .buffer_unordered(p.concurrency.max(1))
        .filter_map(|(i, r)| std::future::ready(r.map(|r| (i, r))))
        .collect()
        .await;
    let mut out = SubscriptionPhase {
        requested: replies.len() as u64,
        ..SubscriptionPhase::default()
    };
    let mut accepted = Vec::new();
    for (i, r) in replies {
        let s = &sh.subs[i];
        let Some(r) = r else {
            out.cancelled += 1;
            s.set_intent(Intent::None);
            continue;
        };
        match r {
            Ok(r) if (200..300).contains(&r.status) => accepted.push(i),
            other => {
                out.refused += 1;
                s.set_intent(Intent::None);
                out.first_error.get_or_insert_with(|| {
                    let what = match other {
                        Ok(r) => format!("HTTP {} ({})", r.status, client::reason(&r.body)),
                        Err(e) => e,
                    };
                    let mode = if subscribe {
                        "subscribe"
                    } else {
                        "unsubscribe"
                    };
                    format!("{mode} {}: {what}", s.hub_topic)
                });
            }
        }
    }
    out.accepted = accepted.len() as u64;
    // Wait for the verifications: every notification re-checks; the timeout bounds it.
    let deadline = Instant::now() + p.timeout;
    let open = || accepted.iter().any(|i| sh.subs[*i].intent() == pending);
    sh.wait_intents(open, deadline, cancel).await;
    for i in accepted {
        match sh.subs[i].intent() {
            i if i == done => out.verified += 1,
            Intent::Denied => out.denied += 1,
            _ => out.unverified += 1,
        }
    }
    out.duration_s = started.elapsed().as_secs_f64();
    out
}
