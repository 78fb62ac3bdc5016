//! Subscription rules: which messages a topic copies to a subscription. Azure's TrueFilter
//! and FalseFilter (SQL `1=1` and `1=0`) and its correlation filter, read from a
//! subscription's `Rules` in `Config.json`. Other SQL expressions are refused, not ignored.
//!
//! A subscription takes a message when any of its rules matches. One without rules has
//! Azure's `$Default` rule, a TrueFilter.

use std::collections::BTreeMap;

use fe2o3_amqp::types::messaging::{Body, Message, MessageId};
use fe2o3_amqp::types::primitives::{SimpleValue, Value};
use serde_json::Value as Json;

use super::config_error::{err, ConfigFileError};

/// One rule's filter.
#[derive(Debug, Clone, PartialEq)]
pub enum Filter {
    /// Every message (SQL `1=1`, Azure's TrueFilter).
    True,
    /// No message (SQL `1=0`, Azure's FalseFilter).
    False,
    /// Every field given must equal the message's (boxed: much larger than the others).
    Correlation(Box<Correlation>),
}

/// A correlation filter: the system properties and application properties to match. A
/// field left out matches anything; one given matches only an equal value.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Correlation {
    /// `properties.correlation-id`.
    pub correlation_id: Option<String>,
    /// `properties.message-id`.
    pub message_id: Option<String>,
    /// `properties.to`.
    pub to: Option<String>,
    /// `properties.reply-to`.
    pub reply_to: Option<String>,
    /// `properties.subject` (Azure's Label).
    pub label: Option<String>,
    /// `properties.group-id` (Azure's SessionId).
    pub session_id: Option<String>,
    /// `properties.reply-to-group-id` (Azure's ReplyToSessionId).
    pub reply_to_session_id: Option<String>,
    /// `properties.content-type`.
    pub content_type: Option<String>,
    /// Application properties, compared as text (`"7"` matches the number 7, as JSON
    /// cannot say which AMQP type was meant).
    pub properties: BTreeMap<String, String>,
}

/// Whether a subscription with `rules` takes `msg` (no rules: Azure's `$Default`, true).
pub fn takes(rules: &[Filter], msg: &Message<Body<Value>>) -> bool {
    rules.is_empty() || rules.iter().any(|r| r.matches(msg))
}

impl Filter {
    /// Whether this filter matches `msg`.
    pub fn matches(&self, msg: &Message<Body<Value>>) -> bool {
        match self {
            Filter::True => true,
            Filter::False => false,
            Filter::Correlation(c) => c.matches(msg),
        }
    }
}

impl Correlation {
    fn matches(&self, msg: &Message<Body<Value>>) -> bool {
        let p = msg.properties.as_ref();
        let system = [
            (
                &self.correlation_id,
                p.and_then(|p| p.correlation_id.as_ref()).map(id_text),
            ),
            (
                &self.message_id,
                p.and_then(|p| p.message_id.as_ref()).map(id_text),
            ),
            (&self.to, p.and_then(|p| p.to.clone())),
            (&self.reply_to, p.and_then(|p| p.reply_to.clone())),
            (&self.label, p.and_then(|p| p.subject.clone())),
            (&self.session_id, p.and_then(|p| p.group_id.clone())),
            (
                &self.reply_to_session_id,
                p.and_then(|p| p.reply_to_group_id.clone()),
            ),
            (
                &self.content_type,
                p.and_then(|p| p.content_type.as_ref()).map(|s| s.0.clone()),
            ),
        ];
        if system
            .iter()
            .any(|(want, got)| want.as_ref().is_some_and(|w| Some(w) != got.as_ref()))
        {
            return false;
        }
        let app = msg.application_properties.as_ref();
        self.properties.iter().all(|(k, want)| {
            app.and_then(|a| a.0.get(k))
                .and_then(simple_text)
                .is_some_and(|got| &got == want)
        })
    }
}

fn id_text(id: &MessageId) -> String {
    match id {
        MessageId::String(s) => s.clone(),
        MessageId::Ulong(n) => n.to_string(),
        MessageId::Uuid(u) => format!("{:?}", u),
        MessageId::Binary(b) => format!("{:?}", b),
    }
}

fn simple_text(v: &SimpleValue) -> Option<String> {
    Some(match v {
        SimpleValue::String(s) => s.clone(),
        SimpleValue::Symbol(s) => s.0.clone(),
        SimpleValue::Bool(b) => b.to_string(),
        SimpleValue::Ubyte(n) => n.to_string(),
        SimpleValue::Ushort(n) => n.to_string(),
        SimpleValue::Uint(n) => n.to_string(),
        SimpleValue::Ulong(n) => n.to_string(),
        SimpleValue::Byte(n) => n.to_string(),
        SimpleValue::Short(n) => n.to_string(),
        SimpleValue::Int(n) => n.to_string(),
        SimpleValue::Long(n) => n.to_string(),
        _ => return None,
    })
}

/// A subscription's `Rules` array (at JSON path `at`), in the official emulator's shape:
/// `{"Name", "Properties": {"FilterType": "Correlation", "CorrelationFilter": {…}}}` or
/// `{"FilterType": "Sql", "SqlFilter": {"SqlExpression": "1=1"}}`.
pub fn parse_rules(v: &Json, at: &str) -> Result<Vec<Filter>, ConfigFileError> {
    let rules = v.as_array().ok_or_else(|| err(at, "must be an array"))?;
    let mut out = Vec::with_capacity(rules.len());
    for (i, r) in rules.iter().enumerate() {
        let rp = format!("{at}[{i}]");
        let props = r
            .get("Properties")
            .filter(|p| p.is_object())
            .ok_or_else(|| err(&format!("{rp}.Properties"), "missing (an object)"))?;
        let pp = format!("{rp}.Properties");
        if props.get("Action").is_some_and(|a| !a.is_null()) {
            return Err(err(
                &format!("{pp}.Action"),
                "rule actions are not emulated",
            ));
        }
        let kind = props
            .get("FilterType")
            .and_then(Json::as_str)
            .ok_or_else(|| {
                err(
                    &format!("{pp}.FilterType"),
                    "must be \"Correlation\" or \"Sql\"",
                )
            })?;
        out.push(match kind.to_ascii_lowercase().as_str() {
            "correlation" => Filter::Correlation(Box::new(correlation(
                props.get("CorrelationFilter"),
                &format!("{pp}.CorrelationFilter"),
            )?)),
            "sql" => sql(props.get("SqlFilter"), &format!("{pp}.SqlFilter"))?,
            _ => {
                return Err(err(
                    &format!("{pp}.FilterType"),
                    "must be \"Correlation\" or \"Sql\"",
                ))
            }
        });
    }
    Ok(out)
}

fn sql(v: Option<&Json>, at: &str) -> Result<Filter, ConfigFileError> {
    let expr = v
        .and_then(|f| f.get("SqlExpression"))
        .and_then(Json::as_str)
        .ok_or_else(|| err(&format!("{at}.SqlExpression"), "missing (a string)"))?;
    let squeezed: String = expr.chars().filter(|c| !c.is_whitespace()).collect();
    match squeezed.as_str() {
        "1=1" => Ok(Filter::True),
        "1=0" => Ok(Filter::False),
        _ => Err(err(
            &format!("{at}.SqlExpression"),
            "only 1=1 (TrueFilter) and 1=0 (FalseFilter) are emulated; use a correlation filter",
        )),
    }
}

fn correlation(v: Option<&Json>, at: &str) -> Result<Correlation, ConfigFileError> {
    let obj = v
        .and_then(Json::as_object)
        .ok_or_else(|| err(at, "missing (an object)"))?;
    let mut c = Correlation::default();
    for (k, val) in obj {
        let path = format!("{at}.{k}");
        if k == "Properties" {
            let props = val
                .as_object()
                .ok_or_else(|| err(&path, "must be an object"))?;
            for (name, pv) in props {
                let text = match pv {
                    Json::String(s) => s.clone(),
                    Json::Number(n) => n.to_string(),
                    Json::Bool(b) => b.to_string(),
                    _ => {
                        return Err(err(
                            &format!("{path}.{name}"),
                            "must be a string, number or boolean",
                        ))
                    }
                };
                c.properties.insert(name.clone(), text);
            }
            continue;
        }
        let slot = match k.as_str() {
            "CorrelationId" => &mut c.correlation_id,
            "MessageId" => &mut c.message_id,
            "To" => &mut c.to,
            "ReplyTo" => &mut c.reply_to,
            "Label" | "Subject" => &mut c.label,
            "SessionId" => &mut c.session_id,
            "ReplyToSessionId" => &mut c.reply_to_session_id,
            "ContentType" => &mut c.content_type,
            _ => return Err(err(&path, "not a correlation filter field")),
        };
        *slot = Some(
            val.as_str()
                .ok_or_else(|| err(&path, "must be a string"))?
                .to_string(),
        );
    }
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;
    use fe2o3_amqp::types::messaging::{ApplicationProperties, Properties};

    fn msg(subject: Option<&str>, color: Option<&str>) -> Message<Body<Value>> {
        let mut m = Message::builder()
            .properties(Properties {
                subject: subject.map(str::to_string),
                ..Properties::default()
            })
            .body(Body::Value(fe2o3_amqp::types::messaging::AmqpValue(
                Value::Null,
            )))
            .build();
        if let Some(c) = color {
            m.application_properties =
                Some(ApplicationProperties::builder().insert("color", c).build());
        }
        m
    }

    fn rules(json: &str) -> Result<Vec<Filter>, ConfigFileError> {
        parse_rules(&serde_json::from_str(json).unwrap(), "R")
    }

    #[test]
    fn default_true_false_and_correlation() {
        let red = msg(Some("order"), Some("red"));
        let blue = msg(Some("order"), Some("blue"));
        assert!(takes(&[], &red), "no rules: $Default is true");
        let t = rules(r#"[{"Name":"a","Properties":{"FilterType":"Sql","SqlFilter":{"SqlExpression":" 1 = 1 "}}}]"#).unwrap();
        assert_eq!(t, [Filter::True]);
        let f = rules(r#"[{"Name":"a","Properties":{"FilterType":"Sql","SqlFilter":{"SqlExpression":"1=0"}}}]"#).unwrap();
        assert!(!takes(&f, &red));
        let c = rules(r#"[{"Name":"a","Properties":{"FilterType":"Correlation","CorrelationFilter":{"Label":"order","Properties":{"color":"red"}}}}]"#).unwrap();
        assert!(takes(&c, &red) && !takes(&c, &blue));
        assert!(
            !takes(&c, &msg(None, Some("red"))),
            "a given field must be present"
        );
        // Any rule matching is enough.
        let either = [c[0].clone(), Filter::False];
        assert!(takes(&either, &red));
    }

    #[test]
    fn what_is_not_emulated_is_refused_with_its_path() {
        let e = rules(r#"[{"Name":"a","Properties":{"FilterType":"Sql","SqlFilter":{"SqlExpression":"color = 'red'"}}}]"#).unwrap_err();
        assert_eq!(e.path, "R[0].Properties.SqlFilter.SqlExpression");
        let e = rules(r#"[{"Name":"a","Properties":{"FilterType":"Correlation","CorrelationFilter":{"Colour":"x"}}}]"#).unwrap_err();
        assert_eq!(e.path, "R[0].Properties.CorrelationFilter.Colour");
        let e = rules(r#"[{"Name":"a","Properties":{"FilterType":"Sql","SqlFilter":{"SqlExpression":"1=1"},"Action":{"SqlExpression":"SET x=1"}}}]"#).unwrap_err();
        assert_eq!(e.path, "R[0].Properties.Action");
        let e = rules(r#"[{"Name":"a","Properties":{"FilterType":"Boolean"}}]"#).unwrap_err();
        assert_eq!(e.path, "R[0].Properties.FilterType");
    }
}
