//! Where log lines go, as klog (v2, as component-base registers it) sends them.
//!
//! - `--logtostderr` (default true): standard error only; the file flags have no effect.
//!   With `--log-text-split-stream`/`--log-json-split-stream` (gate `LoggingAlphaOptions`),
//!   info lines go to standard output and errors to standard error.
//! - `--logtostderr=false`: files. `--log-file` is one file for every severity, opened for
//!   appending at start; at `--log-file-max-size` MB (0: no limit) it is truncated and started
//!   again, as klog does. Otherwise one file per severity in `--log-dir` (the temporary
//!   directory when empty), named `<program>.<host>.<user>.log.<SEVERITY>.<yyyymmdd-hhmmss>.<pid>`
//!   with a `<program>.<SEVERITY>` symlink to the newest; a line goes to its severity's file
//!   and every lower one (only its own with `--one-output`); at the size limit a new file is
//!   started. Each new file begins with klog's four header lines unless `--skip-log-headers`.
//!   Lines also go to standard error with `--alsologtostderr` when their severity is at or
//!   above `--alsologtostderrthreshold` (default 0, every line), or without it when their
//!   severity is at or above `--stderrthreshold` (default 2, errors).
//! - `--legacy-stderr-threshold-behavior=false` (klog v2.140, Kubernetes 1.36): with
//!   `--logtostderr`, text lines below `--stderrthreshold` are dropped; by default (true)
//!   every line is written, as before. Split streams and JSON go through a logger in klog,
//!   which this threshold does not reach.
//! - The text line is klog's: `Lmmdd hh:mm:ss.uuuuuu pid file:line] msg key="value"` (local
//!   time), without the prefix under `--skip-headers`, with the file's directory under
//!   `--add-dir-header`. `--logging-format=json` writes component-base's JSON lines instead.
//! - `-v` maps onto `tracing` levels per source ([`Source`]): this project's crates log debug
//!   lines at 4 and trace lines at 6, as klog's V(4)/V(6); the Kubernetes client (kube,
//!   tower-http) debug at 6 and trace at 8, where client-go logs its requests; every other
//!   dependency (hyper, h2, tonic, tower, rustls, ...) debug at 8 and trace at 9. Errors,
//!   warnings and info lines of every source are always written. `--vmodule` gives files
//!   matching a pattern (the file name without `.rs`, `*` and `?` allowed; with a `/`, the
//!   path) their own verbosity, and a dependency's crate name (`h2`, `hyper_util`, ...) works
//!   as a pattern too: `--vmodule=h2=8` turns h2's debug lines on.
//! - `--log-backtrace-at=file:N` appends a stack trace to lines logged at that line.
//! - Lines are written through unbuffered, so `--log-flush-frequency` and the info buffer
//!   sizes are met trivially (nothing is ever held back longer).

use std::fmt::Write as _;
use std::fs::{File, OpenOptions};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use tracing::field::{Field, Visit};
use tracing::{Event, Level, Metadata, Subscriber};
use tracing_subscriber::Layer;
use tracing_subscriber::layer::Context;

use crate::logflags::LoggingOptions;

/// klog severities, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    Info = 0,
    Warning = 1,
    Error = 2,
}

impl Severity {
    fn of(level: &Level) -> Self {
        match *level {
            Level::ERROR => Severity::Error,
            Level::WARN => Severity::Warning,
            _ => Severity::Info,
        }
    }

    fn letter(self) -> char {
        match self {
            Severity::Info => 'I',
            Severity::Warning => 'W',
            Severity::Error => 'E',
        }
    }

    fn name(self) -> &'static str {
        match self {
            Severity::Info => "INFO",
            Severity::Warning => "WARNING",
            Severity::Error => "ERROR",
        }
    }
}

/// The `tracing` level a klog verbosity allows for this project's own lines.
pub fn level_of(verbosity: u32) -> Level {
    Source::Own.level_at(verbosity)
}

/// Where a line comes from, by the crate of its `tracing` target: the verbosity at which its
/// debug and trace lines appear depends on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// This project's crates: debug at `-v` 4, trace at 6 (klog's V(4) and V(6)).
    Own,
    /// The Kubernetes client (`kube*`, `tower_http`, whose trace layer kube uses): debug at 6,
    /// trace at 8, where client-go logs its requests, headers and bodies.
    KubeClient,
    /// Every other dependency (hyper, h2, tonic, tower, rustls, axum, ...): debug at 8, trace
    /// at 9 (HTTP/2 frames and connection pools are not an operator's V(4)).
    Dependency,
}

/// The crates of this workspace (library and binary names), by their `tracing` target's
/// first segment.
const OWN_CRATES: &[&str] = &[
    "karmada_scheduler",
    "karmada_descheduler",
    "scheduler_core",
    "component_base",
    "estimator_client",
    "karmada_api",
    "testenv",
    "karmada_bench",
];

impl Source {
    /// The source of an event or span with this `tracing` target.
    pub fn of_target(target: &str) -> Self {
        let krate = crate_of(target);
        if OWN_CRATES.contains(&krate) {
            Source::Own
        } else if krate.starts_with("kube") || krate == "tower_http" {
            Source::KubeClient
        } else {
            Source::Dependency
        }
    }

    /// The most verbose `tracing` level this source writes at klog verbosity `v`.
    pub fn level_at(self, v: u32) -> Level {
        let (debug_at, trace_at) = match self {
            Source::Own => (4, 6),
            Source::KubeClient => (6, 8),
            Source::Dependency => (8, 9),
        };
        if v >= trace_at {
            Level::TRACE
        } else if v >= debug_at {
            Level::DEBUG
        } else {
            Level::INFO
        }
    }
}

/// The crate part of a `tracing` target (`h2::codec::framed_read` -> `h2`).
fn crate_of(target: &str) -> &str {
    target.split("::").next().unwrap_or(target)
}

/// An open log file and the bytes it holds.
type Slot = Option<(File, u64)>;

/// The open log file(s).
#[derive(Debug)]
enum Files {
    /// `--log-file`.
    Single { path: PathBuf, slot: Slot },
    /// One per severity in a directory.
    PerSeverity { dir: PathBuf, slots: [Slot; 3] },
}

/// Everything that decides where a line goes.
#[derive(Debug)]
pub struct Router {
    also_stderr: bool,
    also_stderr_threshold: i32,
    stderr_threshold: i32,
    legacy_stderr_threshold: bool,
    split_stream: bool,
    one_output: bool,
    skip_headers: bool,
    skip_log_headers: bool,
    add_dir_header: bool,
    json: bool,
    max_bytes: u64,
    verbosity: u32,
    vmodule: Vec<(String, u32)>,
    backtrace_at: Option<(String, u32)>,
    files: Option<Mutex<Files>>,
    program: String,
}

impl Router {
    /// The routing the flags ask for.
    pub fn new(lg: &LoggingOptions) -> Self {
        let program = std::env::args()
            .next()
            .as_deref()
            .map(Path::new)
            .and_then(Path::file_name)
            .map_or_else(
                || "karmada-scheduler".into(),
                |n| n.to_string_lossy().into_owned(),
            );
        let files = (!lg.logtostderr).then(|| {
            Mutex::new(if lg.log_file.is_empty() {
                let dir = if lg.log_dir.is_empty() {
                    std::env::temp_dir()
                } else {
                    PathBuf::from(&lg.log_dir)
                };
                Files::PerSeverity {
                    dir,
                    slots: [None, None, None],
                }
            } else {
                Files::Single {
                    path: PathBuf::from(&lg.log_file),
                    slot: None,
                }
            })
        });
        let backtrace_at = lg
            .log_backtrace_at
            .rsplit_once(':')
            .and_then(|(f, n)| Some((f.to_string(), n.parse().ok()?)));
        Self {
            also_stderr: lg.alsologtostderr,
            also_stderr_threshold: lg.alsologtostderrthreshold,
            stderr_threshold: lg.stderrthreshold,
            legacy_stderr_threshold: lg.legacy_stderr_threshold_behavior,
            split_stream: if lg.format == "json" {
                lg.json_split_stream
            } else {
                lg.text_split_stream
            },
            one_output: lg.one_output,
            skip_headers: lg.skip_headers,
            skip_log_headers: lg.skip_log_headers,
            add_dir_header: lg.add_dir_header,
            json: lg.format == "json",
            max_bytes: if lg.log_file_max_size == 0 {
                u64::MAX
            } else {
                lg.log_file_max_size.saturating_mul(1024 * 1024)
            },
            verbosity: lg.verbosity,
            vmodule: lg.vmodule.clone(),
            backtrace_at,
            files,
            program,
        }
    }

    /// The most verbose level any file may log at.
    pub fn max_level(&self) -> Level {
        let v = self
            .vmodule
            .iter()
            .map(|(_, v)| *v)
            .chain([self.verbosity])
            .max()
            .unwrap_or(0);
        level_of(v)
    }

    /// The verbosity that applies to events from `file`; for a dependency's events (`krate`:
    /// its crate name), a `--vmodule` pattern may also name the crate.
    fn verbosity_for(&self, file: Option<&str>, krate: Option<&str>) -> u32 {
        let stem = file.map(|f| {
            Path::new(f)
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default()
        });
        let no_ext = file.map(|f| f.strip_suffix(".rs").unwrap_or(f));
        for (pattern, v) in &self.vmodule {
            let matched = if pattern.contains('/') {
                no_ext.is_some_and(|p| glob(pattern, p))
            } else {
                stem.as_deref().is_some_and(|s| glob(pattern, s))
                    || krate.is_some_and(|k| glob(pattern, k))
            };
            if matched {
                return *v;
            }
        }
        self.verbosity
    }

    /// Whether a line or span with this metadata is written.
    fn allows(&self, meta: &Metadata<'_>) -> bool {
        let source = Source::of_target(meta.target());
        let krate = (source != Source::Own).then(|| crate_of(meta.target()));
        *meta.level() <= source.level_at(self.verbosity_for(meta.file(), krate))
    }

    fn header(&self, severity: Severity, meta: &Metadata<'_>) -> String {
        if self.skip_headers {
            return String::new();
        }
        let now = k8s_openapi::jiff::Zoned::now();
        let file = meta.file().unwrap_or("???");
        let file = if self.add_dir_header {
            file
        } else {
            file.rsplit('/').next().unwrap_or(file)
        };
        format!(
            "{}{} {:>7} {}:{}] ",
            severity.letter(),
            now.strftime("%m%d %H:%M:%S.%6f"),
            std::process::id(),
            file,
            meta.line().unwrap_or(0)
        )
    }

    /// One line as it is written (ends with a newline).
    fn format(&self, event: &Event<'_>) -> (Severity, String) {
        let meta = event.metadata();
        let severity = Severity::of(meta.level());
        let mut fields = Fields::default();
        event.record(&mut fields);
        let mut line = if self.json {
            let mut obj = serde_json::Map::new();
            let ts = k8s_openapi::jiff::Timestamp::now().as_microsecond() as f64 / 1000.0;
            obj.insert("ts".into(), serde_json::Value::from(ts));
            let file = meta.file().unwrap_or("???");
            let file = file.rsplit('/').next().unwrap_or(file);
            obj.insert(
                "caller".into(),
                format!("{file}:{}", meta.line().unwrap_or(0)).into(),
            );
            obj.insert("msg".into(), fields.message.clone().into());
            if severity != Severity::Error {
                obj.insert("v".into(), 0.into());
            }
            for (k, v) in &fields.pairs {
                let value = match v {
                    FieldValue::Str(s) => serde_json::Value::String(s.clone()),
                    FieldValue::Raw(r) => serde_json::from_str::<serde_json::Value>(r)
                        .ok()
                        .filter(|v| v.is_number() || v.is_boolean())
                        .unwrap_or_else(|| serde_json::Value::String(r.clone())),
                };
                obj.insert(k.clone(), value);
            }
            serde_json::Value::Object(obj).to_string()
        } else {
            let mut s = self.header(severity, meta);
            s.push_str(&fields.message);
            for (k, v) in &fields.pairs {
                match v {
                    FieldValue::Str(text) => {
                        let _ = write!(s, " {k}={text:?}");
                    }
                    // A value that prints with spaces (an error, a message) is quoted,
                    // as klog quotes it.
                    FieldValue::Raw(text) if text.contains(char::is_whitespace) => {
                        let _ = write!(s, " {k}={text:?}");
                    }
                    FieldValue::Raw(text) => {
                        let _ = write!(s, " {k}={text}");
                    }
                }
            }
            s
        };
        if let Some((file, n)) = &self.backtrace_at {
            let here = meta.file().map(|f| f.rsplit('/').next().unwrap_or(f));
            if here == Some(file.as_str()) && meta.line() == Some(*n) {
                let _ = write!(line, "\n{}", std::backtrace::Backtrace::force_capture());
            }
        }
        line.push('\n');
        (severity, line)
    }

    /// Send one line where the flags say.
    pub fn write(&self, severity: Severity, line: &str) {
        let bytes = line.as_bytes();
        let Some(files) = &self.files else {
            if self.split_stream && severity < Severity::Error {
                let _ = std::io::stdout().write_all(bytes);
            } else if !self.split_stream
                && !self.json
                && !self.legacy_stderr_threshold
                && (severity as i32) < self.stderr_threshold
            {
                // Filtered by --stderrthreshold under --legacy-stderr-threshold-behavior=false.
            } else {
                let _ = std::io::stderr().write_all(bytes);
            }
            return;
        };
        let to_stderr = if self.also_stderr {
            severity as i32 >= self.also_stderr_threshold
        } else {
            severity as i32 >= self.stderr_threshold
        };
        if to_stderr {
            let _ = std::io::stderr().write_all(bytes);
        }
        let mut files = files.lock().unwrap_or_else(|p| p.into_inner());
        match &mut *files {
            Files::Single { path, slot } => {
                self.write_to(slot, bytes, |startup| open(path, startup), path);
            }
            Files::PerSeverity { dir, slots } => {
                let targets: Vec<Severity> = if self.one_output {
                    vec![severity]
                } else {
                    [Severity::Info, Severity::Warning, Severity::Error]
                        .into_iter()
                        .filter(|s| *s <= severity)
                        .collect()
                };
                for s in targets {
                    self.write_to(
                        &mut slots[s as usize],
                        bytes,
                        |startup| self.new_severity_file(dir, s, startup),
                        dir,
                    );
                }
            }
        }
    }

    /// Write `bytes` to the file of `slot`: opened at first use (appending, as klog at start),
    /// or anew (`open(false)`) when the line would take it to the size limit; a new file starts
    /// with the header. `place` names where, when opening fails.
    fn write_to(
        &self,
        slot: &mut Slot,
        bytes: &[u8],
        open: impl FnOnce(bool) -> std::io::Result<File>,
        place: &Path,
    ) {
        let startup = slot.is_none();
        let full = slot
            .as_ref()
            .is_some_and(|(_, n)| n + bytes.len() as u64 >= self.max_bytes);
        if startup || full {
            match open(startup) {
                Ok(mut f) => {
                    let kept = if startup {
                        f.metadata().map(|m| m.len()).unwrap_or(0)
                    } else {
                        0
                    };
                    let header = self.file_header(&mut f);
                    *slot = Some((f, kept + header));
                }
                Err(e) => {
                    let _ = writeln!(
                        std::io::stderr(),
                        "log: unable to create log in {}: {e}",
                        place.display()
                    );
                    return;
                }
            }
        }
        if let Some((f, n)) = slot {
            let _ = f.write_all(bytes);
            *n += bytes.len() as u64;
        }
    }

    /// klog's header lines of a new file; the bytes written.
    fn file_header(&self, f: &mut File) -> u64 {
        if self.skip_log_headers {
            return 0;
        }
        let now = k8s_openapi::jiff::Zoned::now();
        let text = format!(
            "Log file created at: {}\nRunning on machine: {}\nBinary: Built with rustc for {}/{}\nLog line format: [IWEF]mmdd hh:mm:ss.uuuuuu threadid file:line] msg\n",
            now.strftime("%Y/%m/%d %H:%M:%S"),
            host(),
            std::env::consts::OS,
            std::env::consts::ARCH,
        );
        let _ = f.write_all(text.as_bytes());
        text.len() as u64
    }

    /// A new file of severity `s` in `dir`, with klog's name, and its symlink.
    fn new_severity_file(&self, dir: &Path, s: Severity, startup: bool) -> std::io::Result<File> {
        let now = k8s_openapi::jiff::Zoned::now();
        let name = format!(
            "{}.{}.{}.log.{}.{}.{}",
            self.program,
            host(),
            user(),
            s.name(),
            now.strftime("%Y%m%d-%H%M%S"),
            std::process::id()
        );
        let f = open(&dir.join(&name), startup)?;
        let link = dir.join(format!("{}.{}", self.program, s.name()));
        let _ = std::fs::remove_file(&link);
        let _ = std::os::unix::fs::symlink(&name, &link);
        Ok(f)
    }
}

/// klog's `openOrCreate`: append at start, truncate on rotation.
fn open(path: &Path, startup: bool) -> std::io::Result<File> {
    if startup {
        OpenOptions::new().create(true).append(true).open(path)
    } else {
        File::create(path)
    }
}

fn host() -> String {
    let h = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    let h = h.trim();
    let short = h.split('.').next().unwrap_or(h);
    if short.is_empty() {
        "unknownhost".into()
    } else {
        short.into()
    }
}

fn user() -> String {
    std::env::var("USER")
        .ok()
        .filter(|u| !u.is_empty())
        .unwrap_or_else(|| "unknownuser".into())
}

/// `*` and `?` glob, as klog's vmodule patterns.
fn glob(pattern: &str, text: &str) -> bool {
    fn go(p: &[char], t: &[char]) -> bool {
        match (p.first(), t.first()) {
            (None, None) => true,
            (Some('*'), _) => go(&p[1..], t) || (!t.is_empty() && go(p, &t[1..])),
            (Some('?'), Some(_)) => go(&p[1..], &t[1..]),
            (Some(a), Some(b)) if a == b => go(&p[1..], &t[1..]),
            _ => false,
        }
    }
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    go(&p, &t)
}

/// A field's value: a string (quoted in text lines, as klog quotes them) or anything else as
/// it formats (numbers, booleans, `%`/`?` values).
enum FieldValue {
    Str(String),
    Raw(String),
}

/// The message and the other fields of an event.
#[derive(Default)]
struct Fields {
    message: String,
    pairs: Vec<(String, FieldValue)>,
}

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.message = value.to_string();
        } else {
            self.pairs
                .push((field.name().to_string(), FieldValue::Str(value.to_string())));
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        let text = format!("{value:?}");
        if field.name() == "message" {
            self.message = text;
        } else {
            self.pairs
                .push((field.name().to_string(), FieldValue::Raw(text)));
        }
    }
}

impl<S: Subscriber> Layer<S> for Router {
    fn max_level_hint(&self) -> Option<tracing::level_filters::LevelFilter> {
        Some(self.max_level().into())
    }

    fn enabled(&self, meta: &Metadata<'_>, _ctx: Context<'_, S>) -> bool {
        self.allows(meta)
    }

    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        let (severity, line) = self.format(event);
        self.write(severity, &line);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracing_subscriber::layer::SubscriberExt as _;

    fn with_router<T>(lg: &LoggingOptions, f: impl FnOnce() -> T) -> T {
        let subscriber = tracing_subscriber::registry().with(Router::new(lg));
        tracing::subscriber::with_default(subscriber, f)
    }

    /// `--log-file` with `--log-file-max-size=1`: the file never grows past 1 MiB; when it
    /// would, it is truncated and starts again with the header, as klog does.
    #[test]
    fn a_log_file_rotates_at_its_size_limit() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("scheduler.log");
        std::fs::write(&path, "from an earlier run\n").unwrap();
        let lg = LoggingOptions {
            logtostderr: false,
            log_file: path.display().to_string(),
            log_file_max_size: 1,
            stderrthreshold: 3,
            ..Default::default()
        };
        let filler = "x".repeat(1000);
        let mut sizes = Vec::new();
        with_router(&lg, || {
            for i in 0..2500 {
                tracing::info!(n = i, "line {i} {filler}");
                if i % 100 == 0 {
                    sizes.push(std::fs::metadata(&path).unwrap().len());
                }
            }
        });
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(sizes.iter().all(|s| *s < 1024 * 1024), "{sizes:?}");
        assert!(
            sizes.windows(2).any(|w| w[1] < w[0]),
            "never rotated: {sizes:?}"
        );
        assert!(
            text.starts_with("Log file created at: "),
            "{}",
            &text[..200]
        );
        assert!(
            text.contains("Log line format: [IWEF]mmdd hh:mm:ss.uuuuuu threadid file:line] msg\n")
        );
        assert!(
            !text.contains("from an earlier run"),
            "truncated on rotation"
        );
        assert!(
            !text.contains("] line 0 "),
            "the first lines went with the rotation"
        );
        assert!(text.contains("] line 2499 "), "the last line is there");
        let last = text.lines().last().unwrap();
        assert!(
            last.starts_with('I') && last.contains("logging.rs:") && last.ends_with("n=2499"),
            "{last}"
        );
    }

    /// At start an existing `--log-file` is appended to; `--skip-log-headers` and
    /// `--skip-headers` leave the file and line headers out.
    #[test]
    fn a_log_file_is_appended_at_start_and_headers_can_be_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("scheduler.log");
        std::fs::write(&path, "from an earlier run\n").unwrap();
        let lg = LoggingOptions {
            logtostderr: false,
            log_file: path.display().to_string(),
            skip_log_headers: true,
            skip_headers: true,
            stderrthreshold: 3,
            ..Default::default()
        };
        with_router(&lg, || tracing::warn!(binding = "ns/b", "plain"));
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "from an earlier run\nplain binding=\"ns/b\"\n"
        );
    }

    /// `--log-dir`: a file per severity, each line in its own and the lower ones (only its own
    /// with `--one-output`), klog's names and symlinks.
    #[test]
    fn a_log_dir_gets_a_file_per_severity() {
        for one_output in [false, true] {
            let dir = tempfile::tempdir().unwrap();
            let lg = LoggingOptions {
                logtostderr: false,
                log_dir: dir.path().display().to_string(),
                one_output,
                stderrthreshold: 3,
                ..Default::default()
            };
            with_router(&lg, || {
                tracing::info!("an info");
                tracing::warn!("a warning");
                tracing::error!("an error");
            });
            let program = Router::new(&lg).program;
            let read = |sev: &str| {
                std::fs::read_to_string(dir.path().join(format!("{program}.{sev}"))).unwrap()
            };
            let count = |text: &str| text.lines().filter(|l| l.contains("] a")).count();
            let (info, warning, error) = (read("INFO"), read("WARNING"), read("ERROR"));
            if one_output {
                assert_eq!((count(&info), count(&warning), count(&error)), (1, 1, 1));
            } else {
                assert_eq!((count(&info), count(&warning), count(&error)), (3, 2, 1));
            }
            assert!(
                error
                    .lines()
                    .any(|l| l.starts_with('E') && l.ends_with("] an error"))
            );
            let target = std::fs::read_link(dir.path().join(format!("{program}.INFO"))).unwrap();
            let name = target.to_string_lossy();
            assert!(
                name.starts_with(&format!("{program}.")) && name.contains(".log.INFO."),
                "{name}"
            );
            assert!(
                name.ends_with(&format!(".{}", std::process::id())),
                "{name}"
            );
        }
    }

    #[test]
    fn vmodule_gives_matching_files_their_own_level() {
        let lg = LoggingOptions {
            verbosity: 0,
            vmodule: vec![("logg*".into(), 4), ("other".into(), 6)],
            ..Default::default()
        };
        let r = Router::new(&lg);
        assert_eq!(
            r.verbosity_for(Some("crates/scheduler/src/logging.rs"), None),
            4
        );
        assert_eq!(r.verbosity_for(Some("src/cycle.rs"), None), 0);
        assert_eq!(r.verbosity_for(Some("src/other.rs"), Some("h2")), 6);
        assert_eq!(r.verbosity_for(None, Some("other")), 6);
        assert_eq!(r.verbosity_for(None, Some("hyper")), 0);
        assert_eq!(r.max_level(), Level::TRACE);
        assert!(glob("c?cle", "cycle") && glob("*", "x") && !glob("cy", "cycle"));
    }

    /// One line from each kind of source at debug and trace, plus a dependency's warning,
    /// written at `verbosity` with `vmodule`; the messages that made it to the log.
    fn lines_at(verbosity: u32, vmodule: &[(&str, u32)]) -> Vec<String> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v.log");
        let lg = LoggingOptions {
            logtostderr: false,
            log_file: path.display().to_string(),
            skip_log_headers: true,
            skip_headers: true,
            stderrthreshold: 3,
            verbosity,
            vmodule: vmodule.iter().map(|(p, v)| (p.to_string(), *v)).collect(),
            ..Default::default()
        };
        with_router(&lg, || {
            tracing::debug!("own debug");
            tracing::trace!("own trace");
            tracing::debug!(target: "kube_client::client::builder", "kube debug");
            tracing::trace!(target: "kube_client::client", "kube trace");
            tracing::debug!(target: "h2::codec::framed_write", "h2 debug");
            tracing::trace!(target: "h2::proto::streams", "h2 trace");
            tracing::debug!(target: "hyper_util::client::legacy::pool", "hyper debug");
            tracing::debug!(target: "tower::buffer::worker", "tower debug");
            tracing::debug!(target: "rustls::client::hs", "rustls debug");
            tracing::debug!(target: "tonic::transport", "tonic debug");
            tracing::info!(target: "h2::proto", "h2 info");
            tracing::warn!(target: "hyper::proto", "hyper warning");
        });
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        text.lines().map(str::to_string).collect()
    }

    /// At `-v=4` this project's debug lines are written and no dependency's; the Kubernetes
    /// client's debug lines come at 6, the other dependencies' at 8 and their trace at 9;
    /// their warnings and info lines always.
    #[test]
    fn dependencies_are_quieter_than_our_own_lines() {
        let always = ["h2 info", "hyper warning"];
        let deps_debug = [
            "h2 debug",
            "hyper debug",
            "tower debug",
            "rustls debug",
            "tonic debug",
        ];
        let cases: [(u32, &[&str]); 6] = [
            (0, &[]),
            (4, &["own debug"]),
            (6, &["own debug", "own trace", "kube debug"]),
            (7, &["own debug", "own trace", "kube debug"]),
            (
                8,
                &[
                    "own debug",
                    "own trace",
                    "kube debug",
                    "kube trace",
                    "h2 debug",
                    "hyper debug",
                    "tower debug",
                    "rustls debug",
                    "tonic debug",
                ],
            ),
            (
                9,
                &[
                    "own debug",
                    "own trace",
                    "kube debug",
                    "kube trace",
                    "h2 debug",
                    "h2 trace",
                    "hyper debug",
                    "tower debug",
                    "rustls debug",
                    "tonic debug",
                ],
            ),
        ];
        for (v, expected) in cases {
            let got = lines_at(v, &[]);
            let mut want: Vec<&str> = expected.to_vec();
            want.extend(always);
            want.sort_unstable();
            let mut got_sorted: Vec<&str> = got.iter().map(String::as_str).collect();
            got_sorted.sort_unstable();
            assert_eq!(got_sorted, want, "at -v={v}");
            if v < 8 {
                assert!(deps_debug.iter().all(|d| !got.iter().any(|l| l == d)));
            }
        }
    }

    /// `--vmodule` names a dependency by its crate: `h2=8` brings h2's debug lines (only
    /// h2's) to a `-v=4` log, `h2=9` its trace lines too; `kube_client=6` the client's.
    #[test]
    fn vmodule_turns_a_dependency_on_by_its_crate_name() {
        let got = lines_at(4, &[("h2", 8)]);
        assert!(got.contains(&"h2 debug".to_string()), "{got:?}");
        assert!(!got.contains(&"h2 trace".to_string()), "{got:?}");
        assert!(!got.contains(&"hyper debug".to_string()), "{got:?}");
        assert!(got.contains(&"own debug".to_string()), "{got:?}");

        let got = lines_at(0, &[("h2", 9), ("kube_*", 6)]);
        assert!(got.contains(&"h2 trace".to_string()), "{got:?}");
        assert!(got.contains(&"kube debug".to_string()), "{got:?}");
        assert!(!got.contains(&"kube trace".to_string()), "{got:?}");
        assert!(!got.contains(&"own debug".to_string()), "{got:?}");
        assert!(!got.contains(&"tonic debug".to_string()), "{got:?}");

        // A file pattern of our own does not reach a dependency crate of another name.
        let got = lines_at(0, &[("logging", 4)]);
        assert!(got.contains(&"own debug".to_string()), "{got:?}");
        assert!(
            !got.iter()
                .any(|l| l.ends_with(" debug") && l != "own debug"),
            "{got:?}"
        );
    }

    #[test]
    fn json_lines_are_component_base_shaped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("scheduler.log");
        let lg = LoggingOptions {
            format: "json".into(),
            logtostderr: false,
            log_file: path.display().to_string(),
            skip_log_headers: true,
            stderrthreshold: 3,
            ..Default::default()
        };
        with_router(&lg, || tracing::info!(cluster = "m1", "connected"));
        let text = std::fs::read_to_string(&path).unwrap();
        let v: serde_json::Value = serde_json::from_str(text.trim()).unwrap();
        assert_eq!(v["msg"], "connected");
        assert_eq!(v["cluster"], "m1");
        assert_eq!(v["v"], 0);
        assert!(v["caller"].as_str().unwrap().starts_with("logging.rs:"));
        assert!(v["ts"].as_f64().unwrap() > 1.7e12);
    }

    #[test]
    fn a_backtrace_is_added_at_the_named_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("scheduler.log");
        let line = line!() + 11;
        let lg = LoggingOptions {
            logtostderr: false,
            log_file: path.display().to_string(),
            skip_log_headers: true,
            log_backtrace_at: format!("logging.rs:{line}"),
            stderrthreshold: 3,
            ..Default::default()
        };
        with_router(&lg, || {
            tracing::info!("before");
            tracing::info!("here");
        });
        let text = std::fs::read_to_string(&path).unwrap();
        let (before, here) = text.split_once("] here").unwrap();
        assert!(!before.contains("a_backtrace_is_added"), "{text}");
        assert!(
            here.lines().count() > 2,
            "no stack trace after the line:\n{text}"
        );
        assert!(
            here.contains("a_backtrace_is_added_at_the_named_line"),
            "{text}"
        );
    }
}
