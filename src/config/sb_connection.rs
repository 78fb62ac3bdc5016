//! The run's Service Bus connection as the flags make it: `--sb-connection-string`, its
//! transport overridden by `--sb-transport`, trusting `--ca-cert`, through the proxy.

use std::str::FromStr;

use hubload_servicebus::ConnectionString;

use super::RunConfig;

impl RunConfig {
    /// The connection of `--sb-connection-string` with every flag applied; `Ok(None)` without
    /// one (the run starts its own emulator). The error names the flag, never a value.
    pub fn sb_connection(&self) -> anyhow::Result<Option<ConnectionString>> {
        let Some(secret) = &self.target.sb_connection_string else {
            return Ok(None);
        };
        let mut cs = ConnectionString::from_str(secret.expose())
            .map_err(|e| anyhow::anyhow!("invalid --sb-connection-string: {e}"))?;
        if let Some(t) = self.target.sb_transport {
            cs.transport = t;
        }
        Ok(Some(self.sb_connection_for(cs)))
    }

    /// `cs` trusting `--ca-cert` and through the proxy the settings name for it.
    pub fn sb_connection_for(&self, cs: ConnectionString) -> ConnectionString {
        cs.with_ca_pems(self.tls.ca_pems.clone())
            .with_proxy(&self.proxy.0)
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_flags::{args, err};
    use super::super::{resolve, resolve_for};

    const CS: &str = "Endpoint=sb://ns.example/;SharedAccessKeyName=k;SharedAccessKey=a2V5";

    #[test]
    fn the_transport_flag_overrides_the_string_and_needs_one() {
        let cfg = resolve(&args(&[
            "--sb-connection-string",
            CS,
            "--sb-transport",
            "websockets",
        ]));
        let cs = cfg.unwrap().sb_connection().unwrap().unwrap();
        assert!(cs.websockets());
        assert_eq!(cs.amqp_port(), 443);
        let ws = format!("{CS};TransportType=AmqpWebSockets");
        let cfg = resolve(&args(&[
            "--sb-connection-string",
            &ws,
            "--sb-transport",
            "amqp",
        ]));
        assert_eq!(
            cfg.unwrap().sb_connection().unwrap().unwrap().amqp_port(),
            5671
        );
        err(
            resolve(&args(&["--sb-transport", "websockets"])),
            "invalid --sb-transport `websockets`: needs --sb-connection-string",
        );
        err(
            resolve(&args(&[
                "--sb-connection-string",
                CS,
                "--sb-transport",
                "ws",
            ])),
            "invalid --sb-transport `ws`: is not amqp or websockets",
        );
    }

    #[test]
    fn https_proxy_moves_websockets_and_only_the_flag_moves_amqp() {
        let env = |k: &str| (k == "HTTPS_PROXY").then(|| "http://p.corp:3128".to_string());
        let proxy_of = |flags: &[&str]| {
            let mut all = vec!["--sb-connection-string", CS];
            all.extend_from_slice(flags);
            let cfg = resolve_for(&args(&all), None, &env).unwrap();
            let cs = cfg.sb_connection().unwrap().unwrap();
            cs.proxy.map(|p| p.shown())
        };
        let via = Some("http://p.corp:3128".to_string());
        assert_eq!(proxy_of(&["--sb-transport", "websockets"]), via);
        assert_eq!(proxy_of(&[]), None);
        assert_eq!(
            proxy_of(&["--proxy", "http://p.corp:3128"]),
            via,
            "AMQP on 5671 through an explicit --proxy"
        );
        assert_eq!(
            proxy_of(&["--sb-transport", "websockets", "--no-proxy", ".example"]),
            None
        );
    }
}
