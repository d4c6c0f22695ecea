//! The process edge: argument handling, logging setup, exit codes.

use std::process::ExitCode;

use crate::options::{self, Invocation, Options, ValidationError};

/// Run the command line (without the program name); the exit code the reference would give.
pub fn main(args: Vec<String>) -> ExitCode {
    let opts = match options::parse(&args) {
        Ok(Invocation::Help) => {
            print!("{}", options::help_text());
            return ExitCode::SUCCESS;
        }
        Ok(Invocation::Version) => {
            println!("{}", options::version_text());
            return ExitCode::SUCCESS;
        }
        Ok(Invocation::Run(opts)) => opts,
        Err(e) => {
            if e.show_usage {
                eprint!("{}", options::usage_text());
            }
            eprintln!("Error: {}", e.message);
            return ExitCode::FAILURE;
        }
    };
    match opts.validate() {
        Ok(()) => {}
        Err(ValidationError::Logging(msg)) => {
            eprintln!("Error: {msg}");
            return ExitCode::FAILURE;
        }
        Err(ValidationError::Options(msg)) => {
            init_logging(&opts);
            tracing::error!(err = %msg, "command failed");
            return ExitCode::FAILURE;
        }
    }
    init_logging(&opts);
    run(*opts)
}

/// Send `tracing` events where klog would send them, in its line format or component-base's
/// JSON (`crate::logging`: every logging flag is honoured there).
pub fn init_logging(opts: &Options) {
    use tracing_subscriber::layer::SubscriberExt as _;
    let subscriber =
        tracing_subscriber::registry().with(crate::logging::Router::new(&opts.logging));
    let _ = tracing::subscriber::set_global_default(subscriber);
}

fn run(opts: Options) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            tracing::error!(err = %e, "command failed");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(crate::daemon::run(opts)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.downcast_ref::<crate::daemon::LeadershipLost>().is_some() => {
            ExitCode::from(255)
        }
        Err(e) => {
            tracing::error!(err = %format!("{e:#}"), "command failed");
            ExitCode::FAILURE
        }
    }
}
