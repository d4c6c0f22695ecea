//! `karmada-descheduler`.

#[global_allocator]
static ALLOCATOR: allocator::Allocator = allocator::Allocator;

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    component_base::cli::main(args, karmada_descheduler::daemon::run)
}
