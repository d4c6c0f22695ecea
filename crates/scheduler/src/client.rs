//! The one kube client of the process, built as the reference builds its REST config.
//!
//! `clientcmd.BuildConfigFromFlags(--master, --kubeconfig)`: with neither flag, the in-cluster
//! config; with `--kubeconfig`, that file's current context; `--master` overrides the server
//! URL. Every request then passes the shared `--kube-api-qps`/`--kube-api-burst` bucket.

use anyhow::Context as _;
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};

use crate::options::Options;
use crate::ratelimit::QpsLayer;

/// The REST config for these flags.
pub async fn rest_config(opts: &Options) -> anyhow::Result<Config> {
    let mut config = if opts.kubeconfig.is_empty() && opts.master.is_empty() {
        tracing::warn!(
            "Neither --kubeconfig nor --master was specified. Using the inClusterConfig. This might not work."
        );
        Config::incluster()
            .context("error building kubeconfig: unable to load in-cluster configuration")?
    } else if opts.kubeconfig.is_empty() {
        let url = opts.master.parse().with_context(|| {
            format!(
                "error building kubeconfig: invalid --master {:?}",
                opts.master
            )
        })?;
        Config::new(url)
    } else {
        let kc = Kubeconfig::read_from(&opts.kubeconfig)
            .with_context(|| format!("error building kubeconfig: reading {}", opts.kubeconfig))?;
        Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
            .await
            .with_context(|| format!("error building kubeconfig from {}", opts.kubeconfig))?
    };
    if !opts.kubeconfig.is_empty() && !opts.master.is_empty() {
        config.cluster_url = opts.master.parse().with_context(|| {
            format!(
                "error building kubeconfig: invalid --master {:?}",
                opts.master
            )
        })?;
    }
    // Watches are long polls; the client's read timeout must not cut them (kube sets the watch
    // timeout on the server side).
    config.read_timeout = None;
    Ok(config)
}

/// A client whose requests share one token bucket.
pub fn build(config: Config, qps: f32, burst: i64) -> anyhow::Result<Client> {
    let builder =
        kube::client::ClientBuilder::try_from(config).context("building the kube client")?;
    Ok(builder.with_layer(&QpsLayer::new(qps, burst)).build())
}
