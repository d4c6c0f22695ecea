//! Command lines parsed as spf13/pflag parses them, and `--help` printed as cobra prints it.
//!
//! Existing manifests are the contract: a flag line that a Go component accepts must mean the
//! same here, and one it rejects must fail here with a message naming the flag. So this module
//! reimplements pflag's grammar rather than using a Rust argument parser with different rules:
//! `--x=v` and `--x v`; booleans only as `--x` or `--x=false`; `-v 3`, `-v=3`, `-v3`; `--`
//! ends flags; `_` in names normalised to `-` (component-base's `WordSepNormalizeFunc`).
//!
//! A component declares its flags as tables of [`FlagDef`] (name, type, default, help and
//! setter in one place) and applies values through a [`FlagSink`], which routes each to the
//! options group its setter names ([`apply`]); groups of flags that several components share
//! ([`crate::logflags::FLAGS`], [`crate::options`]) bring their own tables.

use std::any::Any;

use crate::goparse::{self, go_quote};

/// A flag's value type; decides the `--help` type word, the zero default and whether the flag
/// takes a separate value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Bool,
    Str,
    Int,
    Float32,
    Duration,
    Strings,
    MapStringBool,
    Level,
    Uint,
    Severity,
    TraceLocation,
    VModule,
    Quantity,
}

impl Kind {
    /// The type word pflag prints after the flag name (empty for booleans).
    fn type_word(self) -> &'static str {
        match self {
            Kind::Bool => "",
            Kind::Str => "string",
            Kind::Int => "int",
            Kind::Float32 => "float32",
            Kind::Duration => "duration",
            Kind::Strings => "strings",
            Kind::MapStringBool => "mapStringBool",
            Kind::Level => "Level",
            Kind::Uint => "uint",
            Kind::Severity => "severity",
            Kind::TraceLocation => "traceLocation",
            Kind::VModule => "pattern=N,...",
            Kind::Quantity => "quantity",
        }
    }

    /// pflag's `defaultIsZeroValue`: zero defaults are not printed.
    fn default_is_zero(self, def: &str) -> bool {
        match self {
            Kind::Bool => def == "false",
            Kind::Duration => def == "0" || def == "0s",
            Kind::Int | Kind::Float32 | Kind::Uint => def == "0",
            Kind::Str => def.is_empty(),
            Kind::Strings => def == "[]",
            _ => matches!(def, "false" | "<nil>" | "" | "0"),
        }
    }
}

/// The help section of the flags the Go components register through component-base's
/// logging packages and klog.
pub const LOGS: &str = "Logs";
/// The help section of a component's own flags.
pub const GENERIC: &str = "Generic";

/// How a flag's value reaches its field: given the options group the flag belongs to (any
/// other group answers `None`), the value and whether this is the flag's first use on the
/// command line. Written with [`setter!`](crate::setter) beside the flag's name, type,
/// default and help, so that a flag is declared in one place.
pub type Apply = fn(&mut dyn Any, &str, bool) -> Option<Result<(), String>>;

/// One flag: its name, type, default, help and setter.
#[derive(Clone, Copy)]
pub struct FlagDef {
    pub name: &'static str,
    pub shorthand: Option<char>,
    pub kind: Kind,
    /// pflag's `DefValue`, as printed by `--help`.
    pub default: &'static str,
    pub usage: &'static str,
    /// The `--help` section title ([`LOGS`], [`GENERIC`]).
    pub section: &'static str,
    /// The setter ([`FlagDef::set`]); a table entry without one is a bug that
    /// [`unknown_to`] finds.
    pub apply: Option<Apply>,
}

impl std::fmt::Debug for FlagDef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FlagDef")
            .field("name", &self.name)
            .field("shorthand", &self.shorthand)
            .field("kind", &self.kind)
            .field("default", &self.default)
            .field("section", &self.section)
            .finish_non_exhaustive()
    }
}

impl FlagDef {
    /// The flag with its setter.
    pub const fn set(self, apply: Apply) -> Self {
        Self {
            apply: Some(apply),
            ..self
        }
    }

    /// The flag with a one-letter shorthand (`-v`).
    pub const fn short(self, c: char) -> Self {
        Self {
            shorthand: Some(c),
            ..self
        }
    }
}

/// Runs a [`setter!`](crate::setter) body (a closure, so that `?` returns from it).
#[doc(hidden)]
pub fn run_setter(body: impl FnOnce() -> Result<(), String>) -> Result<(), String> {
    body()
}

/// An [`Apply`] for the options group `$ty`: `setter!(Group, |o, v| o.field = parse(v)?)`, or
/// with a third name bound to the first-use flag: `setter!(Group, |o, v, first| ...)`.
#[macro_export]
macro_rules! setter {
    ($ty:ty, |$o:ident, $v:ident| $body:expr) => {
        $crate::setter!($ty, |$o, $v, _first| $body)
    };
    ($ty:ty, |$o:ident, $v:ident, $first:ident| $body:expr) => {
        |group: &mut dyn ::std::any::Any,
         $v: &str,
         $first: bool|
         -> ::std::option::Option<::std::result::Result<(), ::std::string::String>> {
            let $o = group.downcast_mut::<$ty>()?;
            let _ = $first;
            ::std::option::Option::Some($crate::flags::run_setter(|| {
                $body;
                ::std::result::Result::Ok(())
            }))
        }
    };
}

/// A flag without shorthand.
pub const fn flag(
    section: &'static str,
    name: &'static str,
    kind: Kind,
    default: &'static str,
    usage: &'static str,
) -> FlagDef {
    FlagDef {
        name,
        shorthand: None,
        kind,
        default,
        usage,
        section,
        apply: None,
    }
}

/// Where parsed values go.
pub trait FlagSink {
    /// Apply one value of the flag `name` (normalised); `first_use` tells string slices to
    /// replace their default. The error is the parser's text after `invalid argument`.
    fn set(&mut self, name: &str, value: &str, first_use: bool) -> Result<(), String>;
}

/// The value [`FlagSink::set`] takes for a flag's `--help` default (`[*]` → `*`, `:0` →
/// empty), or `None` when there is nothing to apply (an empty default).
pub fn settable_default(def: &FlagDef) -> Option<String> {
    let d = def.default;
    let v = match def.kind {
        Kind::Strings => d.trim_start_matches('[').trim_end_matches(']'),
        Kind::TraceLocation if d == ":0" => "",
        _ => d,
    };
    (!v.is_empty()).then(|| v.to_string())
}

/// Apply the `--help` default of every flag of `tables` to `sink`, so that a type's defaults
/// come from its flag table rather than a second statement of them.
pub fn apply_defaults(tables: &[&[FlagDef]], sink: &mut dyn FlagSink) {
    for def in tables.iter().flat_map(|t| t.iter()) {
        if let Some(v) = settable_default(def)
            && let Err(e) = sink.set(def.name, &v, true)
        {
            debug_assert!(false, "--{}: default {v:?} does not parse: {e}", def.name);
        }
    }
}

/// A flag group's defaults: `blank` with the `--help` default of every flag of `tables`
/// applied by the flag's own setter, so that the tables are the only statement of them.
pub fn with_defaults<T: Any>(mut blank: T, tables: &[&[FlagDef]]) -> T {
    /// The group alone as a sink.
    struct Alone<'a, T>(&'a [&'a [FlagDef]], &'a mut T);
    impl<T: Any> FlagSink for Alone<'_, T> {
        fn set(&mut self, name: &str, value: &str, first_use: bool) -> Result<(), String> {
            apply(self.0, &mut [&mut *self.1], name, value, first_use)
        }
    }
    apply_defaults(tables, &mut Alone(tables, &mut blank));
    blank
}

/// The flag `name` of `tables`.
pub fn find<'t>(tables: &[&'t [FlagDef]], name: &str) -> Option<&'t FlagDef> {
    tables
        .iter()
        .flat_map(|t| t.iter())
        .find(|def| def.name == name)
}

fn no_such_flag(name: &str) -> String {
    format!("no such flag -{name}")
}

/// The setter of the flag `name` of `tables`.
fn setter_of(tables: &[&[FlagDef]], name: &str) -> Result<Apply, String> {
    find(tables, name)
        .and_then(|d| d.apply)
        .ok_or_else(|| no_such_flag(name))
}

/// `value` through `apply` into the first of `groups` it belongs to.
fn route(
    apply: Apply,
    groups: &mut [&mut dyn Any],
    name: &str,
    value: &str,
    first_use: bool,
) -> Result<(), String> {
    groups
        .iter_mut()
        .find_map(|g| apply(&mut **g, value, first_use))
        .unwrap_or_else(|| Err(no_such_flag(name)))
}

/// Applies `value` of the flag `name` of `tables` to whichever of `groups` the flag belongs
/// to.
pub fn apply(
    tables: &[&[FlagDef]],
    groups: &mut [&mut dyn Any],
    name: &str,
    value: &str,
    first_use: bool,
) -> Result<(), String> {
    route(setter_of(tables, name)?, groups, name, value, first_use)
}

/// A component's [`FlagSink::set`]: the flag `name` of `tables` applied to `owner` when its
/// setter names the owner's type (the component's own flags), else to whichever of
/// `groups(owner)` it belongs to (the shared groups).
pub fn apply_to<O: Any>(
    tables: &[&[FlagDef]],
    owner: &mut O,
    groups: fn(&mut O) -> Vec<&mut dyn Any>,
    name: &str,
    value: &str,
    first_use: bool,
) -> Result<(), String> {
    let apply = setter_of(tables, name)?;
    match apply(owner, value, first_use) {
        Some(r) => r,
        None => route(apply, &mut groups(owner), name, value, first_use),
    }
}

/// The flags of `tables` that `sink` does not know (its setter answers "no such flag"): a
/// table entry without a setter would be listed by `--help` and then rejected.
pub fn unknown_to<'t>(sink: &mut dyn FlagSink, tables: &[&'t [FlagDef]]) -> Vec<&'t str> {
    tables
        .iter()
        .flat_map(|t| t.iter())
        .filter(|def| {
            let value = settable_default(def).unwrap_or_default();
            matches!(sink.set(def.name, &value, true), Err(e) if e.starts_with("no such flag"))
        })
        .map(|def| def.name)
        .collect()
}

/// A command-line error: print the usage, then `Error: <message>`, exit 1.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct FlagError {
    pub message: String,
    /// Whether the usage text goes before the error (flag errors do; argument errors do not).
    pub show_usage: bool,
}

fn flag_err(message: String) -> FlagError {
    FlagError {
        message,
        show_usage: true,
    }
}

/// What the command line said besides the flag values.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Parsed {
    /// `-h`/`--help` was given (and not `--help=false`).
    pub help: bool,
    /// Arguments that are not flags, in order.
    pub positionals: Vec<String>,
    /// Normalised names of the flags given, in order of first use.
    pub changed: Vec<String>,
}

/// component-base's `WordSepNormalizeFunc`: `log_dir` and `log-dir` are one flag.
fn normalize(name: &str) -> String {
    name.replace('_', "-")
}

/// pflag's display name in value errors: `--name`, or `-v, --v` for flags with a shorthand.
fn display_name(def: &FlagDef) -> String {
    match def.shorthand {
        Some(c) => format!("-{c}, --{}", def.name),
        None => format!("--{}", def.name),
    }
}

/// Parse `args` (without the program name) against `tables`, applying values to `sink`.
pub fn parse<S: AsRef<str>>(
    tables: &[&[FlagDef]],
    args: &[S],
    sink: &mut dyn FlagSink,
) -> Result<Parsed, FlagError> {
    let args: Vec<&str> = args.iter().map(AsRef::as_ref).collect();
    let mut parser = Parser {
        tables,
        args: &args,
        next: 0,
        sink,
        parsed: Parsed::default(),
    };
    while let Some(arg) = parser.next_arg() {
        if arg.len() < 2 || !arg.starts_with('-') {
            parser.parsed.positionals.push(arg.to_string());
        } else if arg == "--" {
            let rest = &parser.args[parser.next..];
            parser
                .parsed
                .positionals
                .extend(rest.iter().map(|s| s.to_string()));
            break;
        } else if let Some(body) = arg.strip_prefix("--") {
            parser.long(arg, body)?;
        } else {
            parser.shorthands(&arg[1..])?;
        }
    }
    Ok(parser.parsed)
}

/// One run of [`parse`]: the arguments, how far they are read, and what they said so far.
struct Parser<'a, 's> {
    tables: &'a [&'a [FlagDef]],
    args: &'a [&'a str],
    next: usize,
    sink: &'s mut dyn FlagSink,
    parsed: Parsed,
}

impl<'a> Parser<'a, '_> {
    /// The next argument, which is then read.
    fn next_arg(&mut self) -> Option<&'a str> {
        let arg = self.args.get(self.next).copied()?;
        self.next += 1;
        Some(arg)
    }

    fn defs(&self) -> impl Iterator<Item = &'a FlagDef> {
        self.tables.iter().flat_map(|t| t.iter())
    }

    /// Apply `value` of `def` to the sink, noting the flag as given.
    fn set(&mut self, def: &FlagDef, value: &str) -> Result<(), FlagError> {
        let first = !self.parsed.changed.iter().any(|c| c == def.name);
        self.sink.set(def.name, value, first).map_err(|e| {
            flag_err(format!(
                "invalid argument {} for {} flag: {e}",
                go_quote(value),
                go_quote(&display_name(def))
            ))
        })?;
        if first {
            self.parsed.changed.push(def.name.to_string());
        }
        Ok(())
    }

    /// `--name`, `--name=value` or `--name value`; `body` is `arg` without its `--`.
    fn long(&mut self, arg: &str, body: &str) -> Result<(), FlagError> {
        if body.starts_with('-') || body.starts_with('=') {
            return Err(flag_err(format!("bad flag syntax: {arg}")));
        }
        let (name, inline) = match body.split_once('=') {
            Some((n, v)) => (n, Some(v)),
            None => (body, None),
        };
        let norm = normalize(name);
        if norm == "help" {
            let v = inline.map(goparse::parse_bool).transpose().map_err(|e| {
                flag_err(format!(
                    "invalid argument {} for \"-h, --help\" flag: {e}",
                    go_quote(inline.unwrap_or_default())
                ))
            })?;
            self.parsed.help = v.unwrap_or(true);
            return Ok(());
        }
        let Some(def) = self.defs().find(|f| f.name == norm) else {
            return Err(flag_err(format!("unknown flag: --{name}")));
        };
        let value = match inline {
            Some(v) => v.to_string(),
            None if def.kind == Kind::Bool => "true".to_string(),
            None => match self.next_arg() {
                Some(v) => v.to_string(),
                None => return Err(flag_err(format!("flag needs an argument: {arg}"))),
            },
        };
        self.set(def, &value)
    }

    /// A shorthand cluster after its `-`: `-v3`, `-v=3`, `-v 3`, `-h`.
    fn shorthands(&mut self, mut shorts: &str) -> Result<(), FlagError> {
        while !shorts.is_empty() {
            let c = shorts.chars().next().unwrap_or_default();
            if c == 'h' {
                self.parsed.help = true;
                shorts = &shorts[1..];
                continue;
            }
            let Some(def) = self.defs().find(|f| f.shorthand == Some(c)) else {
                return Err(flag_err(format!(
                    "unknown shorthand flag: '{c}' in -{shorts}"
                )));
            };
            let rest = &shorts[c.len_utf8()..];
            let value;
            if rest.len() > 1 && rest.starts_with('=') {
                value = rest[1..].to_string();
                shorts = "";
            } else if def.kind == Kind::Bool {
                value = "true".into();
                shorts = rest;
            } else if !rest.is_empty() {
                value = rest.to_string();
                shorts = "";
            } else if let Some(next) = self.next_arg() {
                value = next.to_string();
                shorts = "";
            } else {
                return Err(flag_err(format!(
                    "flag needs an argument: '{c}' in -{shorts}"
                )));
            }
            self.set(def, &value)?;
        }
        Ok(())
    }
}

/// cobra's `Args` check of a command that takes none: `"<command>" does not take any
/// arguments, got ["a" "b"]` (printed without the usage).
pub fn no_arguments(command: &str, positionals: &[String]) -> Result<(), FlagError> {
    if positionals.iter().all(|a| a.is_empty()) {
        return Ok(());
    }
    let list: Vec<String> = positionals.iter().map(|a| go_quote(a)).collect();
    Err(FlagError {
        message: format!(
            "{} does not take any arguments, got [{}]",
            go_quote(command),
            list.join(" ")
        ),
        show_usage: false,
    })
}

/// The flag sections as pflag's `FlagUsagesWrapped` prints them (no terminal: no wrapping),
/// in the order of `sections`, each sorted by name.
pub fn render_sections(tables: &[&[FlagDef]], sections: &[&str]) -> String {
    let mut out = String::new();
    for section in sections {
        let mut defs: Vec<&FlagDef> = tables
            .iter()
            .flat_map(|t| t.iter())
            .filter(|f| f.section == *section)
            .collect();
        defs.sort_by_key(|f| f.name);
        let heads: Vec<String> = defs
            .iter()
            .map(|f| {
                let mut line = match f.shorthand {
                    Some(c) => format!("  -{c}, --{}", f.name),
                    None => format!("      --{}", f.name),
                };
                if !f.kind.type_word().is_empty() {
                    line.push(' ');
                    line.push_str(f.kind.type_word());
                }
                line
            })
            .collect();
        let width = heads.iter().map(String::len).max().unwrap_or(0) + 1;
        out.push_str(&format!("\n{section} flags:\n\n"));
        for (f, head) in defs.iter().zip(&heads) {
            let mut usage = f.usage.to_string();
            if !f.kind.default_is_zero(f.default) {
                if f.kind == Kind::Str {
                    usage.push_str(&format!(" (default {})", go_quote(f.default)));
                } else {
                    usage.push_str(&format!(" (default {})", f.default));
                }
            }
            let usage = usage.replace('\n', &format!("\n{}", " ".repeat(width + 2)));
            let pad = " ".repeat(width - head.len());
            out.push_str(&format!("{head}{pad}  {usage}\n"));
        }
    }
    out
}

/// The usage block cobra prints: `Usage:`, the subcommands (`(name, short help)`), then the
/// flag sections.
pub fn usage_text(
    command: &str,
    subcommands: &[(&str, &str)],
    tables: &[&[FlagDef]],
    sections: &[&str],
) -> String {
    let mut out = format!("Usage:\n  {command} [flags]\n\nAvailable Commands:\n");
    for (cmd, short) in subcommands {
        out.push_str(&format!("  {command} {cmd:<30}  {short}\n"));
    }
    out.push_str(&render_sections(tables, sections));
    out
}

/// `<command> version`, in the shape of the reference's Go `%#v` dump of its version info.
pub fn version_text(command: &str, version: &str) -> String {
    format!(
        "{command} version: version.Info{{GitVersion:\"v{version}\", GitCommit:\"\", GitShortCommit:\"\", GitTreeState:\"\", BuildDate:\"\", GoVersion:\"\", Compiler:\"rustc\", Platform:\"{}/{}\"}}",
        std::env::consts::OS,
        go_arch()
    )
}

/// Go's name of this machine's architecture.
pub fn go_arch() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        other => other,
    }
}

/// pflag's string-slice reader: empty means empty, otherwise one CSV record.
pub fn read_csv(value: &str) -> Result<Vec<String>, String> {
    if value.is_empty() {
        return Ok(Vec::new());
    }
    let mut fields = Vec::new();
    let mut chars = value.chars().peekable();
    let mut col = 0usize;
    loop {
        let mut field = String::new();
        if chars.peek() == Some(&'"') {
            chars.next();
            col += 1;
            loop {
                match chars.next() {
                    None => {
                        return Err(format!(
                            "parse error on line 1, column {}: extraneous or missing \" in quoted-field",
                            col + 1
                        ));
                    }
                    Some('"') => {
                        col += 1;
                        if chars.peek() == Some(&'"') {
                            chars.next();
                            col += 1;
                            field.push('"');
                        } else {
                            break;
                        }
                    }
                    Some(c) => {
                        col += 1;
                        field.push(c);
                    }
                }
            }
            match chars.peek() {
                None | Some(',') => {}
                Some(_) => {
                    return Err(format!(
                        "parse error on line 1, column {}: extraneous or missing \" in quoted-field",
                        col + 1
                    ));
                }
            }
        } else {
            while let Some(&c) = chars.peek() {
                if c == ',' {
                    break;
                }
                if c == '"' {
                    return Err(format!(
                        "parse error on line 1, column {}: bare \" in non-quoted-field",
                        col + 1
                    ));
                }
                field.push(c);
                col += 1;
                chars.next();
            }
        }
        fields.push(field);
        match chars.next() {
            Some(',') => col += 1,
            _ => break,
        }
    }
    Ok(fields)
}

/// apimachinery's aggregate error text: `e`, or `[e1, e2]`.
pub fn aggregate(errs: &[String]) -> String {
    if errs.len() == 1 {
        errs[0].clone()
    } else {
        format!("[{}]", errs.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Default, PartialEq)]
    struct Group {
        name: String,
        count: i64,
        items: Vec<String>,
    }

    #[derive(Debug, Default, PartialEq)]
    struct Other {
        on: bool,
    }

    static TABLE: &[FlagDef] = &[
        flag(GENERIC, "name", Kind::Str, "x", "").set(setter!(Group, |o, v| o.name = v.into())),
        flag(GENERIC, "count", Kind::Int, "3", "")
            .set(setter!(Group, |o, v| o.count = goparse::parse_int(v)?)),
        flag(GENERIC, "items", Kind::Strings, "[a]", "").set(setter!(Group, |o, v, first| {
            let items = read_csv(v)?;
            if first {
                o.items = items;
            } else {
                o.items.extend(items);
            }
        })),
        flag(GENERIC, "on", Kind::Bool, "false", "")
            .set(setter!(Other, |o, v| o.on = goparse::parse_bool(v)?)),
        flag(GENERIC, "orphan", Kind::Str, "", ""),
    ];

    #[test]
    fn a_value_reaches_the_group_its_flag_names() {
        let (mut g, mut o) = (Group::default(), Other::default());
        let mut set = |name: &str, value: &str, first: bool| {
            apply(&[TABLE], &mut [&mut g, &mut o], name, value, first)
        };
        assert_eq!(set("name", "n", true), Ok(()));
        assert_eq!(set("on", "true", true), Ok(()));
        assert_eq!(set("items", "b,c", true), Ok(()));
        assert_eq!(set("items", "d", false), Ok(()));
        assert!(
            set("count", "x", true)
                .unwrap_err()
                .contains("parsing \"x\"")
        );
        assert_eq!(set("orphan", "v", true), Err("no such flag -orphan".into()));
        assert_eq!(
            set("missing", "v", true),
            Err("no such flag -missing".into())
        );
        assert_eq!(
            g,
            Group {
                name: "n".into(),
                count: 0,
                items: vec!["b".into(), "c".into(), "d".into()],
            }
        );
        assert!(o.on);
    }

    #[test]
    fn defaults_come_from_the_table() {
        let g = with_defaults(Group::default(), &[&TABLE[..3]]);
        assert_eq!(
            g,
            Group {
                name: "x".into(),
                count: 3,
                items: vec!["a".into()],
            }
        );
    }
}
