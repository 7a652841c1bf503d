//! `demo`: two sample stores started in-process, and the server in front of them until stopped.

use super::serve::{Options, until_stopped};
use super::{Load, ServeArgs, execute};
use crate::config::Config;
use crate::demo;
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
    demo::use_sample_stores(&mut config, &[&memory, &loci])?;
    let token_note = if config.server.token.is_some() {
        " -H \"Authorization: Bearer $SEREN_SCC_BEARER_TOKEN\""
    } else {
        ""
    };
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
