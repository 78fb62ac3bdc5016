//! `--proxy`, `--no-proxy` and the variables they override (`https_proxy`, `HTTPS_PROXY`,
//! `all_proxy`, `ALL_PROXY`; `no_proxy`, `NO_PROXY`) → [`ProxySettings`]. The caller hands in
//! the environment: config reads none itself.

use hubload_http1::proxy::{ProxyConfig, ProxyUrl, Route};
use serde::Serialize;

use super::error::ConfigError;
use crate::cli::RunArgs;

/// The proxy of Service Bus connections and of `https://` hubs (docs/servicebus-websockets.md,
/// "Proxies").
#[derive(Debug, Clone, Default)]
pub struct ProxySettings(pub ProxyConfig);

impl ProxySettings {
    /// How the WebSub hub at `url` is reached. An `https://` hub follows the settings (the
    /// variables are the ones curl reads for https URLs); an `http://` hub goes through a
    /// proxy only when `--proxy` names one, since proxies commonly allow CONNECT to 443
    /// alone and a variable set for the web should not move a hub inside the network.
    pub fn route_for_hub(&self, url: &url::Url) -> Route<'_> {
        let host = url.host_str().unwrap_or_default();
        let port = url.port_or_known_default().unwrap_or(80);
        match self.0.route(host, port) {
            Route::Via(_) if url.scheme() != "https" && !self.0.from_flag() => Route::Direct,
            r => r,
        }
    }

    /// The proxy the hub at `url` is reached through, if any.
    pub fn proxy_for_hub(&self, url: &url::Url) -> Option<&ProxyUrl> {
        match self.route_for_hub(url) {
            Route::Via(p) => Some(p),
            Route::Direct | Route::Bypassed => None,
        }
    }
}

/// Shown in the reports' settings: the proxy without its credentials, and the sources.
impl Serialize for ProxySettings {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let c = &self.0;
        let mut st = s.serialize_struct("ProxySettings", 3)?;
        st.serialize_field("proxy", &c.proxy.as_ref().map(|p| p.shown()))?;
        st.serialize_field("from", &c.proxy.as_ref().map(|_| c.proxy_from))?;
        st.serialize_field(
            "no_proxy_from",
            &(!c.no_proxy_from.is_empty()).then_some(c.no_proxy_from),
        )?;
        st.end()
    }
}

/// Resolve the flags over the environment `env` reads.
pub fn resolve(
    a: &RunArgs,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<ProxySettings, ConfigError> {
    ProxyConfig::resolve(a.proxy.as_deref(), a.no_proxy.as_deref(), env)
        .map(ProxySettings)
        .map_err(|e| ConfigError::Conflict(format!("invalid {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::test_flags::args;

    #[test]
    fn the_flag_overrides_the_environment_and_nothing_shows_the_password() {
        let env =
            |k: &str| (k == "HTTPS_PROXY").then(|| "http://u:s3cret@envproxy:3128".to_string());
        let s = resolve(&args(&[]), &env).unwrap();
        let shown = serde_json::to_string(&s).unwrap();
        assert_eq!(
            shown,
            r#"{"proxy":"http://envproxy:3128","from":"HTTPS_PROXY","no_proxy_from":null}"#
        );
        assert!(!format!("{s:?}").contains("s3cret"));
        let s = resolve(
            &args(&["--proxy", "http://flag:8080", "--no-proxy", "*"]),
            &env,
        )
        .unwrap();
        assert_eq!(
            serde_json::to_string(&s).unwrap(),
            r#"{"proxy":"http://flag:8080","from":"--proxy","no_proxy_from":"--no-proxy"}"#
        );
    }

    #[test]
    fn https_hubs_follow_the_variables_and_only_the_flag_moves_http_hubs() {
        let env = |k: &str| (k == "HTTPS_PROXY").then(|| "http://envproxy:3128".to_string());
        let via = |flags: &[&str], hub: &str| {
            let p = resolve(&args(flags), &env).unwrap();
            let url = url::Url::parse(hub).unwrap();
            p.proxy_for_hub(&url).map(|p| p.shown())
        };
        let env_proxy = Some("http://envproxy:3128".to_string());
        assert_eq!(via(&[], "https://hub.corp/hub"), env_proxy);
        assert_eq!(via(&[], "http://hub.corp/hub"), None);
        assert_eq!(
            via(&["--proxy", "http://flag:8080"], "http://hub.corp:9000/hub"),
            Some("http://flag:8080".to_string())
        );
        assert_eq!(via(&["--no-proxy", ".corp"], "https://hub.corp/hub"), None);
        assert_eq!(via(&["--proxy", ""], "https://hub.corp/hub"), None);
    }

    #[test]
    fn a_bad_proxy_is_one_line_naming_its_source_not_its_value() {
        let env = |k: &str| (k == "https_proxy").then(|| "ftp://u:s3cret@p".to_string());
        let e = resolve(&args(&[]), &env).unwrap_err().to_string();
        assert_eq!(
            e,
            "invalid https_proxy: only http:// proxies are supported (the scheme is ftp)"
        );
    }
}
