//! `karmada-scheduler`: the daemon (and, dispatched first, its `simulate` subcommand).

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    karmada_scheduler::app::main(args)
}
