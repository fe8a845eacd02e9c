//! `strata`: inspect and edit a Strata database from the command line.

use clap::Parser;

fn main() {
    let cli = strata_cli::app::Cli::parse();
    std::process::exit(strata_cli::app::run(cli));
}
