//! eai-gpu: the one binary. `allocate` works on files without a server; the other commands run the service.

use clap::{Parser, Subcommand};

mod allocate_cmd;
mod table;

#[derive(Debug, Parser)]
#[command(
    name = "eai-gpu",
    version,
    about = "On-prem GPU accounting and chargeback"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Allocate GPU cost from JSON files (the API's shapes), without a server.
    Allocate(allocate_cmd::AllocateArgs),
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Allocate(args) => allocate_cmd::run(&args),
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::from(2)
        }
    }
}
