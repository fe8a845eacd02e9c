//! `strata-bench`: see `strata-bench --help`.

fn main() {
    let code = strata_bench::cli::main_with_args(std::env::args().collect());
    std::process::exit(code);
}
