//! The shape of a run as types: the load model, the target kinds (with what each answers
//! with) and the Service Bus topic mapping. Plain data below `config`, `targets`, `run` and `report`; the enums serialise as
//! the lower-case words summaries have always held.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How load is offered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Model {
    /// A fixed number of workers, each sending its next event when the last one ends.
    Closed,
    /// Events sent at a rate, whatever the responses do.
    Open,
}

impl Model {
    /// The word reports and summaries use: "closed" or "open".
    pub fn as_str(self) -> &'static str {
        match self {
            Model::Closed => "closed",
            Model::Open => "open",
        }
    }
}

/// Which protocol a run loads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TargetKind {
    /// A WebSub hub over HTTP.
    Websub,
    /// Azure Service Bus over AMQP.
    Servicebus,
}

impl TargetKind {
    /// The word reports, summaries and `--target` use: "websub" or "servicebus".
    pub fn as_str(self) -> &'static str {
        match self {
            TargetKind::Websub => "websub",
            TargetKind::Servicebus => "servicebus",
        }
    }
}

/// What a kind's target answers with: the writers choose their class columns by it, so a new
/// kind that answers as a hub or as a broker does gets its columns without a writer changing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answers {
    /// HTTP statuses: accepted, denied, 4xx, 502, 503, 504, other 5xx (and 429 when counted).
    Http,
    /// A broker's outcomes: accepted, throttled, rejected, unauthorized, not found, too large.
    Broker,
}

impl TargetKind {
    /// What this kind's target answers with.
    pub fn answers(self) -> Answers {
        match self {
            TargetKind::Websub => Answers::Http,
            TargetKind::Servicebus => Answers::Broker,
        }
    }
}

impl std::fmt::Display for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::fmt::Display for TargetKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for TargetKind {
    type Err = &'static str;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim() {
            "websub" => Ok(TargetKind::Websub),
            "servicebus" => Ok(TargetKind::Servicebus),
            _ => Err("is not websub or servicebus"),
        }
    }
}

/// Service Bus topic mapping.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SbTopics {
    /// Each hubload topic to the Service Bus topic of the same name.
    PerTopic,
    /// Everything to one topic; tenant, application and channel as properties.
    Single(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serialised_as_the_words_summaries_hold() {
        for (m, w) in [(Model::Closed, "closed"), (Model::Open, "open")] {
            assert_eq!(serde_json::to_value(m).unwrap(), w);
            assert_eq!(m.as_str(), w);
            assert_eq!(m.to_string(), w);
            assert_eq!(serde_json::from_value::<Model>(w.into()).unwrap(), m);
        }
        for (k, w) in [
            (TargetKind::Websub, "websub"),
            (TargetKind::Servicebus, "servicebus"),
        ] {
            assert_eq!(serde_json::to_value(k).unwrap(), w);
            assert_eq!(k.as_str(), w);
            assert_eq!(k.to_string(), w);
            assert_eq!(w.parse::<TargetKind>().unwrap(), k);
        }
        assert!("amqp".parse::<TargetKind>().is_err());
    }
}
