//! The `sluice` binary: parses the command line, sets up logging (`sluice::logging`),
//! runs the verb, and maps the result to an exit code (0 success, 1 failed operation,
//! 2 usage error).

use clap::Parser;
use sluice::cli::{self, Cli};

fn main() -> std::process::ExitCode {
    let cli = Cli::parse(); // exits 2 on usage errors
    sluice::logging::init(cli.global.log_format);
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("error: cannot start the async runtime: {error}");
            return std::process::ExitCode::from(1);
        }
    };
    match runtime.block_on(cli::run(cli)) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error:#}");
            std::process::ExitCode::from(1)
        }
    }
}
