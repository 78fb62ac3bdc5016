//! What every delivery to a callback is sent with, on either path (the in-memory queues of
//! `distribute`, or the broker's receive loops in `broker::deliver`): the client, the timeout,
//! how many workers and POSTs at once, and the `Link` header naming hub and topic.

use std::time::Duration;

use axum::http::HeaderValue;

use crate::config::HubConfig;

/// The delivery settings both paths share, made from the hub's configuration in one place.
#[derive(Debug, Clone)]
pub(crate) struct DeliverySettings {
    /// The hub's one outgoing client (TLS callbacks, and anything the hub's own connections do
    /// not take).
    pub client: reqwest::Client,
    /// Longest delivery attempt (`--delivery-timeout`).
    pub timeout: Duration,
    /// Most delivery workers per subscription (`--delivery-concurrency`).
    pub concurrency: usize,
    /// Most POSTs one worker writes at once to an `http://` callback (`--delivery-pipeline`).
    pub pipeline: usize,
}

impl DeliverySettings {
    /// The settings of `cfg`, sending with `client`.
    pub fn new(cfg: &HubConfig, client: reqwest::Client) -> Self {
        Self {
            client,
            timeout: cfg.delivery_timeout,
            concurrency: cfg.delivery_concurrency,
            pipeline: cfg.delivery_pipeline,
        }
    }
}

/// `<hub>; rel="hub", <topic>; rel="self"`: the value of every delivery's `Link` field
/// (WebSub, content distribution); one that cannot be a field value falls back to naming no
/// hub.
pub(crate) fn link_header(hub: &str, topic: &str) -> HeaderValue {
    HeaderValue::try_from(format!("<{hub}>; rel=\"hub\", <{topic}>; rel=\"self\""))
        .unwrap_or_else(|_| HeaderValue::from_static("<>; rel=\"hub\""))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn link_header_names_hub_and_topic() {
        assert_eq!(
            link_header("http://127.0.0.1:1/", "t.login"),
            "<http://127.0.0.1:1/>; rel=\"hub\", <t.login>; rel=\"self\""
        );
    }
}
