//! `trust`: a config file found in the working directory (a cloned repository may carry one)
//! trusted, as it now stands, to read its stores' secrets and run their commands; or no longer.

use super::args::TrustArgs;
use crate::config;
use std::path::PathBuf;
use std::process::ExitCode;

/// `trust`: records the file in the trust list (or takes it out), and says what that allows.
/// Exit 66 (EX_NOINPUT) when the file cannot be read, 73 (EX_CANTCREAT) when the list cannot be
/// written (or read: it is never written over then).
pub fn run(args: &TrustArgs) -> ExitCode {
    use config::trust;
    let file = args
        .path
        .clone()
        .unwrap_or_else(|| PathBuf::from(config::FILE_NAME));
    let Some(list) = trust::list_path() else {
        eprintln!(
            "seren-corpus-callosum: no home directory, so no trust list; name the file with --config instead"
        );
        return ExitCode::from(73);
    };
    if args.forget {
        return match trust::forget(&list, &file) {
            Ok(true) => {
                println!(
                    "{} is no longer trusted ({}).",
                    file.display(),
                    list.display()
                );
                ExitCode::SUCCESS
            }
            Ok(false) => {
                println!("{} was not trusted; nothing changed.", file.display());
                ExitCode::SUCCESS
            }
            Err(why) => {
                eprintln!("seren-corpus-callosum: {why}");
                ExitCode::from(73)
            }
        };
    }
    if !file.is_file() {
        eprintln!(
            "seren-corpus-callosum: {} is not a file; nothing trusted",
            file.display()
        );
        return ExitCode::from(66);
    }
    match trust::trust(&list, &file) {
        Ok(trusted) => {
            println!(
                "Trusted {} as it stands (sha256 {}), in {}.\nFound in the working directory, its \
                 stores may now read their token_env and token_keyring and run their command. An \
                 edit needs trust again.",
                trusted.file.display(),
                trusted.sha256,
                trusted.list.display()
            );
            ExitCode::SUCCESS
        }
        Err(why) => {
            eprintln!("seren-corpus-callosum: {why}");
            ExitCode::from(73)
        }
    }
}
