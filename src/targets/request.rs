//! The bytes hubload sends to a WebSub hub: the request shapes of both dialects
//! (docs/protocol.md §7), with the caller's validated extra headers.
//!
//! Everything here is rendered once per topic before the load; a Ballerina publish only
//! appends its correlation id, length and body to the head rendered here.

use serde::{Serialize, Serializer};

use crate::secret::Secret;

/// One header hubload adds to every hub request: a credential or a gateway header. Built only
/// by `config` after validation (an RFC 7230 token name, a value without control characters),
/// so no input can add a line to a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtraHeader {
    /// The header name as given.
    pub name: String,
    /// The value; every value is treated as a credential and never shown.
    pub value: Secret,
}

/// The extra headers of every hub request, in order. Reports show the names only, as
/// `{"Name": "<redacted>"}`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExtraHeaders(pub Vec<ExtraHeader>);

impl ExtraHeaders {
    /// Whether a header of this name (any case) is present.
    pub fn has(&self, name: &str) -> bool {
        self.0.iter().any(|h| h.name.eq_ignore_ascii_case(name))
    }

    /// Append `Name: value\r\n` for each header.
    pub fn write(&self, out: &mut String) {
        for h in &self.0 {
            out.push_str(&h.name);
            out.push_str(": ");
            out.push_str(h.value.expose());
            out.push_str("\r\n");
        }
    }
}

impl Serialize for ExtraHeaders {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        // Names are unique (config checks, any case); each value shows as `<redacted>`.
        s.collect_map(self.0.iter().map(|h| (h.name.as_str(), &h.value)))
    }
}

/// The field carrying a Ballerina publish's event id (its correlation id).
pub const ACTIVITY_ID: &str = "activityid";

/// Which publisher convention the hub speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Dialect {
    /// Ballerina/WSO2: topics are registered, a publish carries the event as its body.
    #[default]
    Ballerina,
    /// The common WebSub convention: topics are URLs, a publish is a thin ping (a form body
    /// naming the topic) and the hub fetches the content from the topic URL.
    Websub,
}

impl Dialect {
    /// The flag word.
    pub fn as_str(self) -> &'static str {
        match self {
            Dialect::Ballerina => "ballerina",
            Dialect::Websub => "websub",
        }
    }
}

/// Where the hub is, as request lines need it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HubTarget {
    /// `Host` header value (`host` or `host:port`).
    pub host: String,
    /// Path and existing query of the hub URL, e.g. `/hub` or `/hub?x=1`.
    pub path: String,
}

/// How requests to one hub are rendered: the hub, the dialect, the topic URL prefix (websub)
/// and the extra headers.
#[derive(Debug, Clone)]
pub struct RequestShape {
    /// The hub.
    pub hub: HubTarget,
    /// The dialect.
    pub dialect: Dialect,
    /// Websub dialect: the topic URL is this prefix followed by the topic name.
    pub topic_url_prefix: String,
    /// Credentials and gateway headers.
    pub headers: ExtraHeaders,
}

/// Percent-encode a form value (`application/x-www-form-urlencoded`, as WHATWG URL does).
fn enc(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

impl RequestShape {
    /// The topic as the hub knows it: the name (ballerina) or the topic URL (websub).
    pub fn hub_topic(&self, name: &str) -> String {
        match self.dialect {
            Dialect::Ballerina => name.to_string(),
            Dialect::Websub => format!("{}{name}", self.topic_url_prefix),
        }
    }

    /// The request line, `Host`, `User-Agent` and `Content-Type`, then the extra headers.
    fn start(&self, target: &str, content_type: &str) -> String {
        let mut h = format!(
            "POST {target} HTTP/1.1\r\nHost: {}\r\nUser-Agent: hubload/{}\r\nContent-Type: {content_type}\r\n",
            self.hub.host,
            env!("CARGO_PKG_VERSION"),
        );
        self.headers.write(&mut h);
        h
    }

    /// `POST {path}?hub.mode=M&hub.topic=T` and the common headers, open for more headers
    /// (the Ballerina dialect's publish, register and deregister).
    pub fn query_head(&self, mode: &str, topic: &str, content_type: &str) -> Vec<u8> {
        let sep = if self.hub.path.contains('?') {
            '&'
        } else {
            '?'
        };
        let target = format!(
            "{}{sep}hub.mode={mode}&hub.topic={}",
            self.hub.path,
            enc(&self.hub_topic(topic))
        );
        self.start(&target, content_type).into_bytes()
    }

    /// A complete register or deregister request (no body).
    pub fn phase_request(&self, mode: &str, topic: &str) -> Vec<u8> {
        let mut req = self.query_head(mode, topic, "application/json");
        req.extend_from_slice(b"Content-Length: 0\r\n\r\n");
        req
    }

    /// The Ballerina publish head up to (not including) the `activityid` value; the event's
    /// id, `Content-Length` and body follow.
    pub fn publish_head(&self, topic: &str) -> Vec<u8> {
        let mut h = self.query_head("publish", topic, "application/json");
        h.extend_from_slice(b"Accept: application/json\r\n");
        h.extend_from_slice(ACTIVITY_ID.as_bytes());
        h.extend_from_slice(b": ");
        h
    }

    /// The complete websub thin ping for `topic`: `POST <hub>` with the form body
    /// `hub.mode=publish&hub.topic=<topic URL>&hub.url=<topic URL>` (both names: hubs
    /// disagree on which one they read).
    pub fn thin_ping(&self, topic: &str) -> Vec<u8> {
        let url = enc(&self.hub_topic(topic));
        let body = format!("hub.mode=publish&hub.topic={url}&hub.url={url}");
        let mut h = self.start(&self.hub.path, "application/x-www-form-urlencoded");
        h.push_str("Content-Length: ");
        h.push_str(itoa::Buffer::new().format(body.len()));
        h.push_str("\r\n\r\n");
        h.push_str(&body);
        h.into_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(dialect: Dialect, headers: &[(&str, &str)]) -> RequestShape {
        RequestShape {
            hub: HubTarget {
                host: "hub.example:8080".into(),
                path: "/hub".into(),
            },
            dialect,
            topic_url_prefix: "http://hubload-topics:9100/t/".into(),
            headers: ExtraHeaders(
                headers
                    .iter()
                    .map(|(n, v)| ExtraHeader {
                        name: n.to_string(),
                        value: Secret::new(*v),
                    })
                    .collect(),
            ),
        }
    }

    fn text(b: Vec<u8>) -> String {
        String::from_utf8(b).unwrap()
    }

    const UA: &str = concat!("User-Agent: hubload/", env!("CARGO_PKG_VERSION"), "\r\n");

    #[test]
    fn ballerina_publish_head_bytes() {
        let s = shape(
            Dialect::Ballerina,
            &[("Authorization", "Bearer abc"), ("X-Api-Key", "k1")],
        );
        assert_eq!(
            text(s.publish_head("t1.o1.schema.WSO2.v1.event.login")),
            format!(
                "POST /hub?hub.mode=publish&hub.topic=t1.o1.schema.WSO2.v1.event.login HTTP/1.1\r\n\
                 Host: hub.example:8080\r\n{UA}Content-Type: application/json\r\n\
                 Authorization: Bearer abc\r\nX-Api-Key: k1\r\n\
                 Accept: application/json\r\nactivityid: "
            )
        );
    }

    #[test]
    fn ballerina_register_bytes_and_existing_query() {
        let mut s = shape(Dialect::Ballerina, &[]);
        s.hub.path = "/hub?tenant=a b".into();
        assert_eq!(
            text(s.phase_request("register", "a&b c")),
            format!(
                "POST /hub?tenant=a b&hub.mode=register&hub.topic=a%26b+c HTTP/1.1\r\n\
                 Host: hub.example:8080\r\n{UA}Content-Type: application/json\r\n\
                 Content-Length: 0\r\n\r\n"
            )
        );
    }

    #[test]
    fn websub_thin_ping_bytes() {
        let s = shape(Dialect::Websub, &[("Authorization", "Basic YTpi")]);
        let body = "hub.mode=publish\
                    &hub.topic=http%3A%2F%2Fhubload-topics%3A9100%2Ft%2Flogin\
                    &hub.url=http%3A%2F%2Fhubload-topics%3A9100%2Ft%2Flogin";
        assert_eq!(
            text(s.thin_ping("login")),
            format!(
                "POST /hub HTTP/1.1\r\nHost: hub.example:8080\r\n{UA}\
                 Content-Type: application/x-www-form-urlencoded\r\n\
                 Authorization: Basic YTpi\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            )
        );
        // The body decodes back to the topic URL under both names.
        let pairs: Vec<(String, String)> = url::form_urlencoded::parse(body.as_bytes())
            .into_owned()
            .collect();
        let url = "http://hubload-topics:9100/t/login".to_string();
        assert_eq!(
            pairs,
            [
                ("hub.mode".to_string(), "publish".to_string()),
                ("hub.topic".to_string(), url.clone()),
                ("hub.url".to_string(), url)
            ]
        );
    }

    #[test]
    fn websub_register_names_the_topic_url() {
        let s = shape(Dialect::Websub, &[]);
        assert!(text(s.phase_request("register", "x")).starts_with(
            "POST /hub?hub.mode=register&hub.topic=http%3A%2F%2Fhubload-topics%3A9100%2Ft%2Fx HTTP/1.1\r\n"
        ));
    }

    #[test]
    fn reports_show_header_names_only() {
        let s = shape(Dialect::Websub, &[("X-Api-Key", "hunter2")]);
        assert_eq!(
            serde_json::to_string(&s.headers).unwrap(),
            r#"{"X-Api-Key":"<redacted>"}"#
        );
        assert!(!format!("{:?}", s.headers).contains("hunter2"));
    }
}
