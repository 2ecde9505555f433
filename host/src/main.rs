//! The `sluice` binary: parses the command line, sets up logging (`sluice::logging`),
//! runs the verb, and maps the result to an exit code (0 success, 1 failed operation,
//! 2 usage error or input `sluice run` cannot use; `sluice run` exits with one code per
//! outcome, docs/cli.md).

use sluice::cli::{self, Cli};

fn main() -> std::process::ExitCode {
    let (cli, global) = Cli::parse_with_flags(); // exits 2 on usage errors
    sluice::logging::init(global.log_format);
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("error: cannot start the async runtime: {error}");
            return std::process::ExitCode::from(1);
        }
    };
    match runtime.block_on(cli::run(cli, global)) {
        Ok(code) => code,
        Err(error) => {
            eprintln!("error: {error:#}");
            std::process::ExitCode::from(cli::exit_code_of(&error))
        }
    }
}
