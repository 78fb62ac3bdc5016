//! Reads the official Service Bus emulator's `Config.json` (`UserConfig → Namespaces →
//! Queues / Topics → Subscriptions`, with their `Rules` read in `filter.rs`) into the
//! entities to declare. Every error is one line naming the JSON path of the bad field.

use std::time::Duration;

use serde_json::Value as Json;

use super::config_error::err;
pub use super::config_error::ConfigFileError;
use super::store::EntityProps;

/// A queue or subscription to declare.
#[derive(Debug, Clone, PartialEq)]
pub struct DeclaredStore {
    /// Its name.
    pub name: String,
    /// Its settings.
    pub props: EntityProps,
}

/// A topic and its subscriptions.
#[derive(Debug, Clone, PartialEq)]
pub struct DeclaredTopic {
    /// Its name.
    pub name: String,
    /// Its subscriptions.
    pub subscriptions: Vec<DeclaredStore>,
}

/// What a `Config.json` declares.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Declared {
    /// The namespace's name (informative: the emulator has one namespace).
    pub namespace: String,
    /// Queues.
    pub queues: Vec<DeclaredStore>,
    /// Topics.
    pub topics: Vec<DeclaredTopic>,
}

/// Parse the text of a `Config.json`.
pub fn parse(text: &str) -> Result<Declared, ConfigFileError> {
    let root: Json = serde_json::from_str(text).map_err(|e| {
        err(
            "$",
            format!("not valid JSON (line {}, column {})", e.line(), e.column()),
        )
    })?;
    let user = field(&root, "$", "UserConfig")?;
    let namespaces = array(
        field(user, "UserConfig", "Namespaces")?,
        "UserConfig.Namespaces",
    )?;
    let [ns] = namespaces else {
        return Err(err(
            "UserConfig.Namespaces",
            format!(
                "exactly one namespace is supported, found {}",
                namespaces.len()
            ),
        ));
    };
    let at = "UserConfig.Namespaces[0]";
    let mut out = Declared {
        namespace: string(field(ns, at, "Name")?, &format!("{at}.Name"))?,
        ..Declared::default()
    };
    if let Some(queues) = ns.get("Queues") {
        for (i, q) in array(queues, &format!("{at}.Queues"))?.iter().enumerate() {
            out.queues.push(store(q, &format!("{at}.Queues[{i}]"))?);
        }
    }
    if let Some(topics) = ns.get("Topics") {
        for (i, t) in array(topics, &format!("{at}.Topics"))?.iter().enumerate() {
            let tp = format!("{at}.Topics[{i}]");
            let name = string(field(t, &tp, "Name")?, &format!("{tp}.Name"))?;
            let mut subscriptions = Vec::new();
            if let Some(subs) = t.get("Subscriptions") {
                for (j, s) in array(subs, &format!("{tp}.Subscriptions"))?
                    .iter()
                    .enumerate()
                {
                    let sp = format!("{tp}.Subscriptions[{j}]");
                    let mut sub = store(s, &sp)?;
                    if let Some(rules) = s.get("Rules") {
                        sub.props.rules =
                            super::filter::parse_rules(rules, &format!("{sp}.Rules"))?;
                    }
                    subscriptions.push(sub);
                }
            }
            // The topic's own DefaultMessageTimeToLive, when given, is checked too.
            if let Some(p) = t.get("Properties") {
                props(p, &format!("{tp}.Properties"))?;
            }
            out.topics.push(DeclaredTopic {
                name,
                subscriptions,
            });
        }
    }
    Ok(out)
}

fn field<'a>(v: &'a Json, at: &str, name: &str) -> Result<&'a Json, ConfigFileError> {
    if !v.is_object() {
        return Err(err(at, "must be an object"));
    }
    v.get(name)
        .ok_or_else(|| err(&format!("{at}.{name}"), "missing").with_root(at))
}

impl ConfigFileError {
    fn with_root(mut self, at: &str) -> Self {
        if at == "$" {
            self.path = self.path.trim_start_matches("$.").to_string();
        }
        self
    }
}

fn array<'a>(v: &'a Json, at: &str) -> Result<&'a [Json], ConfigFileError> {
    v.as_array()
        .map(Vec::as_slice)
        .ok_or_else(|| err(at, "must be an array"))
}

fn string(v: &Json, at: &str) -> Result<String, ConfigFileError> {
    match v.as_str() {
        Some(s) if !s.trim().is_empty() => Ok(s.to_string()),
        Some(_) => Err(err(at, "must not be empty")),
        None => Err(err(at, "must be a string")),
    }
}

fn store(v: &Json, at: &str) -> Result<DeclaredStore, ConfigFileError> {
    let name = string(field(v, at, "Name")?, &format!("{at}.Name"))?;
    let props = match v.get("Properties") {
        Some(p) => props(p, &format!("{at}.Properties"))?,
        None => EntityProps::default(),
    };
    Ok(DeclaredStore { name, props })
}

fn props(v: &Json, at: &str) -> Result<EntityProps, ConfigFileError> {
    if !v.is_object() {
        return Err(err(at, "must be an object"));
    }
    let mut p = EntityProps::default();
    if let Some(d) = v.get("LockDuration") {
        let path = format!("{at}.LockDuration");
        p.lock_duration = duration(d, &path)?;
        // Azure accepts 5 s to 5 min.
        if !(Duration::from_secs(5)..=Duration::from_secs(300)).contains(&p.lock_duration) {
            return Err(err(&path, "must be between PT5S and PT5M"));
        }
    }
    if let Some(n) = v.get("MaxDeliveryCount") {
        let path = format!("{at}.MaxDeliveryCount");
        p.max_delivery_count = n
            .as_u64()
            .filter(|&n| n >= 1)
            .and_then(|n| u32::try_from(n).ok())
            .ok_or_else(|| err(&path, "must be a whole number ≥ 1"))?;
    }
    if let Some(d) = v.get("DefaultMessageTimeToLive") {
        p.default_ttl = Some(duration(d, &format!("{at}.DefaultMessageTimeToLive"))?);
    }
    if let Some(b) = v.get("DeadLetteringOnMessageExpiration") {
        p.dead_letter_on_expiration = b.as_bool().ok_or_else(|| {
            err(
                &format!("{at}.DeadLetteringOnMessageExpiration"),
                "must be true or false",
            )
        })?;
    }
    Ok(p)
}

fn duration(v: &Json, at: &str) -> Result<Duration, ConfigFileError> {
    let s = v.as_str().ok_or_else(|| err(at, "must be a string"))?;
    iso_duration(s).ok_or_else(|| err(at, "must be an ISO 8601 duration such as PT1M or P14D"))
}

/// An ISO 8601 duration of days, hours, minutes and seconds (`P14D`, `PT1H30M`, `PT0.5S`,
/// `P1W`): the form `Config.json` uses. Years and months have no fixed length: refused.
pub fn iso_duration(s: &str) -> Option<Duration> {
    let rest = s.strip_prefix('P')?;
    if rest.is_empty() {
        return None;
    }
    let (date, time) = match rest.split_once('T') {
        Some((d, t)) if !t.is_empty() => (d, t),
        Some(_) => return None,
        None => (rest, ""),
    };
    let mut secs = 0f64;
    for (part, units) in [
        (date, &[('W', 604_800.0), ('D', 86_400.0)][..]),
        (time, &[('H', 3_600.0), ('M', 60.0), ('S', 1.0)][..]),
    ] {
        let mut num = String::new();
        let mut unit_at = 0;
        for c in part.chars() {
            if c.is_ascii_digit() || c == '.' {
                num.push(c);
                continue;
            }
            let i = units.iter().position(|&(u, _)| u == c)?;
            if i < unit_at || num.is_empty() {
                return None;
            }
            unit_at = i + 1;
            secs += num.parse::<f64>().ok()? * units[i].1;
            num.clear();
        }
        if !num.is_empty() {
            return None;
        }
    }
    Duration::try_from_secs_f64(secs).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shape of the official emulator's sample `Config.json`.
    const SAMPLE: &str = r#"{
      "UserConfig": {
        "Namespaces": [{
          "Name": "sbemulatorns",
          "Queues": [{"Name": "queue.1", "Properties": {
              "DeadLetteringOnMessageExpiration": false, "DefaultMessageTimeToLive": "PT1H",
              "DuplicateDetectionHistoryTimeWindow": "PT20S", "ForwardDeadLetteredMessagesTo": "",
              "ForwardTo": "", "LockDuration": "PT1M", "MaxDeliveryCount": 3,
              "RequiresDuplicateDetection": false, "RequiresSession": false}}],
          "Topics": [{"Name": "topic.1", "Properties": {"DefaultMessageTimeToLive": "PT1H",
              "DuplicateDetectionHistoryTimeWindow": "PT20S", "RequiresDuplicateDetection": false},
            "Subscriptions": [{"Name": "subscription.1", "Properties": {
                "DeadLetteringOnMessageExpiration": false, "DefaultMessageTimeToLive": "PT1H",
                "LockDuration": "PT1M", "MaxDeliveryCount": 3, "ForwardDeadLetteredMessagesTo": "",
                "ForwardTo": "", "RequiresSession": false},
              "Rules": [{"Name": "app-prop-filter-1", "Properties": {"FilterType": "Correlation",
                "CorrelationFilter": {"ContentType": "application/text", "CorrelationId": "id1",
                  "Label": "subject1", "MessageId": "msgid1", "ReplyTo": "someQueue",
                  "ReplyToSessionId": "sessionId", "SessionId": "session1", "To": "xyz",
                  "Properties": {"prop3": "value3"}}}}]}]}]
        }],
        "Logging": {"Type": "File"}
      }
    }"#;

    #[test]
    fn reads_the_official_sample() {
        let d = parse(SAMPLE).unwrap();
        assert_eq!(d.namespace, "sbemulatorns");
        assert_eq!(d.queues.len(), 1);
        assert_eq!(d.queues[0].props.max_delivery_count, 3);
        assert_eq!(d.queues[0].props.lock_duration, Duration::from_secs(60));
        assert_eq!(
            d.queues[0].props.default_ttl,
            Some(Duration::from_secs(3600))
        );
        assert_eq!(d.topics[0].name, "topic.1");
        assert_eq!(d.topics[0].subscriptions[0].name, "subscription.1");
        let [super::super::filter::Filter::Correlation(c)] =
            &d.topics[0].subscriptions[0].props.rules[..]
        else {
            panic!("one correlation rule")
        };
        assert_eq!(c.label.as_deref(), Some("subject1"));
        assert_eq!(c.properties["prop3"], "value3");
    }

    #[test]
    fn errors_name_the_json_path() {
        let cases = [
            ("{", "$: not valid JSON (line 1, column 1)"),
            ("{}", "UserConfig: missing"),
            (r#"{"UserConfig": {"Namespaces": {}}}"#, "UserConfig.Namespaces: must be an array"),
            (r#"{"UserConfig": {"Namespaces": []}}"#, "UserConfig.Namespaces: exactly one namespace is supported, found 0"),
            (
                r#"{"UserConfig": {"Namespaces": [{"Name": "n", "Topics": [{"Name": "t", "Subscriptions": [{"Name": "s", "Properties": {"LockDuration": "1 minute"}}]}]}]}}"#,
                "UserConfig.Namespaces[0].Topics[0].Subscriptions[0].Properties.LockDuration: must be an ISO 8601 duration such as PT1M or P14D",
            ),
            (
                r#"{"UserConfig": {"Namespaces": [{"Name": "n", "Queues": [{"Properties": {}}]}]}}"#,
                "UserConfig.Namespaces[0].Queues[0].Name: missing",
            ),
            (
                r#"{"UserConfig": {"Namespaces": [{"Name": "n", "Queues": [{"Name": "q", "Properties": {"MaxDeliveryCount": 0}}]}]}}"#,
                "UserConfig.Namespaces[0].Queues[0].Properties.MaxDeliveryCount: must be a whole number ≥ 1",
            ),
        ];
        for (text, want) in cases {
            assert_eq!(parse(text).unwrap_err().to_string(), want, "{text}");
        }
    }

    #[test]
    fn iso_durations() {
        let s = |x: &str| iso_duration(x).map(|d| d.as_secs_f64());
        assert_eq!(s("PT1M"), Some(60.0));
        assert_eq!(s("P14D"), Some(14.0 * 86_400.0));
        assert_eq!(s("PT1H30M"), Some(5_400.0));
        assert_eq!(s("PT0.5S"), Some(0.5));
        assert_eq!(s("P1DT1S"), Some(86_401.0));
        assert_eq!(s("P1W"), Some(604_800.0));
        for bad in ["", "P", "PT", "1M", "PT1X", "PM", "PT1S1M", "P1Y"] {
            assert_eq!(iso_duration(bad), None, "{bad}");
        }
    }
}
