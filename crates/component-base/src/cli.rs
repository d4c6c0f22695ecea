//! The process edge of a component: the command line, logging set-up, the runtime, exit codes
//! (cobra's and klog's: 0, 1 for errors, 255 when the leader Lease is lost).

use std::collections::BTreeSet;
use std::future::Future;
use std::process::ExitCode;

use crate::flags::{self, FlagDef, FlagError, FlagSink, GENERIC, LOGS};
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

/// A component's command line, declared once: its name, description, flag tables and
/// subcommands; parsing, `--help`, the usage and `version` follow from them as cobra and pflag
/// produce them.
pub trait Command: FlagSink + Default + Sized {
    /// The command name (cobra's `Use`).
    const NAME: &'static str;
    /// The long description `--help` starts with.
    const LONG: &'static str;
    /// Every table the command line is parsed against.
    const TABLES: &'static [&'static [FlagDef]];
    /// `(name, short help)` of the subcommands the usage lists (`help` and `version` are
    /// understood by [`parse`]; others are dispatched before parsing).
    const SUBCOMMANDS: &'static [(&'static str, &'static str)];
    /// Keep the normalised names of the flags given, in order of first use.
    fn set_changed(&mut self, changed: Vec<String>);
    /// The reference's validation, logging first.
    fn validate(&self) -> Result<(), ValidationError>;
    fn logging(&self) -> &LoggingOptions;
}

/// Parse `args` (without the program name) the way the reference's cobra command does.
pub fn parse<O: Command, S: AsRef<str>>(args: &[S]) -> Result<Invocation<O>, FlagError> {
    let mut opts = O::default();
    let parsed = flags::parse(O::TABLES, args, &mut opts)?;
    opts.set_changed(parsed.changed);
    if parsed.help {
        return Ok(Invocation::Help);
    }
    match parsed.positionals.first().map(String::as_str) {
        Some("help") => return Ok(Invocation::Help),
        Some("version") => return Ok(Invocation::Version),
        _ => {}
    }
    flags::no_arguments(O::NAME, &parsed.positionals)?;
    Ok(Invocation::Run(Box::new(opts)))
}

/// `--help`: the long description, the usage, the subcommands and the flag sections.
pub fn help_text<O: Command>() -> String {
    format!("{}\n\n{}", O::LONG, usage_text::<O>())
}

/// The usage printed before a flag error.
pub fn usage_text<O: Command>() -> String {
    flags::usage_text(O::NAME, O::SUBCOMMANDS, O::TABLES, &[LOGS, GENERIC])
}

/// `<command> version`, in the shape of the reference's Go `%#v` dump.
pub fn version_text<O: Command>() -> String {
    flags::version_text(O::NAME, env!("CARGO_PKG_VERSION"))
}

/// Names of all flags (normalised), for tooling that checks manifests against the binary.
pub fn flag_names<O: Command>() -> BTreeSet<&'static str> {
    O::TABLES
        .iter()
        .flat_map(|t| t.iter())
        .map(|f| f.name)
        .collect()
}

/// Declares a component's command line in one place: implements [`Command`] for `$opts`
/// (which has the fields `changed` and `common` (its
/// [`CommonOptions`](crate::options::CommonOptions)) and a method `validate`) and defines the
/// module-level `parse`, `help_text`, `usage_text`, `version_text` and `flag_names` its tests
/// and tools call.
#[macro_export]
macro_rules! command_line {
    ($opts:ty, name: $name:expr, long: $long:expr, tables: $tables:expr, subcommands: $subs:expr $(,)?) => {
        impl $crate::cli::Command for $opts {
            const NAME: &'static str = $name;
            const LONG: &'static str = $long;
            const TABLES: &'static [&'static [$crate::flags::FlagDef]] = $tables;
            const SUBCOMMANDS: &'static [(&'static str, &'static str)] = $subs;
            fn set_changed(&mut self, changed: Vec<String>) {
                self.changed = changed;
            }
            fn validate(&self) -> Result<(), $crate::cli::ValidationError> {
                <$opts>::validate(self)
            }
            fn logging(&self) -> &$crate::logflags::LoggingOptions {
                &self.common.logging
            }
        }

        /// Parse `args` (without the program name) the way the reference's cobra command does.
        pub fn parse<S: AsRef<str>>(
            args: &[S],
        ) -> Result<$crate::cli::Invocation<$opts>, $crate::flags::FlagError> {
            $crate::cli::parse::<$opts, S>(args)
        }

        /// `--help`.
        pub fn help_text() -> String {
            $crate::cli::help_text::<$opts>()
        }

        /// The usage text printed before a flag error.
        pub fn usage_text() -> String {
            $crate::cli::usage_text::<$opts>()
        }

        /// `version`, in the shape of the reference's Go `%#v` dump.
        pub fn version_text() -> String {
            $crate::cli::version_text::<$opts>()
        }

        /// Names of all flags (normalised), for tooling that checks manifests against the
        /// binary.
        pub fn flag_names() -> std::collections::BTreeSet<&'static str> {
            $crate::cli::flag_names::<$opts>()
        }
    };
}

/// Run the command line; the exit code the reference would give.
pub fn main<O, F>(args: Vec<String>, run: impl FnOnce(O) -> F) -> ExitCode
where
    O: Command,
    F: Future<Output = anyhow::Result<()>>,
{
    let opts = match parse::<O, _>(&args) {
        Ok(Invocation::Help) => {
            print!("{}", help_text::<O>());
            return ExitCode::SUCCESS;
        }
        Ok(Invocation::Version) => {
            println!("{}", version_text::<O>());
            return ExitCode::SUCCESS;
        }
        Ok(Invocation::Run(opts)) => opts,
        Err(e) => {
            if e.show_usage {
                eprint!("{}", usage_text::<O>());
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
    raise_open_files_limit();
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
    let result = runtime.block_on(run(*opts));
    // A thread still blocked (a CPU profile being taken) does not hold the exit.
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.downcast_ref::<LeadershipLost>().is_some() => ExitCode::from(255),
        Err(e) => {
            tracing::error!(err = %format!("{e:#}"), "command failed");
            ExitCode::FAILURE
        }
    }
}

/// Raise the soft limit of open files to the hard one, as every Go program does at start
/// (Go 1.19 on): connections to the servers, the API server and the estimators then share the
/// limit the operator set, not a container runtime's default of 1,024.
fn raise_open_files_limit() {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `lim` is a valid, writable rlimit; the calls read or write nothing else.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 && lim.rlim_cur < lim.rlim_max {
            lim.rlim_cur = lim.rlim_max;
            let _ = libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
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
