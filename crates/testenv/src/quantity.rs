//! Minimal Kubernetes quantity parsing for test expectations (e.g. computing
//! what an estimator should answer from the fake nodes and pods).

use anyhow::{anyhow, bail};

/// Parses a Kubernetes quantity (`"500m"`, `"2"`, `"1Gi"`, `"1.5"`, `"1e3"`,
/// `"128974848"`, `"129M"`) into thousandths of the base unit, rounding up
/// like Kubernetes' `MilliValue()`.
pub fn parse_milli(q: &str) -> anyhow::Result<i128> {
    let q = q.trim();
    if q.is_empty() {
        bail!("empty quantity");
    }
    let split = q
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '+' || c == '-'))
        .unwrap_or(q.len());
    let (num, suffix) = q.split_at(split);
    // (multiplier numerator, denominator) relative to the base unit
    let (mul, div): (i128, i128) = match suffix {
        "" => (1, 1),
        "n" => (1, 1_000_000_000),
        "u" => (1, 1_000_000),
        "m" => (1, 1_000),
        "k" => (1_000, 1),
        "M" => (1_000_000, 1),
        "G" => (1_000_000_000, 1),
        "T" => (1_000_000_000_000, 1),
        "P" => (1_000_000_000_000_000, 1),
        "E" => (1_000_000_000_000_000_000, 1),
        "Ki" => (1 << 10, 1),
        "Mi" => (1 << 20, 1),
        "Gi" => (1 << 30, 1),
        "Ti" => (1 << 40, 1),
        "Pi" => (1 << 50, 1),
        "Ei" => (1 << 60, 1),
        s if s.starts_with(['e', 'E']) => {
            let exp: u32 = s[1..].parse().map_err(|_| anyhow!("bad exponent in {q}"))?;
            (10i128.pow(exp), 1)
        }
        _ => bail!("unknown quantity suffix in {q:?}"),
    };
    let negative = num.starts_with('-');
    let digits = num.trim_start_matches(['+', '-']);
    let (int_part, frac_part) = digits.split_once('.').unwrap_or((digits, ""));
    if int_part.is_empty() && frac_part.is_empty() {
        bail!("no digits in {q:?}");
    }
    let scale = 10i128.pow(frac_part.len() as u32);
    let int: i128 = if int_part.is_empty() {
        0
    } else {
        int_part.parse()?
    };
    let frac: i128 = if frac_part.is_empty() {
        0
    } else {
        frac_part.parse()?
    };
    let value_scaled = int * scale + frac; // value * scale
    // milli = value * mul / div * 1000, rounded up
    let numer = value_scaled * mul * 1000;
    let denom = scale * div;
    let milli = (numer + denom - 1) / denom;
    Ok(if negative { -milli } else { milli })
}

/// [`parse_milli`] divided by 1000, rounded up (Kubernetes' `Value()`).
pub fn parse_value(q: &str) -> anyhow::Result<i128> {
    let m = parse_milli(q)?;
    Ok((m + 999).div_euclid(1000))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_common_forms() {
        assert_eq!(parse_milli("500m").unwrap(), 500);
        assert_eq!(parse_milli("2").unwrap(), 2000);
        assert_eq!(parse_milli("1.5").unwrap(), 1500);
        assert_eq!(parse_value("1Gi").unwrap(), 1 << 30);
        assert_eq!(parse_value("512Mi").unwrap(), 512 << 20);
        assert_eq!(parse_value("129M").unwrap(), 129_000_000);
        assert_eq!(parse_value("1e3").unwrap(), 1000);
        assert_eq!(parse_value("110").unwrap(), 110);
        assert_eq!(parse_milli("100n").unwrap(), 1);
        assert!(parse_milli("abc").is_err());
        assert!(parse_milli("1Xi").is_err());
    }
}
