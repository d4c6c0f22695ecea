//! `karmada-scheduler`: the daemon (and, dispatched first, its `simulate` and `explain`
//! subcommands).

mod cli;

#[global_allocator]
static ALLOCATOR: allocator::Allocator = allocator::Allocator;

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("simulate") => return cli::simulate::main(&args[1..]),
        Some("explain") => return cli::explain::main(&args[1..]),
        _ => {}
    }
    component_base::cli::main(args, karmada_scheduler::daemon::run)
}
