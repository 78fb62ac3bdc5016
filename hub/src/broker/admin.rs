//! The hub's client of Service Bus's administration API (ATOM/XML over HTTPS on Azure, HTTP
//! on the emulator's `--admin-listen` port): create a topic at register and a subscription
//! at subscribe (Azure attaches no receiver to one that does not exist), delete a
//! subscription at unsubscribe or lease expiry, delete a topic at deregister. Each call is
//! one request with a fresh SAS token, bounded by [`TIMEOUT`], and counted
//! (docs/hub-servicebus.md). Errors never carry the key or the token.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

use hubload_servicebus::sas::urlencode;
use hubload_servicebus::ConnectionString;

use crate::broker_stats::BrokerCounters;

/// Longest one administration request may take.
const TIMEOUT: Duration = Duration::from_secs(10);
/// The API version the requests name (the one Microsoft's SDKs send).
const API_VERSION: &str = "2021-05";
const TOPIC_BODY: &str = "<?xml version=\"1.0\" encoding=\"utf-8\"?>\
<entry xmlns=\"http://www.w3.org/2005/Atom\"><content type=\"application/xml\">\
<TopicDescription xmlns=\"http://schemas.microsoft.com/netservices/2010/10/servicebus/connect\" \
xmlns:i=\"http://www.w3.org/2001/XMLSchema-instance\"/></content></entry>";

const SUBSCRIPTION_BODY: &str = "<?xml version=\"1.0\" encoding=\"utf-8\"?>\
<entry xmlns=\"http://www.w3.org/2005/Atom\"><content type=\"application/xml\">\
<SubscriptionDescription xmlns=\"http://schemas.microsoft.com/netservices/2010/10/servicebus/connect\" \
xmlns:i=\"http://www.w3.org/2001/XMLSchema-instance\"/></content></entry>";

/// A connection to the administration API.
#[derive(Debug)]
pub(crate) struct Admin {
    client: reqwest::Client,
    /// `https://host` or `http://host:port`, no trailing slash.
    base: String,
    /// The connection: its key signs each request's token (or its own token is sent).
    cs: ConnectionString,
    counters: Arc<BrokerCounters>,
}

/// The administration endpoint of `cs` when none is given: Azure's is the namespace over
/// HTTPS; an emulator's port is not in its connection string, so it has none unless given.
pub(crate) fn default_endpoint(cs: &ConnectionString) -> Option<String> {
    (!cs.use_development_emulator).then(|| format!("https://{}", cs.host))
}

impl Admin {
    pub(crate) fn new(
        endpoint: &str,
        cs: &ConnectionString,
        counters: Arc<BrokerCounters>,
    ) -> Result<Admin, String> {
        let client = reqwest::Client::builder()
            .timeout(TIMEOUT)
            .build()
            .map_err(|e| format!("administration client: {e}"))?;
        Ok(Admin {
            client,
            base: endpoint.trim_end_matches('/').to_string(),
            cs: cs.clone(),
            counters,
        })
    }

    /// One request; its status, or `None` when no answer came.
    async fn call(&self, method: reqwest::Method, path: &str, body: Option<&str>) -> Option<u16> {
        let url = format!("{}/{path}?api-version={API_VERSION}", self.base);
        let (token, _) = self.cs.token_for(&self.base, Duration::from_secs(300));
        let mut req = self
            .client
            .request(method, url)
            .header("Authorization", token);
        if let Some(b) = body {
            req = req
                .header(
                    "Content-Type",
                    "application/atom+xml;type=entry;charset=utf-8",
                )
                .body(b.to_string());
        }
        match req.send().await {
            Ok(r) => Some(r.status().as_u16()),
            Err(e) => {
                tracing::warn!(path, "administration request failed: {}", e.without_url());
                None
            }
        }
    }

    /// Create `topic` (an existing one is fine: 409); whether it exists now.
    pub(crate) async fn create_topic(&self, topic: &str) -> bool {
        self.create(&urlencode(topic), TOPIC_BODY).await
    }

    /// Create the subscription `name` of `topic` with the broker's defaults (an existing one
    /// is fine); whether it exists now.
    pub(crate) async fn create_subscription(&self, topic: &str, name: &str) -> bool {
        let path = format!("{}/Subscriptions/{}", urlencode(topic), urlencode(name));
        self.create(&path, SUBSCRIPTION_BODY).await
    }

    async fn create(&self, path: &str, body: &str) -> bool {
        match self.call(reqwest::Method::PUT, path, Some(body)).await {
            Some(200 | 201) => {
                self.counters.entity_creates.fetch_add(1, Relaxed);
                true
            }
            Some(409) => true,
            other => {
                self.counters.entity_failures.fetch_add(1, Relaxed);
                tracing::warn!(path, status = ?other, "entity not created at the broker");
                false
            }
        }
    }

    /// Delete `topic` and its subscriptions.
    pub(crate) async fn delete_topic(&self, topic: &str) {
        self.delete(&urlencode(topic)).await;
    }

    /// Delete the subscription `name` of `topic`.
    pub(crate) async fn delete_subscription(&self, topic: &str, name: &str) {
        let path = format!("{}/Subscriptions/{}", urlencode(topic), urlencode(name));
        self.delete(&path).await;
    }

    async fn delete(&self, path: &str) {
        match self.call(reqwest::Method::DELETE, path, None).await {
            Some(200 | 204) => self.counters.entity_deletes.fetch_add(1, Relaxed),
            other => {
                tracing::warn!(path, status = ?other, "entity not deleted at the broker");
                self.counters.entity_failures.fetch_add(1, Relaxed)
            }
        };
    }
}
