//! The pflag-compatible command-line parser (`component_base::flags`) over the real flag
//! tables of karmada-scheduler and karmada-descheduler, then their validation and, for the
//! scheduler, what the flags build (plugin list, estimator options).
//!
//! Input: the arguments, one per line.
//!
//! Besides "no panic": `--name=value` and `--name value` mean the same for every flag that
//! takes a value (pflag's rule), so rewriting the first form into the second must not change
//! the outcome, success or error.

#![no_main]

#[global_allocator]
static ALLOC: karmada_fuzz::LimitedAlloc = karmada_fuzz::LimitedAlloc;

use component_base::cli::Command;
use component_base::flags::{FlagDef, Kind};
use libfuzzer_sys::fuzz_target;

fn find<'t>(tables: &[&'t [FlagDef]], name: &str) -> Option<&'t FlagDef> {
    tables
        .iter()
        .flat_map(|t| t.iter())
        .find(|d| d.name == name)
}

/// `args` with every `--name=value` of a value-taking flag split into `--name`, `value`;
/// `None` when the line cannot be followed without the parser's verdict (an unknown
/// shorthand ends the parse with an error anyway).
fn split_inline_values(tables: &[&[FlagDef]], args: &[&str]) -> Option<Vec<String>> {
    let mut out = Vec::with_capacity(args.len() + 4);
    let mut i = 0;
    while i < args.len() {
        let arg = args[i];
        i += 1;
        if arg.len() < 2 || !arg.starts_with('-') {
            out.push(arg.to_string());
            continue;
        }
        if let Some(body) = arg.strip_prefix("--") {
            if body.is_empty() {
                out.extend(args[i - 1..].iter().map(|s| s.to_string()));
                return Some(out);
            }
            let (name, inline) = match body.split_once('=') {
                Some((n, v)) => (n, Some(v)),
                None => (body, None),
            };
            let norm = name.replace('_', "-");
            let def = find(tables, &norm).filter(|d| norm != "help" && d.kind != Kind::Bool);
            match (def, inline) {
                (Some(_), Some(v)) => {
                    out.push(format!("--{name}"));
                    out.push(v.to_string());
                }
                (Some(_), None) => {
                    // The next argument is this flag's value, whatever it looks like.
                    out.push(arg.to_string());
                    if i < args.len() {
                        out.push(args[i].to_string());
                        i += 1;
                    }
                }
                (None, _) => out.push(arg.to_string()),
            }
            continue;
        }
        out.push(arg.to_string());
        let mut shorts = &arg[1..];
        while let Some(c) = shorts.chars().next() {
            if c == 'h' {
                shorts = &shorts[1..];
                continue;
            }
            let def = tables
                .iter()
                .flat_map(|t| t.iter())
                .find(|d| d.shorthand == Some(c))?;
            let rest = &shorts[c.len_utf8()..];
            if rest.len() > 1 && rest.starts_with('=') {
                break;
            } else if def.kind == Kind::Bool {
                shorts = rest;
            } else {
                if rest.is_empty() && i < args.len() {
                    out.push(args[i].to_string());
                    i += 1;
                }
                break;
            }
        }
    }
    Some(out)
}

fn check<O: Command + std::fmt::Debug>(args: &[&str]) -> Option<Box<O>> {
    let first = component_base::cli::parse::<O, _>(args);
    if let Some(split) = split_inline_values(O::TABLES, args) {
        let second = component_base::cli::parse::<O, _>(&split);
        // Debug text, not `==`: a float flag may hold NaN.
        assert_eq!(
            format!("{first:?}"),
            format!("{second:?}"),
            "{args:?} and {split:?} parse differently"
        );
    }
    match first {
        Ok(component_base::cli::Invocation::Run(opts)) => {
            let valid = opts.validate().is_ok();
            let _ = opts.logging();
            valid.then_some(opts)
        }
        Ok(_) => None,
        Err(e) => {
            assert!(!e.message.is_empty());
            None
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let args: Vec<&str> = text.split('\n').collect();
    if args.len() > 64 {
        return;
    }
    if let Some(opts) = check::<karmada_scheduler::config::options::Options>(&args) {
        let _ = karmada_scheduler::config::build::build_scheduler(&opts, None);
        let estimator = karmada_scheduler::config::build::estimator_options(&opts);
        // Validation let only in-range values through, so the mapping loses nothing.
        assert_eq!(i64::from(estimator.port), opts.estimator.port);
        assert_eq!(
            estimator.timeout.as_nanos(),
            u128::try_from(opts.estimator.timeout.0).expect("validated as non-negative")
        );
    }
    let _ = check::<karmada_descheduler::options::Options>(&args);
});
