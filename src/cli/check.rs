//! `check`: what the configuration says and what is wrong with it, one line per store as a probe
//! search found it, each MCP store's tools, and whether `server.oauth`'s issuer gives its keys.

use super::args::ConfigArg;
use super::run::{EXIT_CONFIG, Load, emit, execute};
use crate::api::{self, StoreStatus};
use crate::chain::Chain;
use crate::config::Config;
use crate::federation::Federation;
use std::process::ExitCode;

/// `check`: exit 0 when every bound store answered, 2 when some store failed or was skipped, 78
/// when the configuration is invalid (an inbound token it asks for cannot be read, say).
pub fn run(arg: &ConfigArg) -> ExitCode {
    execute(arg, None, Load::File, |config, _| check(config))
}

/// The header, then a probe search of one hit through every store, then the tools and the issuer.
async fn check(config: Config) -> anyhow::Result<ExitCode> {
    let mut out = check_header(&config);
    let token_error = config.server.token_error.is_some();
    let federation = Federation::start(config).await?;
    let answer = match federation
        .search(
            &crate::view::Caller::local(),
            &api::SearchRequest {
                n_results: Some(1),
                ..api::SearchRequest::new("seren-corpus-callosum check")
            },
            &Chain::root(),
        )
        .await
    {
        Ok(answer) => answer,
        Err(refusal) => anyhow::bail!("the probe search was refused: {refusal}"),
    };
    let mut healthy = check_stores(
        &federation.stores(&crate::view::Caller::local()),
        &answer,
        &mut out,
    );
    healthy &= check_mcp_tools(&federation, &mut out).await;
    healthy &= check_issuer(&federation.config(), &mut out).await;
    emit(&out)?;
    Ok(if token_error {
        ExitCode::from(EXIT_CONFIG)
    } else if healthy {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(2)
    })
}

/// Whether `server.oauth`'s issuer gives its signing keys (true when no issuer is set).
async fn check_issuer(config: &Config, out: &mut String) -> bool {
    use std::fmt::Write;
    let Some(oauth) = &config.server.oauth else {
        return true;
    };
    let verifier = crate::oauth::Verifier::new(oauth.clone(), config.tls.trust_system_store);
    match verifier.probe().await {
        Ok((_, 0)) => {
            let _ = writeln!(
                out,
                "oauth:   FAIL the issuer publishes no signing key this server can use"
            );
            false
        }
        Ok((uri, keys)) => {
            let _ = writeln!(out, "oauth:   ok {keys} signing key(s) from {uri}");
            true
        }
        Err(why) => {
            let _ = writeln!(
                out,
                "oauth:   FAIL cannot read the issuer's signing keys: {why}"
            );
            false
        }
    }
}

/// What `check` says of the configuration itself: the files, where the token comes from, what is
/// wrong with it, and the warnings.
fn check_header(config: &Config) -> String {
    use crate::config::TokenSource;
    use std::fmt::Write;
    // Writing to a String cannot fail.
    let mut out = String::new();
    let found = match (config.exists, config.found_in_working_dir, config.trusted) {
        (false, _, _) => "not found: an empty federation",
        (true, false, _) => "found",
        (true, true, true) => "found in the working directory, trusted",
        (true, true, false) => {
            "found in the working directory, not trusted: no secrets read, no programs run"
        }
    };
    let _ = writeln!(out, "config:  {} ({found})", config.path.display());
    let _ = writeln!(out, "overlay: {}", config.overlay_shown());
    let auth = match &config.server.token_source {
        TokenSource::None => "none (no inbound token)".to_owned(),
        TokenSource::Inline => "inbound token inline".to_owned(),
        TokenSource::Keychain(pointer) => format!(
            "inbound token from the keychain entry '{pointer}' ({})",
            config.keychain.describe()
        ),
        TokenSource::Env(name) => format!("inbound token from ${name}"),
    };
    let _ = writeln!(out, "auth:    {auth}");
    if let Some(oauth) = &config.server.oauth {
        let _ = writeln!(
            out,
            "oauth:   access tokens from {} for {} (read: {}, write: {}); metadata at {}",
            oauth.issuer,
            oauth.resource,
            oauth.read_scope,
            oauth.write_scope,
            oauth.metadata_url()
        );
    }
    let _ = writeln!(
        out,
        "packet:  {}",
        config.federation.knobs.shaping.describe().join("; ")
    );
    let identity = config.federation.knobs.identity;
    if identity.is_on() {
        let _ = writeln!(
            out,
            "identity: {} (hits of several stores that are one document are summed)",
            identity.name()
        );
    }
    if let Some(why) = &config.server.token_error {
        let _ = writeln!(out, "error:   {why}; serve refuses to start");
    }
    for warning in &config.warnings {
        let _ = writeln!(out, "warning: {warning}");
    }
    out
}

/// One line per store, as the probe search found it; true when every store answered or is
/// disabled, and the overlay could be read.
fn check_stores(stores: &api::Stores, answer: &api::SearchAnswer, out: &mut String) -> bool {
    use std::fmt::Write;
    if let Some(error) = &stores.overlay_error {
        let _ = writeln!(out, "overlay error: {error}");
    }
    let mut healthy = stores.overlay_error.is_none();
    for row in &stores.stores {
        let kind = if row.kind.is_empty() { "?" } else { &row.kind };
        let (word, detail) = if answer.stores_searched.contains(&row.name) {
            ("ok", row.url.clone())
        } else if let Some(failed) = answer.failed.iter().find(|f| f.name == row.name) {
            ("failed", failed.reason.clone())
        } else {
            match &row.status {
                StoreStatus::Skipped(reason) => ("skipped", reason.clone()),
                StoreStatus::Disabled => ("disabled", row.url.clone()),
                // Every active store is asked, so it answered or failed; this is not reached.
                StoreStatus::Active => ("failed", "not asked".to_owned()),
            }
        };
        healthy &= matches!(word, "ok" | "disabled");
        let _ = writeln!(out, "{word:<8} {} ({kind}): {detail}", row.name);
    }
    if stores.stores.is_empty() {
        let _ = writeln!(out, "no stores configured");
    }
    healthy
}

/// For each MCP store, the server's tools and whether the configured one is there and takes the
/// query; true when every one is.
async fn check_mcp_tools(federation: &Federation, out: &mut String) -> bool {
    use crate::store::{Caller, mcp::McpStore};
    use std::fmt::Write;
    let fan = federation.roster().fan();
    let mut healthy = true;
    for bound in &fan.bound {
        let Caller::Mcp(store) = &bound.caller else {
            continue;
        };
        let timeout = federation.knobs().call(bound).timeout;
        let line = match store.check_tools(timeout).await {
            Ok(check) => {
                healthy &= McpStore::fits(&check);
                let takes = match check.takes_query {
                    Some(true) => format!("takes '{}'", check.query_arg),
                    Some(false) => format!("does NOT take '{}' (set query_arg)", check.query_arg),
                    None => format!("has no argument schema (sent '{}')", check.query_arg),
                };
                let tool = if check.has_tool {
                    format!("'{}' is listed and {takes}", check.tool)
                } else {
                    format!("'{}' is NOT listed (set tool)", check.tool)
                };
                format!("tools: {}; {tool}", check.tools.join(", "))
            }
            Err(why) => {
                healthy = false;
                format!("tools: not listed: {why}")
            }
        };
        let _ = writeln!(out, "         {}: {line}", bound.name);
    }
    healthy
}
