//! The command line, as clap derive structs. No logic: `config::resolve` turns it into a `RunConfig`.
//!
//! Every run flag is optional here so that a profile can supply it; defaults live in `config`.

use std::path::PathBuf;

use clap::{Args, CommandFactory, Parser, Subcommand};

/// Load-test a WebSub hub (or the Azure Service Bus behind it) with a multi-tenant publishing
/// workload, level by level, and report what a spreadsheet needs.
#[derive(Debug, Parser)]
#[command(
    name = "hubload",
    version,
    args_override_self = true,
    allow_negative_numbers = true,
    max_term_width = 100
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    #[command(flatten)]
    pub run: RunArgs,
}

/// Subcommands besides the default (a load run).
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Render report.html (and the other reports) again from a summary.json.
    Report {
        /// A summary.json, or a report directory holding one.
        summary: PathBuf,
        /// Where to write (default: beside the summary).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Compare two runs level by level (Δ ms and Δ %).
    Compare {
        /// Baseline: summary.json or report directory.
        baseline: PathBuf,
        /// Candidate: summary.json or report directory.
        candidate: PathBuf,
        /// Fail (exit 1) when a delta crosses a bound, e.g. `p99>+10%`, `e2e_p99>+10%`, `lost>0`,
        /// or the candidate's fairness or isolation figure does, e.g. `tenant_fairness<0.95`,
        /// `quiet_p99_increase>20%` (repeatable; docs/gates.md).
        #[arg(long = "fail-if")]
        fail_if: Vec<String>,
        /// Directory for compare.csv and compare.html.
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Pre-flight: check, in order, what a run with these flags needs (DNS, TCP, TLS, the hub
    /// answering, the Service Bus token and topics), one line per check; exit 5 if any fails.
    Check(Box<RunArgs>),
    /// Run the reference hub standalone (the same flags as `hubload-hub`).
    Hub(Box<hubload_hub::cli::HubArgs>),
    /// Merge shard results (files, or a `kubectl logs` dump) into one report.
    Merge {
        /// Shard record files (`shard-*.jsonl`), directories of them, or log dumps; with
        /// `--follow`, `-` is stdin.
        #[arg(required = true)]
        inputs: Vec<PathBuf>,
        /// Read the inputs as they grow (`kubectl logs -f … | hubload merge --follow -`),
        /// print each level's merged row once every shard has sent it, and end when every
        /// shard's stream has ended (or on Ctrl-C, with what came).
        #[arg(long)]
        follow: bool,
        /// With --follow: when no input has grown for this long, name the shards that did not
        /// end, write what every shard had (marked partial) and exit 4 [default: 5m].
        #[arg(long, value_name = "DURATION")]
        stall_timeout: Option<String>,
        /// With --follow: serve the merge's live page and `/v1/status` here (as a run's
        /// --web; it steers no shard).
        #[arg(long, value_name = "ADDR")]
        web: Option<String>,
        /// A file holding the token --web asks for (or HUBLOAD_WEB_TOKEN); required when --web
        /// is not a loopback address.
        #[arg(long, value_name = "FILE")]
        web_token_file: Option<PathBuf>,
        /// Output directory (default: `reports/<UTC timestamp>-merged`).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Thresholds judged on the merged data (repeatable).
        #[arg(long)]
        threshold: Vec<String>,
    },
}

/// A load run. Flags override the profile; the profile overrides the defaults.
#[derive(Debug, Args, Default)]
pub struct RunArgs {
    /// A profile (TOML with the same keys as these flags): a path, or a name in ./profiles.
    #[arg(long, value_name = "FILE")]
    pub profile: Option<PathBuf>,

    // ---- target
    /// The hub to load (default: start the embedded reference hub on 127.0.0.1).
    #[arg(long, value_name = "URL", help_heading = "Target")]
    pub hub_url: Option<String>,
    /// Bearer token for hubs that require one (or HUBLOAD_HUB_TOKEN).
    #[arg(
        long,
        env = "HUBLOAD_HUB_TOKEN",
        hide_env_values = true,
        help_heading = "Target"
    )]
    pub hub_token: Option<String>,
    /// Run the embedded hub on Service Bus (its broker mode), on an embedded emulator that a
    /// side-by-side run's Service Bus path sends to as well (docs/hub-servicebus.md).
    #[arg(long, help_heading = "Target")]
    pub hub_servicebus: bool,
    /// What to load: websub, servicebus, or websub,servicebus for a side-by-side run [default: websub].
    #[arg(long, help_heading = "Target")]
    pub target: Option<String>,
    /// Service Bus connection string (or HUBLOAD_SB_CONNECTION_STRING); none starts the emulator.
    #[arg(
        long,
        env = "HUBLOAD_SB_CONNECTION_STRING",
        hide_env_values = true,
        help_heading = "Target"
    )]
    pub sb_connection_string: Option<String>,
    /// Service Bus topic mapping: per-topic, or single:NAME [default: per-topic].
    #[arg(long, help_heading = "Target")]
    pub sb_topics: Option<String>,
    /// AMQP connections to Service Bus [default: 4].
    #[arg(long, help_heading = "Target")]
    pub sb_connections: Option<String>,
    /// Broker subscribers (`--subscribers` with --target servicebus): link credit (prefetch) of
    /// each receiver. Small (1–20) for latency, larger for throughput [default: 16].
    #[arg(long, help_heading = "Target")]
    pub sb_receiver_credit: Option<String>,
    /// Service Bus transport: amqp (5671, or the emulator's 5672) or websockets (AMQP over
    /// WebSockets on TLS 443); overrides the connection string's TransportType [default: the
    /// string's, else amqp].
    #[arg(long, help_heading = "Target")]
    pub sb_transport: Option<String>,

    // ---- proxy (src/config/proxy_flags.rs; docs/servicebus-websockets.md)
    /// HTTP proxy (CONNECT tunnels) for Service Bus connections and WebSub hubs, http://HOST:PORT, or
    /// http://USER:PASSWORD@HOST:PORT; overrides https_proxy, HTTPS_PROXY, all_proxy and ALL_PROXY; "" for
    /// none. AMQP over WebSockets and https:// hubs follow those variables too; AMQP on 5671 and
    /// http:// hubs only this flag.
    #[arg(long, value_name = "URL", help_heading = "Proxy")]
    pub proxy: Option<String>,
    /// Hosts reached directly despite a proxy, as curl's NO_PROXY: comma list of names
    /// (and their subdomains), IPs, CIDR blocks, NAME:PORT, or *; overrides no_proxy and
    /// NO_PROXY.
    #[arg(long, value_name = "LIST", help_heading = "Proxy")]
    pub no_proxy: Option<String>,

    // ---- credentials and dialect (config/auth.rs, config/dialect.rs)
    /// Read the bearer token from this file (one trailing newline removed, as a mounted
    /// Kubernetes Secret has).
    #[arg(long, value_name = "FILE", help_heading = "Target")]
    pub hub_token_file: Option<PathBuf>,
    /// An extra header on every hub request, e.g. 'X-Api-Key: …' for a gateway (repeatable;
    /// values are treated as secrets and never shown).
    #[arg(long = "header", value_name = "NAME: VALUE", help_heading = "Target")]
    pub header: Vec<String>,
    /// The hub's publisher convention: ballerina (register, publish the event) or websub
    /// (topics are URLs, a publish is a thin ping) [default: ballerina].
    #[arg(long, help_heading = "Target")]
    pub dialect: Option<String>,
    /// Websub dialect: each topic's URL is this prefix followed by the topic name; how the
    /// hub reaches hubload's topic server (default: `http://<topic server address>/topics/`).
    #[arg(long, value_name = "URL", help_heading = "Target")]
    pub topic_url_prefix: Option<String>,
    /// Register topics before the load: auto (what the dialect needs: ballerina registers,
    /// websub does not), always, or never [default: auto].
    #[arg(long, help_heading = "Phases")]
    pub register: Option<String>,
    /// Websub dialect: where hubload's topic server listens (the hub fetches each topic URL
    /// there), e.g. 0.0.0.0:9100 with --topic-url-prefix [default: 127.0.0.1:0].
    #[arg(long, value_name = "ADDR", help_heading = "Target")]
    pub topic_server_listen: Option<String>,

    // ---- host pinning (src/config/resolve_hosts.rs; docs/http-client.md)
    /// Connect to HOST:PORT at these addresses instead of resolving HOST, as curl's --resolve:
    /// HOST:PORT:ADDR[,ADDR...], IPv6 in brackets, e.g. `hub.test:8080:127.0.0.1,[::1]`
    /// (repeatable; the Host header and TLS name stay HOST).
    #[arg(long, value_name = "HOST:PORT:ADDR[,ADDR...]", help_heading = "Target")]
    pub resolve: Vec<String>,

    // ---- workload
    /// Tenants [default: 10].
    #[arg(long, help_heading = "Workload")]
    pub tenants: Option<String>,
    /// Service providers (applications) per tenant [default: 10].
    #[arg(long, help_heading = "Workload")]
    pub sps: Option<String>,
    /// Users per tenant [default: 10].
    #[arg(long, help_heading = "Workload")]
    pub users: Option<String>,
    /// Channels, comma-separated [default: login,registration,credential,session].
    #[arg(long, help_heading = "Workload")]
    pub channels: Option<String>,
    /// Topic fan-in: per-tenant-channel, per-tenant, shared, or a number N [default: per-tenant-channel].
    #[arg(long, help_heading = "Workload")]
    pub topics: Option<String>,
    /// Pad every event body to at least this many bytes.
    #[arg(long, help_heading = "Workload")]
    pub payload_bytes: Option<String>,
    /// Seed of the event stream [default: 1].
    #[arg(long, help_heading = "Workload")]
    pub seed: Option<String>,
    /// How the next publisher is picked: uniform or zipf [default: uniform].
    #[arg(long, help_heading = "Workload")]
    pub distribution: Option<String>,
    /// Open model: tenants that publish K× their share from START in every level, on top of
    /// everyone's load (the noisy neighbour), e.g. tenant0007x10@30s; the seconds before START
    /// are the baseline the isolation verdict compares with. Or from a level on,
    /// tenant0007x10@level2: level 2 and every later level run a baseline pass without the
    /// surge, then the surged pass, each the level's duration (docs/fairness.md).
    #[arg(long, help_heading = "Workload")]
    pub surge: Option<String>,
    /// With --surge and --subscribers: the delivery isolation verdict's noise floor. A change
    /// in the quiet tenants' delivery p99 whose 95 % interval stays within ± this (or ± the
    /// baseline seconds' own p99 spread, when wider) reads "within noise" [default: 100ms].
    #[arg(long, help_heading = "Workload", value_name = "DURATION")]
    pub noise_floor: Option<String>,

    // ---- load
    /// Closed model: concurrency levels, comma-separated, run in order [default: 20].
    #[arg(long, help_heading = "Load")]
    pub concurrency: Option<String>,
    /// Open model: arrival rates (events/s), comma-separated, run in order.
    #[arg(long, help_heading = "Load")]
    pub rate: Option<String>,
    /// Open model: most events in flight; beyond it scheduled sends are dropped and counted.
    #[arg(long, help_heading = "Load")]
    pub max_inflight: Option<String>,
    /// Open model: constant or poisson [default: constant].
    #[arg(long, help_heading = "Load")]
    pub arrivals: Option<String>,
    /// Load plan: `LOAD,DURATION` steps, e.g. "20,30s;50,1m" (concurrency, or rate with --open).
    #[arg(long, help_heading = "Load")]
    pub plan: Option<String>,
    /// With --plan: the steps are rates (open model) rather than concurrencies.
    #[arg(long, help_heading = "Load")]
    pub open: bool,
    /// Measured time per level [default: 30s, or unlimited with --requests].
    #[arg(long, help_heading = "Load")]
    pub duration: Option<String>,
    /// Exactly this many measured events per level.
    #[arg(long, help_heading = "Load")]
    pub requests: Option<String>,
    /// Unmeasured warm-up before each level [default: 0s].
    #[arg(long, help_heading = "Load")]
    pub warmup: Option<String>,
    /// Linear ramp to the full load at the start of each level [default: 0s].
    #[arg(long, help_heading = "Load")]
    pub ramp_up: Option<String>,

    // ---- client
    /// Client preset: default, or identity-publisher (300 ms timeouts, 2 per host, 2 retries).
    #[arg(long, help_heading = "Client")]
    pub client: Option<String>,
    /// Whole-attempt timeout [default: 5s].
    #[arg(long, help_heading = "Client")]
    pub timeout: Option<String>,
    /// Connect timeout [default: the timeout].
    #[arg(long, help_heading = "Client")]
    pub connect_timeout: Option<String>,
    /// Most connections to one host [default: the level's concurrency].
    #[arg(long, help_heading = "Client")]
    pub pool_per_host: Option<String>,
    /// Longest wait for a pooled connection [default: the timeout].
    #[arg(long, help_heading = "Client")]
    pub pool_timeout: Option<String>,
    /// Immediate retries on a 5xx, a timeout or an I/O error [default: 0].
    #[arg(long, help_heading = "Client")]
    pub retries: Option<String>,
    /// HTTP version of the hub requests: 1.1, 2 (h2 by ALPN over https, h2c with prior
    /// knowledge over http) or auto (offer h2 and http/1.1 by ALPN; http:// stays 1.1)
    /// [default: 1.1].
    #[arg(long, help_heading = "Client")]
    pub http_version: Option<String>,
    /// HTTP/2: most streams in flight per connection (the server's
    /// SETTINGS_MAX_CONCURRENT_STREAMS caps it); --pool-per-host is the number of
    /// connections [default: 100].
    #[arg(long, help_heading = "Client")]
    pub h2_streams: Option<String>,

    // ---- TLS (src/config/tls_flags.rs)
    /// Trust this CA (PEM) for an https hub and for Service Bus TLS (amqps and WebSockets),
    /// besides the web PKI roots (repeatable).
    #[arg(long, value_name = "FILE", help_heading = "TLS")]
    pub ca_cert: Vec<PathBuf>,
    /// Do not verify the hub's certificate (warned on stderr, recorded in the reports).
    #[arg(long, help_heading = "TLS")]
    pub insecure: bool,
    /// TLS handshake timeout, after the TCP connect [default: the connect timeout].
    #[arg(long, help_heading = "TLS")]
    pub tls_timeout: Option<String>,

    // ---- phases
    /// Concurrency of the topic registration phase [default: 16].
    #[arg(long, help_heading = "Phases")]
    pub register_concurrency: Option<String>,
    /// Deregister every topic at the end.
    #[arg(long, help_heading = "Phases")]
    pub deregister: bool,

    // ---- delivery (src/config/delivery.rs; docs/delivery.md)
    /// Subscribers per subscribed topic; each delivery is checked [default: 0 = off].
    #[arg(long, help_heading = "Delivery")]
    pub subscribers: Option<String>,
    /// Which topics get subscribers: all, a count N (the first N), or a fraction like 0.5 [default: all].
    #[arg(long, help_heading = "Delivery")]
    pub subscribe_topics: Option<String>,
    /// Where the callback server binds [default: 127.0.0.1:0].
    #[arg(long, value_name = "ADDR", help_heading = "Delivery")]
    pub callback_listen: Option<String>,
    /// How the hub reaches the callback server, e.g. http://hubload-callbacks:8080 [default: the bound address].
    #[arg(long, value_name = "BASE", help_heading = "Delivery")]
    pub callback_url: Option<String>,
    /// hub.secret of every subscription [default: generated per run]; never shown.
    #[arg(long, help_heading = "Delivery")]
    pub subscriber_secret: Option<String>,
    /// hub.lease_seconds of every subscription [default: 3600].
    #[arg(long, help_heading = "Delivery")]
    pub lease_seconds: Option<String>,
    /// Unsubscribe every subscriber at the end (the default).
    #[arg(long, overrides_with = "no_unsubscribe", help_heading = "Delivery")]
    pub unsubscribe: bool,
    /// Leave the subscriptions at the hub.
    #[arg(long, overrides_with = "unsubscribe", help_heading = "Delivery")]
    pub no_unsubscribe: bool,
    /// How long after a level's last publish deliveries may still arrive [default: 5s].
    #[arg(long, help_heading = "Delivery")]
    pub delivery_grace: Option<String>,
    /// Subscribers wait this long before answering each delivery [default: 0s].
    #[arg(long, help_heading = "Delivery")]
    pub subscriber_latency: Option<String>,
    /// Subscribers answer 500 to every N-th delivery [default: never].
    #[arg(long, value_name = "N", help_heading = "Delivery")]
    pub subscriber_fail_every: Option<String>,
    /// Subscribers answer 500 to this fraction (0–1) of deliveries [default: 0].
    #[arg(long, value_name = "F", help_heading = "Delivery")]
    pub subscriber_fail_fraction: Option<String>,
    /// Subscribers answer 410 (gone) after acknowledging N deliveries [default: never].
    #[arg(long, value_name = "N", help_heading = "Delivery")]
    pub subscriber_gone_after: Option<String>,
    /// Subscription churn: this many subscribers per second unsubscribe and subscribe again
    /// (each verified) while a level runs [default: off].
    #[arg(long, value_name = "RATE", help_heading = "Delivery")]
    pub subscriber_churn: Option<String>,
    /// Topic churn (Ballerina dialect): this many topics per second are deregistered and
    /// registered again while a level runs; a publish the hub refuses meanwhile counts
    /// `expected_refusal`, not an error [default: off].
    #[arg(long, value_name = "RATE", help_heading = "Delivery")]
    pub topic_churn: Option<String>,

    // ---- judging
    /// Pass/fail bound, e.g. 'p99<300ms', 'errors<1%', 'rate>=500', 'timeouts<0.5%';
    /// prefix 'total:' to judge the TOTAL row only (repeatable). Failing → exit 1.
    #[arg(long, help_heading = "Judging")]
    pub threshold: Vec<String>,
    /// Find the highest level that meets --slo (steps up geometrically, then bisects).
    #[arg(long, help_heading = "Judging")]
    pub find_capacity: bool,
    /// The SLO for --find-capacity, e.g. 'p99<300ms,errors<1%'.
    #[arg(long, help_heading = "Judging")]
    pub slo: Option<String>,
    /// Upper bound of the capacity search (concurrency or rate) [default: 4096].
    #[arg(long, help_heading = "Judging")]
    pub capacity_max: Option<String>,
    /// Longest total time the capacity search may take [default: 10m].
    #[arg(long, help_heading = "Judging")]
    pub capacity_budget: Option<String>,
    /// Timeout what-if table: share of attempts that would exceed each timeout [default: 100ms,300ms,1s,5s].
    #[arg(long, help_heading = "Judging")]
    pub what_if_timeouts: Option<String>,

    // ---- output
    /// Report directory (default: `reports/<UTC timestamp>`).
    #[arg(long, help_heading = "Output")]
    pub out: Option<PathBuf>,
    /// Also stream every attempt to this JMeter JTL file.
    #[arg(long, help_heading = "Output")]
    pub jtl: Option<PathBuf>,
    /// Load-generator threads; 1 runs everything on one current-thread runtime, like `wrk -t1`
    /// [default: the number of CPUs].
    #[arg(long, help_heading = "Output")]
    pub threads: Option<String>,
    /// No progress display and no table on stdout.
    #[arg(long, short, help_heading = "Output")]
    pub quiet: bool,

    // ---- observe
    /// A Prometheus text-format page to scrape at every level's start and end and in between,
    /// e.g. the hub's /metrics or a node exporter (repeatable). Credentials in it are never shown.
    #[arg(long, value_name = "URL", help_heading = "Observe")]
    pub server_metrics: Vec<String>,
    /// How often the server's metrics are scraped within a level [default: 1s].
    #[arg(long, value_name = "DURATION", help_heading = "Observe")]
    pub server_metrics_interval: Option<String>,
    /// Keep only the server series whose names match this regular expression.
    #[arg(long, value_name = "REGEX", help_heading = "Observe")]
    pub server_metrics_match: Option<String>,
    /// A Prometheus server for --server-query.
    #[arg(long, value_name = "URL", help_heading = "Observe")]
    pub prometheus_url: Option<String>,
    /// 'NAME=PROMQL': an instant query evaluated when the metrics are scraped (repeatable).
    #[arg(long, value_name = "NAME=PROMQL", help_heading = "Observe")]
    pub server_query: Vec<String>,
    /// Push hubload's own series to this Prometheus remote-write endpoint (e.g.
    /// http://prometheus:9090/api/v1/write).
    #[arg(long, value_name = "URL", help_heading = "Observe")]
    pub prometheus_remote_write: Option<String>,
    /// How often the series are pushed within a level [default: 5s].
    #[arg(long, value_name = "DURATION", help_heading = "Observe")]
    pub push_interval: Option<String>,
    /// A label added to every pushed series, 'k=v' (repeatable).
    #[arg(long, value_name = "K=V", help_heading = "Observe")]
    pub push_label: Vec<String>,
    /// Serve hubload's own series at http://ADDR/metrics while the run goes.
    #[arg(long, value_name = "ADDR", help_heading = "Observe")]
    pub metrics_listen: Option<String>,
    /// Serve a live page and a control API (pause, resume, change the load, end the level,
    /// stop) at http://ADDR/ while the run goes, e.g. 127.0.0.1:8089 (docs/live.md).
    #[arg(long, value_name = "ADDR", help_heading = "Observe")]
    pub web: Option<String>,
    /// A file holding the token --web asks for (or HUBLOAD_WEB_TOKEN); required when --web
    /// is not on loopback.
    #[arg(long, value_name = "FILE", help_heading = "Observe")]
    pub web_token_file: Option<PathBuf>,
    /// Keep the --web server up this long after the reports are written, serving the final
    /// page and report.html (Ctrl-C or POST /v1/stop ends it sooner) [default: 0s].
    #[arg(long, value_name = "DURATION", help_heading = "Observe")]
    pub web_linger: Option<String>,
}

/// Long flag names of a run, and whether each may repeat (profiles use the same keys).
pub fn run_flags() -> Vec<(String, FlagKind)> {
    let cmd = Cli::command();
    cmd.get_arguments()
        .filter_map(|a| {
            let long = a.get_long()?.to_string();
            let kind = match a.get_action() {
                clap::ArgAction::SetTrue => FlagKind::Switch,
                clap::ArgAction::Append => FlagKind::Repeated,
                _ => FlagKind::Value,
            };
            Some((long, kind))
        })
        .filter(|(l, _)| l != "help" && l != "version")
        .collect()
}

/// How a flag takes its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlagKind {
    /// `--flag` with no value.
    Switch,
    /// `--flag VALUE`, once.
    Value,
    /// `--flag VALUE`, repeatable.
    Repeated,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verify_cli() {
        Cli::command().debug_assert();
    }

    #[test]
    fn flag_kinds() {
        let f = run_flags();
        let kind = |n: &str| f.iter().find(|(l, _)| l == n).map(|(_, k)| *k);
        assert_eq!(kind("deregister"), Some(FlagKind::Switch));
        assert_eq!(kind("threshold"), Some(FlagKind::Repeated));
        assert_eq!(kind("tenants"), Some(FlagKind::Value));
        assert_eq!(kind("help"), None);
    }
}
