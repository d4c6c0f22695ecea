//! The process edge of a component: the command line, logging set-up, the runtime, exit codes
//! (cobra's and klog's: 0, 1 for errors, 255 when the leader Lease is lost).

use std::future::Future;
use std::process::ExitCode;

use crate::flags::FlagError;
use crate::lifecycle::LeadershipLost;
use crate::logflags::LoggingOptions;

/// What the command line asks for.
#[derive(Clone, Debug, PartialEq)]
pub enum Invocation<O> {
    /// Run with these options (not yet validated).
    Run(Box<O>),
    /// `-h`/`--help`/`help`: print the help text to stdout, exit 0.
    Help,
    /// `version`: print the version text to stdout, exit 0.
    Version,
}

/// Validation failure; both kinds end the process with exit code 1.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ValidationError {
    /// The logging configuration is invalid (reported before logging starts).
    #[error("{0}")]
    Logging(String),
    /// A component option is invalid.
    #[error("{0}")]
    Options(String),
}

/// A component's command line.
pub trait Command: Sized {
    /// Parse `args` (without the program name).
    fn parse(args: &[String]) -> Result<Invocation<Self>, FlagError>;
    /// `--help`.
    fn help_text() -> String;
    /// What precedes a flag error.
    fn usage_text() -> String;
    /// `version`.
    fn version_text() -> String;
    /// The reference's validation, logging first.
    fn validate(&self) -> Result<(), ValidationError>;
    fn logging(&self) -> &LoggingOptions;
}

/// Run the command line; the exit code the reference would give.
pub fn main<O, F>(args: Vec<String>, run: impl FnOnce(O) -> F) -> ExitCode
where
    O: Command,
    F: Future<Output = anyhow::Result<()>>,
{
    let opts = match O::parse(&args) {
        Ok(Invocation::Help) => {
            print!("{}", O::help_text());
            return ExitCode::SUCCESS;
        }
        Ok(Invocation::Version) => {
            println!("{}", O::version_text());
            return ExitCode::SUCCESS;
        }
        Ok(Invocation::Run(opts)) => opts,
        Err(e) => {
            if e.show_usage {
                eprint!("{}", O::usage_text());
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
            init_logging(opts.logging());
            tracing::error!(err = %msg, "command failed");
            return ExitCode::FAILURE;
        }
    }
    init_logging(opts.logging());
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
    match runtime.block_on(run(*opts)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.downcast_ref::<LeadershipLost>().is_some() => ExitCode::from(255),
        Err(e) => {
            tracing::error!(err = %format!("{e:#}"), "command failed");
            ExitCode::FAILURE
        }
    }
}

/// Send `tracing` events where klog would send them, in its line format or component-base's
/// JSON ([`crate::logging`]: every logging flag is honoured there).
pub fn init_logging(logging: &LoggingOptions) {
    use tracing_subscriber::layer::SubscriberExt as _;
    let subscriber = tracing_subscriber::registry().with(crate::logging::Router::new(logging));
    let _ = tracing::subscriber::set_global_default(subscriber);
}
