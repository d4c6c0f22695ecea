//! Go's `strconv` and `time.ParseDuration` value syntax, with Go's error texts.
//!
//! pflag hands every flag value to one of these Go parsers, so a drop-in must accept exactly
//! what they accept (`0x10`, `1_000`, `1m30s`, `T`) and reject the rest with messages an
//! operator who knows the Go binary recognises.

use std::fmt;

/// A Go `time.Duration`: signed nanoseconds. Negative values are legal flag values (the
/// validation step, not the parser, rejects them where the reference does).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct GoDuration(pub i64);

impl GoDuration {
    pub const fn from_secs(s: i64) -> Self {
        Self(s * 1_000_000_000)
    }

    pub const fn from_millis(ms: i64) -> Self {
        Self(ms * 1_000_000)
    }

    /// Parse as `time.ParseDuration` does (`300ms`, `-1.5h`, `2h45m`, `0`).
    pub fn parse(text: &str) -> Result<Self, String> {
        parse_duration(text).map(Self)
    }

    /// The duration as a `std::time::Duration`; negative values become zero.
    pub fn to_std(self) -> std::time::Duration {
        std::time::Duration::from_nanos(self.0.max(0) as u64)
    }

    pub fn is_negative(self) -> bool {
        self.0 < 0
    }
}

impl fmt::Display for GoDuration {
    /// Go's `Duration.String()`: `0s`, `5ms`, `1.5µs`, `16m40s`, `1h0m0s`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let d = self.0;
        if d == 0 {
            return f.write_str("0s");
        }
        let sign = if d < 0 { "-" } else { "" };
        let u = d.unsigned_abs();
        if u < 1_000_000_000 {
            let (div, unit) = if u < 1_000 {
                (1, "ns")
            } else if u < 1_000_000 {
                (1_000, "µs")
            } else {
                (1_000_000, "ms")
            };
            return write!(f, "{sign}{}{unit}", frac(u, div));
        }
        let secs = frac(u % 60_000_000_000, 1_000_000_000);
        let minutes = u / 60_000_000_000;
        if minutes == 0 {
            return write!(f, "{sign}{secs}s");
        }
        let hours = minutes / 60;
        if hours == 0 {
            return write!(f, "{sign}{}m{secs}s", minutes % 60);
        }
        write!(f, "{sign}{hours}h{}m{secs}s", minutes % 60)
    }
}

/// `v / div` with the fractional digits of `v % div`, trailing zeros removed.
fn frac(v: u64, div: u64) -> String {
    let int = v / div;
    let rem = v % div;
    if rem == 0 {
        return int.to_string();
    }
    let width = div.ilog10() as usize;
    let digits = format!("{rem:0width$}");
    format!("{int}.{}", digits.trim_end_matches('0'))
}

fn unit_nanos(unit: &str) -> Option<u64> {
    Some(match unit {
        "ns" => 1,
        "us" | "µs" | "μs" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        "m" => 60_000_000_000,
        "h" => 3_600_000_000_000,
        _ => return None,
    })
}

fn parse_duration(orig: &str) -> Result<i64, String> {
    let invalid = || format!("time: invalid duration {}", go_quote(orig));
    let mut s = orig;
    let mut neg = false;
    if let Some(c) = s.chars().next()
        && (c == '-' || c == '+')
    {
        neg = c == '-';
        s = &s[1..];
    }
    if s == "0" {
        return Ok(0);
    }
    if s.is_empty() {
        return Err(invalid());
    }
    let mut total: u64 = 0;
    while !s.is_empty() {
        let first = s.as_bytes()[0];
        if !(first == b'.' || first.is_ascii_digit()) {
            return Err(invalid());
        }
        let int_len = s.bytes().take_while(u8::is_ascii_digit).count();
        let pre = int_len > 0;
        let mut v: u64 = 0;
        for b in s[..int_len].bytes() {
            v = v
                .checked_mul(10)
                .and_then(|v| v.checked_add(u64::from(b - b'0')))
                .filter(|v| *v <= 1 << 63)
                .ok_or_else(invalid)?;
        }
        s = &s[int_len..];
        let mut fraction: u64 = 0;
        let mut scale: f64 = 1.0;
        let mut post = false;
        if let Some(rest) = s.strip_prefix('.') {
            s = rest;
            let frac_len = s.bytes().take_while(u8::is_ascii_digit).count();
            post = frac_len > 0;
            let mut overflow = false;
            for b in s[..frac_len].bytes() {
                if overflow {
                    continue;
                }
                if fraction > (1 << 63) / 10 {
                    overflow = true;
                    continue;
                }
                fraction = fraction * 10 + u64::from(b - b'0');
                scale *= 10.0;
            }
            s = &s[frac_len..];
        }
        if !pre && !post {
            return Err(invalid());
        }
        let unit_len = s
            .find(|c: char| c == '.' || c.is_ascii_digit())
            .unwrap_or(s.len());
        let unit = &s[..unit_len];
        s = &s[unit_len..];
        if unit.is_empty() {
            return Err(format!("time: missing unit in duration {}", go_quote(orig)));
        }
        let Some(mult) = unit_nanos(unit) else {
            return Err(format!(
                "time: unknown unit {} in duration {}",
                go_quote(unit),
                go_quote(orig)
            ));
        };
        if v > (1 << 63) / mult {
            return Err(invalid());
        }
        v *= mult;
        if fraction > 0 {
            v = v
                .checked_add((fraction as f64 * (mult as f64 / scale)) as u64)
                .filter(|v| *v <= 1 << 63)
                .ok_or_else(invalid)?;
        }
        total = total
            .checked_add(v)
            .filter(|t| *t <= 1 << 63)
            .ok_or_else(invalid)?;
    }
    if neg {
        return Ok((total as i128).wrapping_neg() as i64);
    }
    if total > i64::MAX as u64 {
        return Err(invalid());
    }
    Ok(total as i64)
}

/// Go's `%q` of a string: double quotes, with `"` and `\` and control characters escaped.
pub fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn syntax(func: &str, s: &str) -> String {
    format!("strconv.{func}: parsing {}: invalid syntax", go_quote(s))
}

fn range(func: &str, s: &str) -> String {
    format!(
        "strconv.{func}: parsing {}: value out of range",
        go_quote(s)
    )
}

/// Go's `underscoreOK`: underscores only between digits (or after a base prefix).
fn underscore_ok(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    let mut saw = b'^';
    let b = if !b.is_empty() && (b[0] == b'-' || b[0] == b'+') {
        &b[1..]
    } else {
        b
    };
    let mut hex = false;
    if b.len() >= 2 && b[0] == b'0' && matches!(b[1].to_ascii_lowercase(), b'b' | b'o' | b'x') {
        i = 2;
        saw = b'0';
        hex = b[1].eq_ignore_ascii_case(&b'x');
    }
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_digit() || (hex && c.is_ascii_hexdigit()) {
            saw = b'0';
        } else if c == b'_' {
            if saw != b'0' {
                return false;
            }
            saw = b'_';
        } else {
            if saw == b'_' {
                return false;
            }
            saw = b'!';
        }
        i += 1;
    }
    saw != b'_'
}

/// Unsigned part of `strconv.ParseUint(s, base, bits)` for base 0 or 10.
fn parse_uint_digits(
    func: &str,
    orig: &str,
    s: &str,
    base0: bool,
    bits: u32,
) -> Result<u64, String> {
    if s.is_empty() {
        return Err(syntax(func, orig));
    }
    let (base, digits, prefixed) = if base0 {
        let b = s.as_bytes();
        if b[0] == b'0' && b.len() >= 3 && matches!(b[1].to_ascii_lowercase(), b'b' | b'o' | b'x') {
            let base = match b[1].to_ascii_lowercase() {
                b'b' => 2,
                b'o' => 8,
                _ => 16,
            };
            (base, &s[2..], true)
        } else if b[0] == b'0' {
            (8, &s[1..], true)
        } else {
            (10, s, false)
        }
    } else {
        (10, s, false)
    };
    let _ = prefixed;
    let max: u128 = if bits >= 64 {
        u64::MAX as u128
    } else {
        (1u128 << bits) - 1
    };
    let mut v: u128 = 0;
    let mut underscores = false;
    let mut out_of_range = false;
    for c in digits.chars() {
        if c == '_' && base0 {
            underscores = true;
            continue;
        }
        let Some(d) = c.to_digit(base) else {
            return Err(syntax(func, orig));
        };
        if !out_of_range {
            v = v * u128::from(base) + u128::from(d);
            if v > max {
                out_of_range = true;
            }
        }
    }
    if underscores && !underscore_ok(s) {
        return Err(syntax(func, orig));
    }
    if out_of_range {
        return Err(range(func, orig));
    }
    Ok(v as u64)
}

/// `strconv.ParseInt(s, 0, 64)`, as pflag's `int` and `int64` flags use it.
pub fn parse_int(s: &str) -> Result<i64, String> {
    let (neg, body) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let v = parse_uint_digits("ParseInt", s, body, true, 64)
        .map_err(|e| e.replace("ParseUint", "ParseInt"))?;
    if neg {
        if v > 1 << 63 {
            return Err(range("ParseInt", s));
        }
        Ok((v as i128).wrapping_neg() as i64)
    } else {
        i64::try_from(v).map_err(|_| range("ParseInt", s))
    }
}

/// `strconv.ParseUint(s, 0, 64)` (pflag's `uint64`).
pub fn parse_uint64(s: &str) -> Result<u64, String> {
    parse_uint_digits("ParseUint", s, s, true, 64)
}

/// `strconv.ParseUint(s, 10, 31)` (the verbosity `Level` of component-base).
pub fn parse_level(s: &str) -> Result<u32, String> {
    parse_uint_digits("ParseUint", s, s, false, 31).map(|v| v as u32)
}

/// `strconv.ParseInt(s, 10, 32)` (klog's numeric severity).
pub fn parse_int32_base10(s: &str) -> Result<i32, String> {
    let (neg, body) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let v = parse_uint_digits("ParseInt", s, body, false, 64)?;
    let v = if neg { -(v as i128) } else { v as i128 };
    i32::try_from(v).map_err(|_| range("ParseInt", s))
}

/// `strconv.ParseFloat(s, 32)` (pflag's `float32`).
pub fn parse_float32(s: &str) -> Result<f32, String> {
    let cleaned: String;
    let text = if s.contains('_') {
        if !underscore_ok(s) {
            return Err(syntax("ParseFloat", s));
        }
        cleaned = s.replace('_', "");
        cleaned.as_str()
    } else {
        s
    };
    let lower = text.trim_start_matches(['+', '-']).to_ascii_lowercase();
    let named = matches!(lower.as_str(), "inf" | "infinity" | "nan");
    if !named
        && !text
            .bytes()
            .all(|b| b.is_ascii_digit() || b".eE+-".contains(&b))
    {
        return Err(syntax("ParseFloat", s));
    }
    let v: f32 = text.parse().map_err(|_| syntax("ParseFloat", s))?;
    if v.is_infinite() && !named {
        return Err(range("ParseFloat", s));
    }
    Ok(v)
}

/// `strconv.ParseBool`.
pub fn parse_bool(s: &str) -> Result<bool, String> {
    match s {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Ok(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Ok(false),
        _ => Err(syntax("ParseBool", s)),
    }
}

/// Whether `s` is a Kubernetes quantity (`512`, `1K`, `2Ki`, `1.5e3`, and, as the reference
/// accepts them, a bare sign or `.`), and whether it is zero. The one quantity parser of the
/// project decides, so a flag accepts exactly what `resource.ParseQuantity` accepts and
/// fails with its message.
pub fn parse_quantity_is_zero(s: &str) -> Result<bool, String> {
    scheduler_core::quantity::Quantity::parse(s)
        .map(|q| q.is_zero())
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_like_go() {
        let ok = [
            ("0", 0),
            ("1m30s", 90_000_000_000),
            ("5ms", 5_000_000),
            ("1.5h", 5_400_000_000_000),
            ("-1s", -1_000_000_000),
            ("+2s", 2_000_000_000),
            ("1µs", 1_000),
            ("1us", 1_000),
            (".5s", 500_000_000),
            ("1h2m3s4ms", 3_723_004_000_000),
        ];
        for (s, want) in ok {
            assert_eq!(GoDuration::parse(s), Ok(GoDuration(want)), "{s}");
        }
        assert_eq!(
            GoDuration::parse("1").unwrap_err(),
            r#"time: missing unit in duration "1""#
        );
        assert_eq!(
            GoDuration::parse("1x").unwrap_err(),
            r#"time: unknown unit "x" in duration "1x""#
        );
        assert_eq!(
            GoDuration::parse("").unwrap_err(),
            r#"time: invalid duration """#
        );
        assert_eq!(
            GoDuration::parse("s").unwrap_err(),
            r#"time: invalid duration "s""#
        );
        assert_eq!(
            GoDuration::parse(".s").unwrap_err(),
            r#"time: invalid duration ".s""#
        );
        assert!(GoDuration::parse("3000000h").is_err());
    }

    #[test]
    fn durations_print_like_go() {
        let cases = [
            (0, "0s"),
            (5_000_000, "5ms"),
            (1_000_000_000_000, "16m40s"),
            (3_600_000_000_000, "1h0m0s"),
            (1_500, "1.5µs"),
            (15_000_000_000, "15s"),
            (-2_000_000_000, "-2s"),
            (90_500_000_000, "1m30.5s"),
        ];
        for (ns, want) in cases {
            assert_eq!(GoDuration(ns).to_string(), want);
        }
    }

    #[test]
    fn ints_parse_like_go_base_zero() {
        assert_eq!(parse_int("60"), Ok(60));
        assert_eq!(parse_int("0x10"), Ok(16));
        assert_eq!(parse_int("010"), Ok(8));
        assert_eq!(parse_int("0b11"), Ok(3));
        assert_eq!(parse_int("0o17"), Ok(15));
        assert_eq!(parse_int("1_000"), Ok(1000));
        assert_eq!(parse_int("-5"), Ok(-5));
        assert_eq!(
            parse_int("abc").unwrap_err(),
            r#"strconv.ParseInt: parsing "abc": invalid syntax"#
        );
        assert_eq!(
            parse_int("1__0").unwrap_err(),
            r#"strconv.ParseInt: parsing "1__0": invalid syntax"#
        );
        assert_eq!(
            parse_int("99999999999999999999").unwrap_err(),
            r#"strconv.ParseInt: parsing "99999999999999999999": value out of range"#
        );
        assert_eq!(
            parse_int("08").unwrap_err(),
            r#"strconv.ParseInt: parsing "08": invalid syntax"#
        );
        assert_eq!(
            parse_int("").unwrap_err(),
            r#"strconv.ParseInt: parsing "": invalid syntax"#
        );
    }

    #[test]
    fn levels_bools_floats() {
        assert_eq!(parse_level("4"), Ok(4));
        assert!(parse_level("-1").is_err());
        assert!(parse_level("0x1").is_err());
        assert_eq!(
            parse_level("2147483648").unwrap_err(),
            r#"strconv.ParseUint: parsing "2147483648": value out of range"#
        );
        assert_eq!(parse_bool("T"), Ok(true));
        assert_eq!(parse_bool("0"), Ok(false));
        assert_eq!(
            parse_bool("yes").unwrap_err(),
            r#"strconv.ParseBool: parsing "yes": invalid syntax"#
        );
        assert_eq!(parse_float32("40"), Ok(40.0));
        assert_eq!(parse_float32("1e2"), Ok(100.0));
        assert_eq!(parse_float32(".5"), Ok(0.5));
        assert_eq!(
            parse_float32("x").unwrap_err(),
            r#"strconv.ParseFloat: parsing "x": invalid syntax"#
        );
        assert_eq!(
            parse_float32("1e39").unwrap_err(),
            r#"strconv.ParseFloat: parsing "1e39": value out of range"#
        );
    }

    #[test]
    fn quantities() {
        assert_eq!(parse_quantity_is_zero("0"), Ok(true));
        assert_eq!(parse_quantity_is_zero("512"), Ok(false));
        assert_eq!(parse_quantity_is_zero("2Ki"), Ok(false));
        assert_eq!(parse_quantity_is_zero("1e3"), Ok(false));
        assert!(parse_quantity_is_zero("1Xi").is_err());
        assert!(parse_quantity_is_zero("abc").is_err());
    }

    /// Found by fuzzing (fuzz/corpus/go_values): the flag check used to have its own, looser
    /// grammar and disagreed with `resource.ParseQuantity` both ways.
    #[test]
    fn quantities_are_checked_by_the_quantity_parser() {
        // A bare sign is the number zero to the reference.
        assert_eq!(parse_quantity_is_zero("-"), Ok(true));
        assert_eq!(parse_quantity_is_zero("+"), Ok(true));
        // An exponent that does not fit 64 bits is refused, with the reference's message.
        assert_eq!(
            parse_quantity_is_zero("1e9999999999999999999").unwrap_err(),
            "unable to parse quantity's suffix"
        );
        assert_eq!(
            parse_quantity_is_zero("1..5").unwrap_err(),
            "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
        );
        // Rounded up to nano units, never to zero.
        assert_eq!(parse_quantity_is_zero("0.0000000001"), Ok(false));
        assert_eq!(parse_quantity_is_zero("0.000e5"), Ok(true));
    }
}
