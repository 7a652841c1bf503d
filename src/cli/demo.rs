//! `demo`: two sample stores started in-process, and the server in front of them until stopped.

use super::args::ServeArgs;
use super::run::{Load, execute};
use super::serve::{Options, until_stopped};
use crate::config::{
    BEARER_TOKEN_VAR, Config, Endpoint, EntryKind, OVERLAY_FILE_NAME, StoreEntry, StoreUrl,
    TokenSource,
};
use seren_scc_demo::{self as demo, SampleStore};
use std::io;
use std::process::ExitCode;
use tokio_util::sync::CancellationToken;

/// `demo`: as `serve`, over the sample stores instead of the file's (a named file that is not
/// there is no file, not a typo); nothing is reloaded.
pub fn run(args: ServeArgs) -> ExitCode {
    execute(&args.config, Some(&args), Load::OrEmpty, serve_samples)
}

/// The sample stores, the banner that names them, and the server.
async fn serve_samples(
    mut config: Config,
    launcher_gone: CancellationToken,
) -> anyhow::Result<ExitCode> {
    let stores_down = CancellationToken::new();
    let _stop_stores_on_exit = stores_down.clone().drop_guard();
    let memory = demo::spawn_memory_store(stores_down.clone()).await?;
    let loci = demo::spawn_loci_store(stores_down.clone()).await?;
    use_sample_stores(&mut config, &[&memory, &loci])?;
    let token_note = token_note(&config);
    let banner = format!(
        "\nseren-corpus-callosum demo\n\
         \x20 sample stores (a demo fixture, not part of the callosum; they live as long as this process):\n\
         \x20   {:<9} {:<13} {}\n\
         \x20   {:<9} {:<13} {}\n\
         \x20 runtime overlay: {}\n\n\
         \x20 The Bridge:  http://{{addr}}/viewer\n\
         \x20 Try:         curl -s http://{{addr}}/search -H 'content-type: application/json'{token_note} -d '{{\"query\": \"that CUDA thing on the Xavier\", \"n_results\": 5}}'\n\
         \x20 Or:          seren-corpus-callosum search -c <config> \"jetpack\"  (against your own stores)\n\
         \x20 Stop with Ctrl-C.\n",
        memory.name,
        memory.kind,
        memory.url,
        loci.name,
        loci.kind,
        loci.url,
        config.overlay_path.display(),
    );
    // The demo's roster is its two sample stores, not the file's: nothing is reloaded.
    let options = Options {
        banner: Some(banner),
        signals: true,
        ..Options::default()
    };
    until_stopped(config, options, launcher_gone).await
}

/// The `Authorization` header of the banner's `curl`, naming where the inbound token is: the
/// variable that holds it, or the setting or keychain entry to copy it from. Empty without one.
fn token_note(config: &Config) -> String {
    if config.server.token.is_none() {
        return String::new();
    }
    let token = match &config.server.token_source {
        TokenSource::Env(name) => format!("${name}"),
        // Inline is the file's `server.bearer_token`, or the variable that overrides it.
        TokenSource::Inline if config.env.var(BEARER_TOKEN_VAR).is_some() => {
            format!("${BEARER_TOKEN_VAR}")
        }
        TokenSource::Inline => "<server.bearer_token>".to_owned(),
        TokenSource::Keychain(pointer) => format!("<the keychain entry '{pointer}'>"),
        TokenSource::None => return String::new(),
    };
    format!(" -H \"Authorization: Bearer {token}\"")
}

/// Points `config` at the sample stores instead of its own (the demo never fans the configured
/// stores, so a first run cannot be confused by them). The runtime overlay goes to a fresh
/// temporary directory, unless `SEREN_SCC_RUNTIME_STORES` named one (the config knows), so stores
/// added while playing with the demo never land beside a real config.
fn use_sample_stores(config: &mut Config, stores: &[&SampleStore]) -> io::Result<()> {
    config.federation.stores = stores
        .iter()
        .map(|store| -> io::Result<_> {
            Ok(Ok(StoreEntry {
                name: store.name.to_owned(),
                kind: EntryKind::parse(store.kind),
                // A loopback url the demo crate formatted: it always parses.
                endpoint: Endpoint::Url(StoreUrl::parse(&store.url).map_err(io::Error::other)?),
                weight: 1.0,
                floor: 0.0,
                enabled: true,
                token: None,
                token_keyring: None,
                token_env: None,
                timeout: None,
                tls_ca_file: None,
                description: Some(store.description.to_owned()),
                identity_key: None,
                options: serde_json::Map::new(),
            }))
        })
        .collect::<io::Result<_>>()?;
    if !config.overlay_from_env {
        let dir =
            std::env::temp_dir().join(format!("seren-corpus-callosum-demo-{}", std::process::id()));
        std::fs::create_dir_all(&dir)?;
        let path = dir.join(OVERLAY_FILE_NAME);
        match std::fs::remove_file(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        config.overlay_path = path;
    }
    // The demo's stores are its own: a shared PostgreSQL overlay is not touched either.
    config.overlay_url = None;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Env;
    use crate::keychain::Pointer;
    use std::path::Path;

    fn config(yaml: &str, vars: &[(&str, &str)]) -> Config {
        Config::parse(Path::new("/etc/scc/scc.yaml"), yaml, &Env::of(vars)).unwrap()
    }

    #[test]
    fn the_banner_names_where_the_token_is() {
        let header = |token: &str| format!(" -H \"Authorization: Bearer {token}\"");
        assert_eq!(token_note(&config("", &[])), "");
        let env = "server:\n  bearer_token_env: MY_TOKEN\n";
        assert_eq!(
            token_note(&config(env, &[("MY_TOKEN", "s3cret")])),
            header("$MY_TOKEN")
        );
        assert_eq!(
            token_note(&config("", &[("SEREN_SCC_BEARER_TOKEN", "s3cret")])),
            header("$SEREN_SCC_BEARER_TOKEN")
        );
        // In the file: the banner never prints the token itself.
        let inline = config("server:\n  bearer_token: s3cret\n", &[]);
        assert_eq!(token_note(&inline), header("<server.bearer_token>"));
        let mut keychain = inline;
        keychain.server.token_source = TokenSource::Keychain(Pointer::parse("scc/in").unwrap());
        assert_eq!(
            token_note(&keychain),
            header("<the keychain entry 'scc/in'>")
        );
    }
}
