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

/// Map `--logging-format` and `-v` onto `tracing`: verbosity 0 logs info and above, 4 and more
/// adds debug, 6 and more trace (klog's V-levels have no finer equivalent).
pub fn init_logging(opts: &Options) {
    let level = match opts.logging.verbosity {
        0..=3 => tracing::Level::INFO,
        4 | 5 => tracing::Level::DEBUG,
        _ => tracing::Level::TRACE,
    };
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let builder = tracing_subscriber::fmt()
        .with_max_level(level)
        .with_ansi(ansi)
        .with_writer(std::io::stderr);
    let _ = if opts.logging.format == "json" {
        builder.json().try_init()
    } else {
        builder.try_init()
    };
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
