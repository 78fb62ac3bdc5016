//! Unit tests of the connection string parser: the fields, the errors (one line, no value),
//! the redaction and a given token.

use super::*;

const KEY: &str = "c2VjcmV0LWtleS1ub3QtcmVhbA==";

#[test]
fn parses_production_string() {
    let s = format!(
        "Endpoint=sb://myns.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey={KEY};EntityPath=events"
    );
    let c: ConnectionString = s.parse().unwrap();
    assert_eq!(c.host, "myns.servicebus.windows.net");
    assert_eq!(c.port, None);
    assert_eq!(c.key_name, "RootManageSharedAccessKey");
    assert_eq!(c.key(), KEY);
    assert_eq!(c.entity_path.as_deref(), Some("events"));
    assert!(c.uses_tls());
    assert_eq!(c.amqp_port(), 5671);
    assert_eq!(
        c.entity_address("t1"),
        "amqps://myns.servicebus.windows.net/t1"
    );
    assert_eq!(
        c.validation_audience(),
        "amqps://myns.servicebus.windows.net/events"
    );
    assert_eq!(c.expose().parse::<ConnectionString>().unwrap(), c);
}

#[test]
fn parses_emulator_string_case_insensitively() {
    let s = format!(
        " endpoint = sb://127.0.0.1:40123 ; sharedaccesskeyname=dev;SHAREDACCESSKEY={KEY};UseDevelopmentEmulator=True;"
    );
    let c: ConnectionString = s.parse().unwrap();
    assert_eq!(c.host, "127.0.0.1");
    assert_eq!(c.port, Some(40123));
    assert!(c.use_development_emulator);
    assert!(!c.uses_tls());
    assert_eq!(c.entity_address("a/b"), "amqp://127.0.0.1:40123/a/b");
    assert_eq!(c.validation_audience(), "amqp://127.0.0.1:40123/");
    let d: ConnectionString = "Endpoint=sb://localhost;SharedAccessKeyName=n;SharedAccessKey=k;UseDevelopmentEmulator=true"
        .parse()
        .unwrap();
    assert_eq!(d.amqp_base(), "amqp://localhost:5672");
}

#[test]
fn websockets_default_to_tls_on_443_and_round_trip() {
    let s = format!(
        "Endpoint=sb://myns.servicebus.windows.net/;SharedAccessKeyName=n;SharedAccessKey={KEY};TransportType=AmqpWebSockets"
    );
    let c: ConnectionString = s.parse().unwrap();
    assert_eq!(c.transport, TransportType::AmqpWebSockets);
    assert!(c.uses_tls() && c.websockets());
    assert_eq!(c.amqp_port(), 443);
    assert_eq!(
        c.entity_address("t"),
        "amqps://myns.servicebus.windows.net/t"
    );
    assert_eq!(c.expose().parse::<ConnectionString>().unwrap(), c);
    // The emulator's WebSocket port is TLS too, whatever UseDevelopmentEmulator says.
    let e: ConnectionString = format!(
        "Endpoint=sb://localhost:4443;SharedAccessKeyName=n;SharedAccessKey={KEY};UseDevelopmentEmulator=true;TransportType=amqpwebsockets"
    )
    .parse()
    .unwrap();
    assert!(e.uses_tls());
    assert_eq!(e.amqp_port(), 4443);
    assert_eq!(e.entity_address("t"), "amqps://localhost:4443/t");
    let bad =
        format!("Endpoint=sb://h/;SharedAccessKeyName=n;SharedAccessKey={KEY};TransportType=Http");
    assert_eq!(
        bad.parse::<ConnectionString>().unwrap_err().to_string(),
        "connection string field TransportType: must be Amqp or AmqpWebSockets"
    );
}

#[test]
fn debug_and_redacted_hide_the_key() {
    let s = format!("Endpoint=sb://h/;SharedAccessKeyName=n;SharedAccessKey={KEY}");
    let c: ConnectionString = s.parse().unwrap();
    let dbg = format!("{c:?}");
    assert!(!dbg.contains(KEY), "{dbg}");
    assert!(dbg.contains("<redacted>"));
    assert!(!c.redacted().contains(KEY));
    assert!(c.expose().contains(KEY));
}

#[test]
fn malformed_table() {
    use ConnStrError::*;
    let ok_tail = format!("SharedAccessKeyName=n;SharedAccessKey={KEY}");
    let cases: Vec<(String, ConnStrError, &str)> = vec![
        (String::new(), Empty, "empty"),
        (" ; ;".into(), Empty, "empty"),
        ("Endpoint=sb://h/;justtext".into(), NotKeyValue(2), "part 2"),
        // A bare base64 key splits at its padding '=': its text must not be echoed.
        (format!("Endpoint=sb://h/;{KEY}"), UnknownField(2), "part 2"),
        (
            format!("Endpoint=sb://h/;{ok_tail};Foo=1"),
            UnknownField(4),
            "part 4",
        ),
        (
            format!("Endpoint=sb://h/;Endpoint=sb://g/;{ok_tail}"),
            Duplicate("Endpoint"),
            "Endpoint",
        ),
        (
            format!("{ok_tail};SharedAccessKey={KEY}x;Endpoint=sb://h/"),
            Duplicate("SharedAccessKey"),
            "twice",
        ),
        (
            format!("SharedAccessKeyName=n;SharedAccessKey={KEY}"),
            Missing("Endpoint"),
            "missing Endpoint",
        ),
        (
            format!("Endpoint=sb://h/;SharedAccessKey={KEY}"),
            Missing("SharedAccessKeyName"),
            "SharedAccessKeyName",
        ),
        (
            "Endpoint=sb://h/;SharedAccessKeyName=n".into(),
            Missing("SharedAccessKey"),
            "missing SharedAccessKey",
        ),
        (
            format!("Endpoint=;{ok_tail}"),
            EmptyValue("Endpoint"),
            "empty",
        ),
        (
            "Endpoint=sb://h/;SharedAccessKeyName=n;SharedAccessKey=".into(),
            EmptyValue("SharedAccessKey"),
            "empty",
        ),
        (
            format!("Endpoint=https://h/;{ok_tail}"),
            Invalid {
                field: "Endpoint",
                reason: "scheme must be sb://",
            },
            "sb://",
        ),
        (
            format!("Endpoint=h.servicebus.windows.net;{ok_tail}"),
            Invalid {
                field: "Endpoint",
                reason: "must look like sb://<host>/",
            },
            "Endpoint",
        ),
        (
            format!("Endpoint=sb:///;{ok_tail}"),
            Invalid {
                field: "Endpoint",
                reason: "host is empty",
            },
            "host",
        ),
        (
            format!("Endpoint=sb://h:99999/;{ok_tail}"),
            Invalid {
                field: "Endpoint",
                reason: "port must be 1-65535",
            },
            "port",
        ),
        (
            format!("Endpoint=sb://h:0/;{ok_tail}"),
            Invalid {
                field: "Endpoint",
                reason: "port must be 1-65535",
            },
            "port",
        ),
        (
            format!("Endpoint=sb://h:x/;{ok_tail}"),
            Invalid {
                field: "Endpoint",
                reason: "port must be 1-65535",
            },
            "port",
        ),
        (
            format!("Endpoint=sb://h/topic;{ok_tail}"),
            Invalid {
                field: "Endpoint",
                reason: "must not have a path (put the entity in EntityPath)",
            },
            "EntityPath",
        ),
        (
            format!("Endpoint=sb://u:p@h/;{ok_tail}"),
            Invalid {
                field: "Endpoint",
                reason: "must be sb://<host>[:port]/ with no user, query or fragment",
            },
            "user",
        ),
        (
            format!("Endpoint=sb://h h/;{ok_tail}"),
            Invalid {
                field: "Endpoint",
                reason: "host has characters a host name cannot have",
            },
            "host",
        ),
        (
            format!("Endpoint=sb://h/;{ok_tail};UseDevelopmentEmulator=yes"),
            Invalid {
                field: "UseDevelopmentEmulator",
                reason: "must be true or false",
            },
            "true or false",
        ),
        (
            format!("Endpoint=sb://h/;{ok_tail};EntityPath=a/b"),
            Invalid {
                field: "EntityPath",
                reason: "must be a bare entity name (no '/', '?', '#' or spaces)",
            },
            "EntityPath",
        ),
        (
            format!(
                "Endpoint=sb://h/;SharedAccessSignature=SharedAccessSignature sr=x&sig={KEY}"
            ),
            Invalid {
                field: "SharedAccessSignature",
                reason: "must be `SharedAccessSignature sr=…&sig=…&se=…&skn=…`",
            },
            "SharedAccessSignature",
        ),
        (
            format!("Endpoint=sb://h/;SharedAccessSignature=SharedAccessSignature sr=x&sig={KEY}&se=1&skn=k;SharedAccessKey={KEY}"),
            KeyAndSignature,
            "SharedAccessSignature",
        ),
    ];
    for (input, want, needle) in cases {
        let err = input.parse::<ConnectionString>().unwrap_err();
        assert_eq!(err, want, "input {input:?}");
        let msg = err.to_string();
        assert!(!msg.contains('\n'), "multi-line error: {msg}");
        assert!(
            !msg.contains(KEY) && !msg.contains("c2VjcmV0"),
            "key leaked: {msg}"
        );
        assert!(msg.contains(needle), "{msg:?} should mention {needle:?}");
    }
}

#[test]
fn a_given_token_replaces_the_key_and_is_never_shown() {
    let token = crate::sas::sas_token("sb://ns.example/", "SendOnly", KEY, 1_796_634_000);
    let s = format!("Endpoint=sb://ns.example/;SharedAccessSignature={token};EntityPath=t");
    let c: ConnectionString = s.parse().unwrap();
    assert_eq!(c.key_name, "SendOnly");
    assert_eq!(c.given_token().unwrap().expiry, 1_796_634_000);
    // The given token is put for every audience, whatever the TTL asked.
    let ttl = std::time::Duration::from_secs(60);
    assert_eq!(
        c.token_for("amqps://ns.example/t", ttl),
        (token.clone(), 1_796_634_000)
    );
    assert_eq!(
        c.redacted(),
        "Endpoint=sb://ns.example/;SharedAccessSignature=<redacted>;EntityPath=t"
    );
    let sig = token
        .split("sig=")
        .nth(1)
        .unwrap()
        .split('&')
        .next()
        .unwrap();
    assert!(!format!("{c:?}").contains(sig));
    assert!(!c.redacted().contains(sig));
    assert_eq!(c.expose().parse::<ConnectionString>().unwrap(), c);
}
