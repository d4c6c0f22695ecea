//! The logging flags of component-base and klog, as the Go components register them: their
//! table, how a value is applied and how the configuration is validated (component-base's
//! `ValidateAndApply`). [`crate::logging::Router`] then honours them as klog does.

use crate::flags::{FlagDef, Kind as K, LOGS as L, flag, with_defaults};
use crate::goparse::{self, GoDuration, go_quote};
use crate::setter;

/// Logging flags of component-base and klog, validated as component-base validates them and
/// honoured by `crate::logging` as klog honours them.
#[derive(Clone, Debug, PartialEq)]
pub struct LoggingOptions {
    pub format: String,
    pub verbosity: u32,
    pub vmodule: Vec<(String, u32)>,
    pub flush_frequency: GoDuration,
    pub text_split_stream: bool,
    pub text_info_buffer_size: String,
    pub json_split_stream: bool,
    pub json_info_buffer_size: String,
    pub log_dir: String,
    pub log_file: String,
    pub log_file_max_size: u64,
    pub logtostderr: bool,
    pub alsologtostderr: bool,
    /// klog v2.140 (Kubernetes 1.36, Karmada v1.19): with `--alsologtostderr`, the lowest
    /// severity copied to standard error (default 0, every line: the older behaviour).
    pub alsologtostderrthreshold: i32,
    /// klog v2.140: when false, `--stderrthreshold` also filters `--logtostderr=true` output
    /// (default true: everything goes to standard error, as before).
    pub legacy_stderr_threshold_behavior: bool,
    pub add_dir_header: bool,
    pub skip_headers: bool,
    pub one_output: bool,
    pub skip_log_headers: bool,
    pub stderrthreshold: i32,
    pub log_backtrace_at: String,
}

impl Default for LoggingOptions {
    /// The defaults of [`FLAGS`] and [`format_flag`].
    fn default() -> Self {
        let blank = Self {
            format: String::new(),
            verbosity: 0,
            vmodule: Vec::new(),
            flush_frequency: GoDuration::default(),
            text_split_stream: false,
            text_info_buffer_size: String::new(),
            json_split_stream: false,
            json_info_buffer_size: String::new(),
            log_dir: String::new(),
            log_file: String::new(),
            log_file_max_size: 0,
            logtostderr: false,
            alsologtostderr: false,
            alsologtostderrthreshold: 0,
            legacy_stderr_threshold_behavior: false,
            add_dir_header: false,
            skip_headers: false,
            one_output: false,
            skip_log_headers: false,
            stderrthreshold: 0,
            log_backtrace_at: String::new(),
        };
        with_defaults(blank, &[&[format_flag(FORMAT_USAGE)], FLAGS])
    }
}

/// A `quantity` flag value that must be zero (`log-*-info-buffer-size`), kept as given.
fn quantity_zero(v: &str) -> Result<String, String> {
    goparse::parse_quantity_is_zero(v)?;
    Ok(v.to_string())
}

/// `--logging-format`'s text as both Go components of v1.18.2 print it (the scheduler too,
/// although it registers `--feature-gates`: the text names the gate either way).
pub const FORMAT_USAGE: &str =
    "Sets the log format. Permitted formats: \"json\" (gated by LoggingBetaOptions), \"text\".";

/// `--logging-format` with `usage` (the components pass [`FORMAT_USAGE`]).
pub const fn format_flag(usage: &'static str) -> FlagDef {
    flag(L, "logging-format", K::Str, "text", usage)
        .set(setter!(LoggingOptions, |o, v| o.format = v.into()))
}

/// Every other logging flag, with the reference's name, type, default and usage text.
pub static FLAGS: &[FlagDef] = &[
    // --- logs: component-base logging configuration (`--logging-format`: [`format_flag`])
    flag(
        L,
        "log-flush-frequency",
        K::Duration,
        "5s",
        "Maximum number of seconds between log flushes",
    )
    .set(setter!(LoggingOptions, |o, v| o.flush_frequency = GoDuration::parse(v)?)),
    flag(L, "v", K::Level, "0", "number for the log level verbosity")
        .short('v')
        .set(setter!(LoggingOptions, |o, v| o.verbosity = goparse::parse_level(v)?)),
    flag(
        L,
        "vmodule",
        K::VModule,
        "",
        "comma-separated list of pattern=N settings for file-filtered logging (only works for text log format)",
    )
    .set(setter!(LoggingOptions, |o, v| o.vmodule.extend(parse_vmodule(v)?))),
    flag(
        L,
        "log-text-split-stream",
        K::Bool,
        "false",
        "[Alpha] In text format, write error messages to stderr and info messages to stdout. The default is to write a single stream to stdout. Enable the LoggingAlphaOptions feature gate to use this.",
    )
    .set(setter!(LoggingOptions, |o, v| o.text_split_stream = goparse::parse_bool(v)?)),
    flag(
        L,
        "log-text-info-buffer-size",
        K::Quantity,
        "0",
        "[Alpha] In text format with split output streams, the info messages can be buffered for a while to increase performance. The default value of zero bytes disables buffering. The size can be specified as number of bytes (512), multiples of 1000 (1K), multiples of 1024 (2Ki), or powers of those (3M, 4G, 5Mi, 6Gi). Enable the LoggingAlphaOptions feature gate to use this.",
    )
    .set(setter!(LoggingOptions, |o, v| o.text_info_buffer_size = quantity_zero(v)?)),
    flag(
        L,
        "log-json-split-stream",
        K::Bool,
        "false",
        "[Alpha] In JSON format, write error messages to stderr and info messages to stdout. The default is to write a single stream to stdout. Enable the LoggingAlphaOptions feature gate to use this.",
    )
    .set(setter!(LoggingOptions, |o, v| o.json_split_stream = goparse::parse_bool(v)?)),
    flag(
        L,
        "log-json-info-buffer-size",
        K::Quantity,
        "0",
        "[Alpha] In JSON format with split output streams, the info messages can be buffered for a while to increase performance. The default value of zero bytes disables buffering. The size can be specified as number of bytes (512), multiples of 1000 (1K), multiples of 1024 (2Ki), or powers of those (3M, 4G, 5Mi, 6Gi). Enable the LoggingAlphaOptions feature gate to use this.",
    )
    .set(setter!(LoggingOptions, |o, v| o.json_info_buffer_size = quantity_zero(v)?)),
    // --- logs: klog (registered with underscores; shown normalised)
    flag(
        L,
        "log-dir",
        K::Str,
        "",
        "If non-empty, write log files in this directory (no effect when -logtostderr=true)",
    )
    .set(setter!(LoggingOptions, |o, v| o.log_dir = v.into())),
    flag(
        L,
        "log-file",
        K::Str,
        "",
        "If non-empty, use this log file (no effect when -logtostderr=true)",
    )
    .set(setter!(LoggingOptions, |o, v| o.log_file = v.into())),
    flag(
        L,
        "log-file-max-size",
        K::Uint,
        "1800",
        "Defines the maximum size a log file can grow to (no effect when -logtostderr=true). Unit is megabytes. If the value is 0, the maximum file size is unlimited.",
    )
    .set(setter!(LoggingOptions, |o, v| o.log_file_max_size = goparse::parse_uint64(v)?)),
    flag(
        L,
        "logtostderr",
        K::Bool,
        "true",
        "log to standard error instead of files",
    )
    .set(setter!(LoggingOptions, |o, v| o.logtostderr = goparse::parse_bool(v)?)),
    flag(
        L,
        "alsologtostderr",
        K::Bool,
        "false",
        "log to standard error as well as files (no effect when -logtostderr=true)",
    )
    .set(setter!(LoggingOptions, |o, v| o.alsologtostderr = goparse::parse_bool(v)?)),
    flag(
        L,
        "alsologtostderrthreshold",
        K::Severity,
        "0",
        "logs at or above this threshold go to stderr when -alsologtostderr=true (no effect when -logtostderr=true)",
    )
    .set(setter!(LoggingOptions, |o, v| o.alsologtostderrthreshold = parse_severity(v)?)),
    flag(
        L,
        "legacy-stderr-threshold-behavior",
        K::Bool,
        "true",
        "If true, stderrthreshold is ignored when logtostderr=true (legacy behavior). If false, stderrthreshold is honored even when logtostderr=true",
    )
    .set(setter!(LoggingOptions, |o, v| o.legacy_stderr_threshold_behavior = goparse::parse_bool(v)?)),
    flag(
        L,
        "add-dir-header",
        K::Bool,
        "false",
        "If true, adds the file directory to the header of the log messages",
    )
    .set(setter!(LoggingOptions, |o, v| o.add_dir_header = goparse::parse_bool(v)?)),
    flag(
        L,
        "skip-headers",
        K::Bool,
        "false",
        "If true, avoid header prefixes in the log messages",
    )
    .set(setter!(LoggingOptions, |o, v| o.skip_headers = goparse::parse_bool(v)?)),
    flag(
        L,
        "one-output",
        K::Bool,
        "false",
        "If true, only write logs to their native severity level (vs also writing to each lower severity level; no effect when -logtostderr=true)",
    )
    .set(setter!(LoggingOptions, |o, v| o.one_output = goparse::parse_bool(v)?)),
    flag(
        L,
        "skip-log-headers",
        K::Bool,
        "false",
        "If true, avoid headers when opening log files (no effect when -logtostderr=true)",
    )
    .set(setter!(LoggingOptions, |o, v| o.skip_log_headers = goparse::parse_bool(v)?)),
    flag(
        L,
        "stderrthreshold",
        K::Severity,
        "2",
        "logs at or above this threshold go to stderr when writing to files and stderr (no effect when -logtostderr=true or -alsologtostderr=true unless -legacy_stderr_threshold_behavior=false)",
    )
    .set(setter!(LoggingOptions, |o, v| o.stderrthreshold = parse_severity(v)?)),
    flag(
        L,
        "log-backtrace-at",
        K::TraceLocation,
        ":0",
        "when logging hits line file:N, emit a stack trace",
    )
    .set(setter!(LoggingOptions, |o, v| o.log_backtrace_at = parse_trace_location(v)?)),
];

impl LoggingOptions {
    /// component-base's validation of the logging configuration; `gate` answers whether a
    /// feature gate (`LoggingAlphaOptions`, `LoggingBetaOptions`) is on.
    pub fn validate(&self, gate: &dyn Fn(&str) -> bool) -> Vec<String> {
        let lg = self;
        let mut errs = Vec::new();
        if lg.flush_frequency.0 <= 0 {
            errs.push(format!(
                "flushFrequency: Invalid value: {}: Must be greater than zero",
                go_quote(&lg.flush_frequency.to_string())
            ));
        }
        if lg.format != "text" && !lg.vmodule.is_empty() {
            errs.push(format!(
                "format: Invalid value: {}: Non-default format doesn't honor flag: vmodule",
                go_quote(&lg.format)
            ));
        }
        match lg.format.as_str() {
            "text" => {}
            "json" => {
                if !gate("LoggingBetaOptions") {
                    errs.push(
                        "format: Forbidden: Log format json is disabled, see LoggingBetaOptions feature"
                            .into(),
                    );
                }
            }
            other => errs.push(format!(
                "format: Invalid value: {}: Unsupported log format",
                go_quote(other)
            )),
        }
        if !lg.vmodule.is_empty() && !lg.format.is_empty() && lg.format != "text" {
            errs.push("vmodule: Forbidden: Only supported for text log format".into());
        }
        let alpha = gate("LoggingAlphaOptions");
        let forbidden =
            |path: &str| format!("{path}: Forbidden: Feature LoggingAlphaOptions is disabled");
        let nonzero = |q: &str| !goparse::parse_quantity_is_zero(q).unwrap_or(true);
        if !alpha {
            if lg.text_split_stream {
                errs.push(forbidden("options.text.splitStream"));
            }
            if nonzero(&lg.text_info_buffer_size) {
                errs.push(forbidden("options.text.infoBufferSize"));
            }
            if lg.json_split_stream {
                errs.push(forbidden("options.json.splitStream"));
            }
            if nonzero(&lg.json_info_buffer_size) {
                errs.push(forbidden("options.json.infoBufferSize"));
            }
        }
        errs
    }
}

/// klog's `-vmodule` value: `pattern=N` items, comma-separated.
fn parse_vmodule(value: &str) -> Result<Vec<(String, u32)>, String> {
    let mut out = Vec::new();
    for pat in value.split(',') {
        if pat.is_empty() {
            continue;
        }
        let parts: Vec<&str> = pat.split('=').collect();
        if parts.len() != 2 || parts[0].is_empty() || parts[1].is_empty() {
            return Err(format!(
                "{} does not have the pattern=N format",
                go_quote(pat)
            ));
        }
        let level = goparse::parse_level(parts[1])
            .map_err(|e| format!("parsing verbosity in {}: {e}", go_quote(pat)))?;
        out.push((parts[0].to_string(), level));
    }
    Ok(out)
}

fn parse_severity(value: &str) -> Result<i32, String> {
    match value.to_ascii_uppercase().as_str() {
        "INFO" => Ok(0),
        "WARNING" => Ok(1),
        "ERROR" => Ok(2),
        "FATAL" => Ok(3),
        _ => goparse::parse_int32_base10(value),
    }
}

fn parse_trace_location(value: &str) -> Result<String, String> {
    if value.is_empty() {
        return Ok(String::new());
    }
    let syntax = || "syntax error: expect file.go:234".to_string();
    let fields: Vec<&str> = value.split(':').collect();
    if fields.len() != 2 || !fields[0].contains('.') {
        return Err(syntax());
    }
    let line: i64 = fields[1].parse().map_err(|_| syntax())?;
    if line <= 0 {
        return Err("negative or zero value for level".into());
    }
    Ok(value.to_string())
}
