//! `karmada-scheduler`: the daemon (and, dispatched first, its `simulate` subcommand).

mod simulate;

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().is_some_and(|a| a == "simulate") {
        return simulate::main(&args[1..]);
    }
    component_base::cli::main(args, karmada_scheduler::daemon::run)
}
