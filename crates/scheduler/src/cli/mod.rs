//! The binary's subcommands, dispatched before the daemon's flags are parsed: `simulate`
//! ([`simulate`]: the daemon's cycle over objects read from files) and `explain` ([`explain`]:
//! the same over objects read from the live control plane). Both build their scheduler with
//! the daemon's [`config::build`](karmada_scheduler::config::build) and run the library's
//! read-only cycle ([`ReadOnly`](karmada_scheduler::explain::ReadOnly)).
//!
//! Their command lines are the daemon's front end, not a second one ([`Subcommand`]): parsed
//! with the daemon's grammar (component-base's [`flags`], pflag's rules and messages) against
//! two tables, the subcommand's own flags (declared once, in its module, as [`FlagDef`]s with
//! their setters) and the daemon flags it takes, which are the daemon's own entries
//! ([`config::options`](karmada_scheduler::config::options)), picked by name: their names,
//! defaults, help, value syntax and validation are the daemon's. `--help` is printed from
//! the same two tables.

pub mod explain;
pub mod simulate;

use std::any::Any;

use anyhow::anyhow;
use component_base::flags::{self, FlagDef, FlagSink, Kind};
use karmada_scheduler::config::options::Options;

/// The `--help` section of the daemon flags a subcommand takes.
const DAEMON: &str = "Daemon";

/// A subcommand's command line.
pub(crate) struct Subcommand {
    /// `simulate`, `explain`.
    pub name: &'static str,
    /// What it does: the start of `--help`.
    pub about: &'static str,
    /// Its usage line, after `karmada-scheduler `.
    pub synopsis: &'static str,
    /// Its own flags (setters on its own options type; their section titles their part of
    /// `--help`).
    pub own: &'static [FlagDef],
    /// Which of the daemon's flags it takes (by name).
    pub takes: fn(&str) -> bool,
    /// The end of `--help`.
    pub notes: &'static str,
}

/// What a subcommand's command line said.
#[derive(Clone, Debug)]
pub(crate) struct Parsed<O> {
    /// Its own flags.
    pub own: O,
    /// The daemon's options: the daemon flags given, every other one at its default;
    /// validated as the daemon validates them.
    pub daemon: Options,
    /// The arguments that are not flags.
    pub positionals: Vec<String>,
}

/// Where parsed values go: a subcommand's own flags to its options, the others to the
/// daemon's.
struct Sink<'a, O> {
    own_table: &'static [FlagDef],
    own: &'a mut O,
    daemon: &'a mut Options,
}

impl<O: Any> FlagSink for Sink<'_, O> {
    fn set(&mut self, name: &str, value: &str, first_use: bool) -> Result<(), String> {
        if flags::find(&[self.own_table], name).is_some() {
            flags::apply(
                &[self.own_table],
                &mut [&mut *self.own],
                name,
                value,
                first_use,
            )
        } else {
            self.daemon.set(name, value, first_use)
        }
    }
}

impl Subcommand {
    /// The daemon's entries of the flags this subcommand takes, in its `--help` section.
    fn daemon_flags(&self) -> Vec<FlagDef> {
        <Options as component_base::cli::Command>::TABLES
            .iter()
            .flat_map(|t| t.iter())
            .filter(|def| (self.takes)(def.name))
            .map(|def| FlagDef {
                section: DAEMON,
                ..*def
            })
            .collect()
    }

    /// Parse `args` (after the subcommand's name) into `own` (its own flags' defaults) and
    /// the daemon's options; `None` for `-h`/`--help`.
    pub fn parse<O: Any>(&self, own: O, args: &[String]) -> anyhow::Result<Option<Parsed<O>>> {
        let mut own = own;
        let mut daemon = Options::default();
        let daemon_flags = self.daemon_flags();
        let parsed = flags::parse(
            &[self.own, &daemon_flags],
            args,
            &mut Sink {
                own_table: self.own,
                own: &mut own,
                daemon: &mut daemon,
            },
        )
        .map_err(|e| anyhow!("{}", e.message))?;
        if parsed.help {
            return Ok(None);
        }
        daemon.changed = parsed.changed;
        daemon.validate().map_err(|e| anyhow!("{e}"))?;
        Ok(Some(Parsed {
            own,
            daemon,
            positionals: parsed.positionals,
        }))
    }

    /// `--help`: what it does, its usage, its flags and the daemon's it takes.
    pub fn help_text(&self) -> String {
        let mut sections: Vec<&str> = Vec::new();
        for def in self.own {
            if !sections.contains(&def.section) {
                sections.push(def.section);
            }
        }
        let help = [flags::flag(
            sections.first().copied().unwrap_or(DAEMON),
            "help",
            Kind::Bool,
            "false",
            "this text",
        )
        .short('h')];
        sections.push(DAEMON);
        let daemon_flags = self.daemon_flags();
        format!(
            "{}\nUsage:\n  karmada-scheduler {}\n{}\n{}",
            self.about,
            self.synopsis,
            flags::render_sections(&[self.own, &help, &daemon_flags], &sections),
            self.notes
        )
    }

    /// Run the subcommand on its parsed command line: print `--help` (`None`) or the parse
    /// error (exit 2), else print what `run` returns (exit 1 on its error).
    pub fn main<T>(
        &self,
        args: anyhow::Result<Option<T>>,
        run: impl FnOnce(T) -> anyhow::Result<String>,
    ) -> std::process::ExitCode {
        use std::process::ExitCode;
        let args = match args {
            Ok(Some(a)) => a,
            Ok(None) => {
                out(&self.help_text());
                return ExitCode::SUCCESS;
            }
            Err(e) => {
                err(&format!("Error: {e:#}"));
                err(&format!(
                    "Run 'karmada-scheduler {} --help' for usage.",
                    self.name
                ));
                return ExitCode::from(2);
            }
        };
        match run(args) {
            Ok(text) => {
                out(&text);
                ExitCode::SUCCESS
            }
            Err(e) => {
                err(&format!("Error: {e:#}"));
                ExitCode::FAILURE
            }
        }
    }
}

/// Write to stdout; a closed pipe (`simulate ... | head`) ends the output quietly instead of
/// panicking.
pub(crate) fn out(text: &str) {
    use std::io::Write;
    let mut o = std::io::stdout().lock();
    let _ = o.write_all(text.as_bytes()).and_then(|()| o.flush());
}

/// A line on stderr, never a panic when stderr is closed.
pub(crate) fn err(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}
