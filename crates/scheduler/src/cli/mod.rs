//! The binary's subcommands, dispatched before the daemon's flags are parsed: `simulate`
//! ([`simulate`]: the daemon's cycle over objects read from files) and `explain` ([`explain`]:
//! the same over objects read from the live control plane). Both run the library's cycle
//! against its in-memory store.

pub mod explain;
pub mod simulate;

/// A subcommand flag's value: the inline one (`--flag=v`), else the next argument (moving
/// `next` past it).
fn flag_value(
    args: &[String],
    next: &mut usize,
    inline: Option<&str>,
    flag: &str,
) -> anyhow::Result<String> {
    if let Some(v) = inline {
        return Ok(v.to_string());
    }
    let v = args
        .get(*next)
        .ok_or_else(|| anyhow::anyhow!("flag needs an argument: {flag}"))?;
    *next += 1;
    Ok(v.clone())
}

#[cfg(test)]
mod tests {
    use super::flag_value;

    #[test]
    fn a_value_is_inline_or_the_next_argument() {
        let args: Vec<String> = ["-n", "ns"].iter().map(|s| s.to_string()).collect();
        let mut next = 1;
        assert_eq!(flag_value(&args, &mut next, Some("x"), "-n").unwrap(), "x");
        assert_eq!(next, 1);
        assert_eq!(flag_value(&args, &mut next, None, "-n").unwrap(), "ns");
        assert_eq!(next, 2);
        assert_eq!(
            flag_value(&args, &mut next, None, "-n")
                .unwrap_err()
                .to_string(),
            "flag needs an argument: -n"
        );
    }
}
