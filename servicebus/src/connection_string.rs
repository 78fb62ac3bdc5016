//! Parse an Azure Service Bus connection string into a validated [`ConnectionString`].
//!
//! Format (docs/protocol.md §6): `Endpoint=sb://<host>[:port]/;SharedAccessKeyName=<name>;
//! SharedAccessKey=<key>[;EntityPath=<topic>][;UseDevelopmentEmulator=true]
//! [;TransportType=AmqpWebSockets]`, or `SharedAccessSignature=<token>` (`given_token.rs`) in
//! place of the key name and key. No Rust crate
//! parses it, so this does. Errors are one line, name the field and never contain a value
//! (a typo can put the key anywhere); `Debug` redacts the key.

use std::fmt;
use std::str::FromStr;

use hubload_http1::proxy::{ProxyConfig, ProxyUrl, Route};

use crate::given_token::GivenToken;
use crate::transport::{TransportType, WS_PORT};

/// Default AMQP port of the development emulator (plain TCP).
pub const EMULATOR_PORT: u16 = 5672;
/// Default AMQPS port of Azure Service Bus (TLS, no AMQP TLS header).
pub const TLS_PORT: u16 = 5671;

/// A validated Service Bus connection string. The key is private: read it with [`Self::key`].
#[derive(Clone, PartialEq, Eq)]
pub struct ConnectionString {
    /// Host of `Endpoint`, e.g. `myns.servicebus.windows.net` or `127.0.0.1`.
    pub host: String,
    /// Port given in `Endpoint`, if any.
    pub port: Option<u16>,
    /// `SharedAccessKeyName` (or the given token's `skn`).
    pub key_name: String,
    key: String,
    /// `SharedAccessSignature`: a pre-made token used for every audience instead of the key.
    given: Option<GivenToken>,
    /// `EntityPath`: the entity the key is scoped to, if any.
    pub entity_path: Option<String>,
    /// `UseDevelopmentEmulator=true`: plain AMQP on port 5672 (or the `Endpoint` port).
    pub use_development_emulator: bool,
    /// `TransportType`: AMQP, or AMQP over WebSockets (always TLS, port 443 by default).
    pub transport: TransportType,
    /// Extra trust roots (PEM texts) for the TLS handshake, beside the public web roots: not
    /// part of the string, set from `--ca-cert` with [`Self::with_ca_pems`].
    pub ca_pems: Vec<Vec<u8>>,
    /// The HTTP proxy connections tunnel through (`None`: direct): not part of the string,
    /// set from the proxy settings with [`Self::with_proxy`].
    pub proxy: Option<ProxyUrl>,
}

/// Why a connection string was refused. The message names the field, never a value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConnStrError {
    /// Nothing but whitespace and separators.
    #[error("connection string is empty")]
    Empty,
    /// A `;`-separated part without `=`.
    #[error("connection string part {0} is not Key=Value")]
    NotKeyValue(usize),
    /// A key this parser does not know (by part number: a stray key could be the "name").
    #[error("connection string part {0} has an unknown field name (expected Endpoint, SharedAccessKeyName, SharedAccessKey, EntityPath, UseDevelopmentEmulator or TransportType)")]
    UnknownField(usize),
    /// A field given twice.
    #[error("connection string field {0} is given twice")]
    Duplicate(&'static str),
    /// A required field is missing.
    #[error("connection string is missing {0}")]
    Missing(&'static str),
    /// A field is present but empty.
    #[error("connection string field {0} is empty")]
    EmptyValue(&'static str),
    /// A field's value is malformed; the reason never quotes the value.
    #[error("connection string field {field}: {reason}")]
    Invalid {
        /// The field name.
        field: &'static str,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// Both `SharedAccessKey` and `SharedAccessSignature`.
    #[error("connection string has both SharedAccessKey and SharedAccessSignature; give one")]
    KeyAndSignature,
}

impl ConnectionString {
    /// The shared access key (the HMAC key of SAS tokens). Never log it.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The `SharedAccessSignature` given in place of a key, if any.
    pub fn given_token(&self) -> Option<&GivenToken> {
        self.given.as_ref()
    }

    /// The token to put for `audience` and its expiry (unix s): the given one, else one
    /// signed with the key now that lasts `ttl`.
    pub fn token_for(&self, audience: &str, ttl: std::time::Duration) -> (String, u64) {
        match &self.given {
            Some(g) => (g.token().to_string(), g.expiry),
            None => {
                let expiry = crate::sas::expiry_after(ttl);
                let t = crate::sas::sas_token(audience, &self.key_name, &self.key, expiry);
                (t, expiry)
            }
        }
    }

    /// Whether connections use TLS (`amqps`, production, and every WebSocket connection) or
    /// plain TCP (the emulator's AMQP port).
    pub fn uses_tls(&self) -> bool {
        !self.use_development_emulator || self.websockets()
    }

    /// Whether connections are AMQP over WebSockets (`TransportType=AmqpWebSockets`).
    pub fn websockets(&self) -> bool {
        self.transport == TransportType::AmqpWebSockets
    }

    /// TCP port to connect to: the `Endpoint` port, else 443 (WebSockets), 5672 (emulator)
    /// or 5671 (TLS).
    pub fn amqp_port(&self) -> u16 {
        self.port.unwrap_or(self.default_port())
    }

    fn default_port(&self) -> u16 {
        if self.websockets() {
            WS_PORT
        } else if self.use_development_emulator {
            EMULATOR_PORT
        } else {
            TLS_PORT
        }
    }

    /// The same connection trusting these CA certificates (PEM texts) too.
    pub fn with_ca_pems(mut self, pems: Vec<Vec<u8>>) -> Self {
        self.ca_pems = pems;
        self
    }

    /// The same connection through the proxy `cfg` names for it, if any
    /// ([`crate::transport::route`]: WebSockets follow the variables, AMQP only `--proxy`).
    pub fn with_proxy(mut self, cfg: &ProxyConfig) -> Self {
        self.proxy =
            match crate::transport::route(cfg, &self.host, self.amqp_port(), self.transport) {
                Route::Via(p) => Some(p.clone()),
                Route::Direct | Route::Bypassed => None,
            };
        self
    }

    /// `amqps://host` in production, `amqp://host:port` for the emulator: the prefix of every
    /// CBS audience and link target.
    pub fn amqp_base(&self) -> String {
        if self.uses_tls() {
            match self.port {
                Some(p) if p != self.default_port() => format!("amqps://{}:{p}", self.host),
                _ => format!("amqps://{}", self.host),
            }
        } else {
            format!("amqp://{}:{}", self.host, self.amqp_port())
        }
    }

    /// The full address of an entity, used as both the CBS audience and the link target
    /// (docs/protocol.md §6: the target is the full URL, not the bare name).
    pub fn entity_address(&self, entity: &str) -> String {
        format!("{}/{}", self.amqp_base(), entity)
    }

    /// The audience of the validating put-token at connect: `EntityPath` if the key is
    /// scoped to one entity, else the namespace.
    pub fn validation_audience(&self) -> String {
        match &self.entity_path {
            Some(e) => self.entity_address(e),
            None => format!("{}/", self.amqp_base()),
        }
    }

    /// The connection string with the key replaced by `<redacted>`, for logs and reports.
    pub fn redacted(&self) -> String {
        let mut s = format!("Endpoint=sb://{}", self.host);
        if let Some(p) = self.port {
            s.push_str(&format!(":{p}"));
        }
        match self.given {
            Some(_) => s.push_str("/;SharedAccessSignature=<redacted>"),
            None => s.push_str(&format!(
                "/;SharedAccessKeyName={};SharedAccessKey=<redacted>",
                self.key_name
            )),
        }
        if let Some(e) = &self.entity_path {
            s.push_str(&format!(";EntityPath={e}"));
        }
        if self.use_development_emulator {
            s.push_str(";UseDevelopmentEmulator=true");
        }
        if self.websockets() {
            s.push_str(";TransportType=AmqpWebSockets");
        }
        s
    }

    /// Build one (used by the emulator to print its own connection string).
    pub fn new(
        host: impl Into<String>,
        port: Option<u16>,
        key_name: impl Into<String>,
        key: impl Into<String>,
        use_development_emulator: bool,
    ) -> Self {
        ConnectionString {
            host: host.into(),
            port,
            key_name: key_name.into(),
            key: key.into(),
            given: None,
            entity_path: None,
            use_development_emulator,
            transport: TransportType::Amqp,
            ca_pems: Vec::new(),
            proxy: None,
        }
    }

    /// The full connection string, key included (the inverse of `parse`). Only for the
    /// emulator's own dev key, or for handing the string to a child process.
    pub fn expose(&self) -> String {
        let secret = self.given.as_ref().map_or(self.key.as_str(), |g| g.token());
        self.redacted().replace("<redacted>", secret)
    }
}

impl fmt::Debug for ConnectionString {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConnectionString")
            .field("host", &self.host)
            .field("port", &self.port)
            .field("key_name", &self.key_name)
            .field("key", &"<redacted>")
            .field("given", &self.given)
            .field("entity_path", &self.entity_path)
            .field("use_development_emulator", &self.use_development_emulator)
            .field("transport", &self.transport)
            .field("ca_pems", &self.ca_pems.len())
            .field("proxy", &self.proxy)
            .finish()
    }
}

impl FromStr for ConnectionString {
    type Err = ConnStrError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let mut endpoint = None;
        let mut key_name = None;
        let mut key = None;
        let mut signature = None;
        let mut entity_path = None;
        let mut emulator = None;
        let mut transport = None;
        let mut any = false;
        for (i, part) in s.split(';').enumerate() {
            let part = part.trim();
            if part.is_empty() {
                continue;
            }
            any = true;
            let (k, v) = part
                .split_once('=')
                .ok_or(ConnStrError::NotKeyValue(i + 1))?;
            let (k, v) = (k.trim(), v.trim());
            // Field names are case-insensitive, as in the Azure SDKs.
            let (name, slot): (&'static str, &mut Option<&str>) =
                match k.to_ascii_lowercase().as_str() {
                    "endpoint" => ("Endpoint", &mut endpoint),
                    "sharedaccesskeyname" => ("SharedAccessKeyName", &mut key_name),
                    "sharedaccesskey" => ("SharedAccessKey", &mut key),
                    "entitypath" => ("EntityPath", &mut entity_path),
                    "usedevelopmentemulator" => ("UseDevelopmentEmulator", &mut emulator),
                    "transporttype" => ("TransportType", &mut transport),
                    "sharedaccesssignature" => ("SharedAccessSignature", &mut signature),
                    _ => return Err(ConnStrError::UnknownField(i + 1)),
                };
            if slot.is_some() {
                return Err(ConnStrError::Duplicate(name));
            }
            if v.is_empty() {
                return Err(ConnStrError::EmptyValue(name));
            }
            *slot = Some(v);
        }
        if !any {
            return Err(ConnStrError::Empty);
        }
        let endpoint = endpoint.ok_or(ConnStrError::Missing("Endpoint"))?;
        let (key_name, key, given) = match (signature, key) {
            (Some(_), Some(_)) => return Err(ConnStrError::KeyAndSignature),
            (Some(t), None) => {
                let g = GivenToken::parse(t).map_err(|reason| ConnStrError::Invalid {
                    field: "SharedAccessSignature",
                    reason,
                })?;
                (
                    key_name.unwrap_or(&g.key_name).to_string(),
                    String::new(),
                    Some(g),
                )
            }
            (None, key) => (
                key_name
                    .ok_or(ConnStrError::Missing("SharedAccessKeyName"))?
                    .to_string(),
                key.ok_or(ConnStrError::Missing("SharedAccessKey"))?
                    .to_string(),
                None,
            ),
        };
        let (host, port) = parse_endpoint(endpoint)?;
        let use_development_emulator = match emulator.map(str::to_ascii_lowercase).as_deref() {
            None | Some("false") => false,
            Some("true") => true,
            Some(_) => {
                return Err(ConnStrError::Invalid {
                    field: "UseDevelopmentEmulator",
                    reason: "must be true or false",
                })
            }
        };
        let transport = match transport {
            None => TransportType::Amqp,
            Some(t) => TransportType::parse(t).ok_or(ConnStrError::Invalid {
                field: "TransportType",
                reason: "must be Amqp or AmqpWebSockets",
            })?,
        };
        if let Some(e) = entity_path {
            if e.contains(['/', '?', '#', ' ']) {
                return Err(ConnStrError::Invalid {
                    field: "EntityPath",
                    reason: "must be a bare entity name (no '/', '?', '#' or spaces)",
                });
            }
        }
        Ok(ConnectionString {
            host,
            port,
            key_name,
            key,
            given,
            entity_path: entity_path.map(str::to_string),
            use_development_emulator,
            transport,
            ca_pems: Vec::new(),
            proxy: None,
        })
    }
}

fn parse_endpoint(v: &str) -> Result<(String, Option<u16>), ConnStrError> {
    let invalid = |reason| ConnStrError::Invalid {
        field: "Endpoint",
        reason,
    };
    let (scheme, rest) = v
        .split_once("://")
        .ok_or(invalid("must look like sb://<host>/"))?;
    if !scheme.eq_ignore_ascii_case("sb") {
        return Err(invalid("scheme must be sb://"));
    }
    let authority = match rest.split_once('/') {
        Some((a, "")) => a,
        Some(_) => {
            return Err(invalid(
                "must not have a path (put the entity in EntityPath)",
            ))
        }
        None => rest,
    };
    if authority.contains('@') || authority.contains(['?', '#']) {
        return Err(invalid(
            "must be sb://<host>[:port]/ with no user, query or fragment",
        ));
    }
    if authority.matches(':').count() > 1 {
        return Err(invalid("IPv6 literal hosts are not supported"));
    }
    let (host, port) = match authority.split_once(':') {
        Some((h, p)) => match p.parse::<u16>() {
            Ok(port) if port > 0 => (h, Some(port)),
            _ => return Err(invalid("port must be 1-65535")),
        },
        None => (authority, None),
    };
    if host.is_empty() {
        return Err(invalid("host is empty"));
    }
    let ok_host = host
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'));
    if !ok_host {
        return Err(invalid("host has characters a host name cannot have"));
    }
    Ok((host.to_string(), port))
}

#[cfg(test)]
#[path = "connection_string_tests.rs"]
mod tests;
