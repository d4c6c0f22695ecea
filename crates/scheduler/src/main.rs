//! `karmada-scheduler`: the daemon (and, dispatched first, its `simulate` and `explain`
//! subcommands).

mod explain_cli;
mod simulate;

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("simulate") => return simulate::main(&args[1..]),
        Some("explain") => return explain_cli::main(&args[1..]),
        _ => {}
    }
    component_base::cli::main(args, karmada_scheduler::daemon::run)
}
