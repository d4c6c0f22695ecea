//! Kubernetes `resource.Quantity`, exactly as `k8s.io/apimachinery` v0.35.3 computes it.
//!
//! The general estimator's numbers depend on details that no float or plain decimal type
//! reproduces: which of the two internal representations a parsed value lands in (a scaled
//! `i64` or an arbitrary-precision decimal), the format remembered from the suffix, the
//! format a subtraction keeps, and how `Value()`/`MilliValue()` round and overflow in each
//! representation. Everything here follows the reference bit for bit, including its quirks:
//!
//! - values are rounded up (away from zero) to nano units when parsed; BinarySI values are
//!   capped at `i64::MAX`, decimal ones are not;
//! - `value()`/`milli_value()` of the scaled-`i64` form return 0 when the result overflows,
//!   while the decimal form returns the low 64 bits (and, for scale-ups past 10^18, what an
//!   amd64 float-to-int conversion gives, i.e. `i64::MIN` as the factor);
//! - the decimal form rounds negative values towards +∞ (`-1.5` → `-1` or `0`), the `i64` form
//!   away from zero (`-1.5` → `-2`);
//! - [`Quantity::canonical`] is Go's `String()`: the parsed text when the reference keeps
//!   it, otherwise the canonical form (which silently drops a suffix it has no name for).
//!
//! No floating point is used anywhere.

use std::cmp::Ordering;
use std::fmt;

use num_bigint::Sign;

/// The three notations a quantity remembers and is printed in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Format {
    /// `12e6`.
    DecimalExponent,
    /// `12Mi` (powers of 1024).
    BinarySI,
    /// `12M` (powers of 1000), also plain numbers.
    DecimalSI,
}

impl Format {
    /// The reference's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::DecimalExponent => "DecimalExponent",
            Self::BinarySI => "BinarySI",
            Self::DecimalSI => "DecimalSI",
        }
    }
}

/// Why a string is not a quantity; texts are the reference's.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum QuantityError {
    #[error(
        "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
    )]
    FormatWrong,
    #[error("unable to parse numeric part of quantity")]
    Numeric,
    #[error("unable to parse quantity's suffix")]
    Suffix,
    /// The value would need more than [`MAX_DIGITS`] decimal digits; the reference would
    /// try to compute it anyway and exhaust memory. Only absurd exponents get here.
    #[error("quantity needs more than {MAX_DIGITS} decimal digits")]
    TooLarge,
}

/// Bound on the digits of an exact intermediate value (see [`QuantityError::TooLarge`]).
pub const MAX_DIGITS: i64 = 100_000;

/// Nano scale: parsed values are rounded up to multiples of 10^-9.
const NANO: i32 = -9;

#[derive(Clone, Debug)]
enum Amount {
    /// `value × 10^scale` (the reference's `int64Amount`).
    Int { value: i64, scale: i32 },
    /// `unscaled × 10^-scale` (the reference's `inf.Dec`, whose scale is upside down).
    Dec { unscaled: BigInt, scale: i32 },
}

/// An exact quantity with the representation and format the reference would hold.
#[derive(Clone, Debug)]
pub struct Quantity {
    amount: Amount,
    format: Format,
    /// The text Go's `String()` returns without recomputing (kept from parsing).
    text: Option<String>,
}

impl Quantity {
    /// `ParseQuantity`: the string exactly as given (no trimming).
    pub fn parse(s: &str) -> Result<Self, QuantityError> {
        parse(s)
    }

    /// How a quantity arrives in an object: JSON decoding trims surrounding whitespace first.
    pub fn from_k8s(
        q: &k8s_openapi::apimachinery::pkg::api::resource::Quantity,
    ) -> Result<Self, QuantityError> {
        parse(q.0.trim())
    }

    /// `NewQuantity(value, format)`.
    pub fn from_i64(value: i64, format: Format) -> Self {
        Self {
            amount: Amount::Int { value, scale: 0 },
            format,
            text: None,
        }
    }

    /// `NewMilliQuantity(value, format)`: `value / 1000`.
    pub fn from_milli(value: i64, format: Format) -> Self {
        Self {
            amount: Amount::Int { value, scale: -3 },
            format,
            text: None,
        }
    }

    /// The remembered format.
    pub fn format(&self) -> Format {
        self.format
    }

    /// Whether the value is zero.
    pub fn is_zero(&self) -> bool {
        self.sign() == 0
    }

    /// -1, 0 or 1.
    pub fn sign(&self) -> i32 {
        match &self.amount {
            Amount::Int { value, .. } => value.signum() as i32,
            Amount::Dec { unscaled, .. } => unscaled.signum(),
        }
    }

    /// `Value()`: rounded up to an integer (see the module notes for the decimal form).
    pub fn value(&self) -> i64 {
        self.scaled_value(0)
    }

    /// `MilliValue()`: `ceil(q × 1000)`, same caveats as [`Quantity::value`].
    pub fn milli_value(&self) -> i64 {
        self.scaled_value(-3)
    }

    /// `ScaledValue(scale)`: `ceil(q / 10^scale)` with the reference's overflow behaviour.
    pub fn scaled_value(&self, scale: i32) -> i64 {
        match &self.amount {
            Amount::Int { value, scale: s } => {
                if *s < scale {
                    negative_scale_i64(*value, scale.wrapping_sub(*s)).0
                } else {
                    positive_scale_i64(*value, s.wrapping_sub(scale)).0
                }
            }
            Amount::Dec { unscaled, scale: s } => {
                scaled_value_big(unscaled, i64::from(*s), -i64::from(scale))
            }
        }
    }

    /// `Cmp`: exact numeric comparison.
    pub fn cmp_value(&self, other: &Quantity) -> Ordering {
        let (a, sa) = self.as_dec();
        let (b, sb) = other.as_dec();
        cmp_dec(&a, sa, &b, sb)
    }

    /// `q.Sub(y)`: exact; keeps `self`'s format unless `self` is zero, in which case it takes
    /// `y`'s.
    pub fn sub(&self, y: &Quantity) -> Result<Quantity, QuantityError> {
        self.add_signed(y, true)
    }

    /// `q.Add(y)`: exact; same format rule as [`Quantity::sub`].
    pub fn add(&self, y: &Quantity) -> Result<Quantity, QuantityError> {
        self.add_signed(y, false)
    }

    fn add_signed(&self, y: &Quantity, negate: bool) -> Result<Quantity, QuantityError> {
        let mut out = self.clone();
        out.text = None;
        if self.is_zero() {
            out.format = y.format;
        }
        if let (
            Amount::Int {
                value: av,
                scale: asc,
            },
            Amount::Int {
                value: bv,
                scale: bsc,
            },
        ) = (&self.amount, &y.amount)
        {
            // The reference negates the i64 in place (wrapping for i64::MIN).
            let bv = if negate { bv.wrapping_neg() } else { *bv };
            if let Some((value, scale)) = int_add(*av, *asc, bv, *bsc) {
                out.amount = Amount::Int { value, scale };
                return Ok(out);
            }
        }
        let (a, sa) = self.as_dec();
        let (mut b, sb) = y.as_dec();
        if negate {
            b = b.neg();
        }
        let scale = sa.max(sb);
        let a = rescale_up(&a, sa, scale)?;
        let b = rescale_up(&b, sb, scale)?;
        out.amount = Amount::Dec {
            unscaled: a.add(&b),
            scale,
        };
        Ok(out)
    }

    /// Go's `String()`: what the reference prints and puts on the wire (protobuf, JSON).
    pub fn canonical(&self) -> String {
        match &self.text {
            Some(t) => t.clone(),
            None => self.canonicalize(),
        }
    }

    /// `CanonicalizeBytes`: the canonical form, ignoring any text kept from parsing.
    pub fn canonicalize(&self) -> String {
        if self.is_zero() {
            return "0".to_string();
        }
        let mut format = self.format;
        let mut rounded = None;
        if format == Format::BinarySI {
            let lo = self.cmp_value(&Quantity::from_i64(-1024, Format::DecimalSI));
            let hi = self.cmp_value(&Quantity::from_i64(1024, Format::DecimalSI));
            if lo == Ordering::Greater && hi == Ordering::Less {
                format = Format::DecimalSI;
            } else {
                let (r, exact) = self.as_scale_zero();
                if exact {
                    rounded = Some(r);
                } else {
                    format = Format::DecimalSI;
                }
            }
        }
        match (format, rounded) {
            (Format::BinarySI, Some(r)) => {
                let (number, exp) = r.canonical_base1024();
                let suffix = match exp {
                    1 => "Ki",
                    2 => "Mi",
                    3 => "Gi",
                    4 => "Ti",
                    5 => "Pi",
                    6 => "Ei",
                    _ => "",
                };
                number + suffix
            }
            _ => {
                let (number, exp) = self.canonical_base10();
                let suffix = if format == Format::DecimalExponent {
                    if exp == 0 {
                        String::new()
                    } else {
                        format!("e{exp}")
                    }
                } else {
                    match exp {
                        -9 => "n",
                        -6 => "u",
                        -3 => "m",
                        3 => "k",
                        6 => "M",
                        9 => "G",
                        12 => "T",
                        15 => "P",
                        18 => "E",
                        _ => "",
                    }
                    .to_string()
                };
                number + &suffix
            }
        }
    }

    /// The value as `(unscaled, inf scale)`.
    fn as_dec(&self) -> (BigInt, i32) {
        match &self.amount {
            Amount::Int { value, scale } => (BigInt::from_i64(*value), scale.wrapping_neg()),
            Amount::Dec { unscaled, scale } => (unscaled.clone(), *scale),
        }
    }

    /// `AsScale(0)`: rounded up (away from zero) to an integer, and whether that was exact.
    fn as_scale_zero(&self) -> (Quantity, bool) {
        match &self.amount {
            Amount::Int { value, scale } if *scale < 0 => {
                let (v, exact) = negative_scale_i64(*value, scale.wrapping_neg());
                let q = Quantity {
                    amount: Amount::Int { value: v, scale: 0 },
                    ..self.clone()
                };
                (q, exact)
            }
            Amount::Int { .. } => (self.clone(), true),
            Amount::Dec { unscaled, scale } => {
                let r = round_up_to_scale(unscaled, *scale, 0);
                let exact = cmp_dec(&r, 0, unscaled, *scale) == Ordering::Equal;
                let q = Quantity {
                    amount: Amount::Dec {
                        unscaled: r,
                        scale: 0,
                    },
                    ..self.clone()
                };
                (q, exact)
            }
        }
    }

    /// `AsCanonicalBytes`: mantissa digits and a base-10 exponent that is a multiple of 3.
    fn canonical_base10(&self) -> (String, i32) {
        if let Amount::Int { value, scale } = &self.amount {
            let (mut amount, times) = remove_i64_factors(*value, 10);
            let mut exp = scale.wrapping_add(times);
            let fits = match exp % 3 {
                1 | -2 => checked_scale(amount, 10).map(|a| {
                    amount = a;
                    exp -= 1;
                }),
                2 | -1 => checked_scale(amount, 100).map(|a| {
                    amount = a;
                    exp -= 2;
                }),
                _ => Some(()),
            };
            if fits.is_some() {
                return (amount.to_string(), exp);
            }
        }
        let (unscaled, scale) = self.as_dec();
        let (mut amount, times) = unscaled.remove_factors(10);
        let mut exp = scale.wrapping_neg().wrapping_add(times);
        while exp % 3 != 0 {
            amount = amount.mul_small(10);
            exp -= 1;
        }
        (amount.to_string(), exp)
    }

    /// `AsCanonicalBase1024Bytes` of an already rounded value.
    fn canonical_base1024(&self) -> (String, i32) {
        if let Amount::Int { value, scale } = &self.amount {
            let as_int = if *scale < 0 {
                Some(negative_scale_i64(*value, scale.wrapping_neg()).0)
            } else {
                match positive_scale_i64(*value, *scale) {
                    (v, true) => Some(v),
                    _ => None,
                }
            };
            if let Some(v) = as_int {
                let (amount, times) = remove_i64_factors(v, 1024);
                return (amount.to_string(), times);
            }
        }
        let (unscaled, scale) = self.as_dec();
        let r = round_up_to_scale(&unscaled, scale, 0);
        let (amount, times) = r.remove_factors(1024);
        (amount.to_string(), times)
    }
}

impl PartialEq for Quantity {
    /// Go's `Equal`: numeric equality, format ignored.
    fn eq(&self, other: &Self) -> bool {
        self.cmp_value(other) == Ordering::Equal
    }
}

impl fmt::Display for Quantity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.canonical())
    }
}

impl std::str::FromStr for Quantity {
    type Err = QuantityError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        parse(s)
    }
}

/// The pieces of a quantity string, as the reference's scanner splits it.
struct Parts<'a> {
    positive: bool,
    value: &'a str,
    num: &'a str,
    denom: &'a str,
    suffix: &'a str,
}

fn split(s: &str) -> Result<Parts<'_>, QuantityError> {
    let b = s.as_bytes();
    let end = b.len();
    let mut p = Parts {
        positive: true,
        value: "",
        num: "",
        denom: "",
        suffix: "",
    };
    let mut pos = 0;
    if end > 0 {
        match b[0] {
            b'-' => {
                p.positive = false;
                pos += 1;
            }
            b'+' => pos += 1,
            _ => {}
        }
    }
    // Leading zeros are skipped; nothing but zeros means the number 0.
    while pos < end && b[pos] == b'0' {
        pos += 1;
    }
    if pos >= end {
        p.num = "0";
        p.value = "0";
        return Ok(p);
    }
    let start = pos;
    while pos < end && b[pos].is_ascii_digit() {
        pos += 1;
    }
    if pos >= end {
        p.num = &s[start..];
        p.value = s;
        return Ok(p);
    }
    p.num = if pos == start { "0" } else { &s[start..pos] };
    if b[pos] == b'.' {
        pos += 1;
        let dstart = pos;
        while pos < end && b[pos].is_ascii_digit() {
            pos += 1;
        }
        p.denom = &s[dstart..pos];
        if pos >= end {
            p.value = s;
            return Ok(p);
        }
    }
    p.value = &s[..pos];
    let suffix_start = pos;
    while pos < end && b"eEinumkKMGTP".contains(&b[pos]) {
        pos += 1;
    }
    if pos >= end {
        p.suffix = &s[suffix_start..];
        return Ok(p);
    }
    if b[pos] == b'-' || b[pos] == b'+' {
        pos += 1;
    }
    while pos < end && b[pos].is_ascii_digit() {
        pos += 1;
    }
    if pos >= end {
        p.suffix = &s[suffix_start..];
        return Ok(p);
    }
    Err(QuantityError::FormatWrong)
}

/// `(base, exponent, format)` of a suffix.
fn interpret(suffix: &str) -> Option<(u32, i32, Format)> {
    let dec = |e| Some((10, e, Format::DecimalSI));
    let bin = |e| Some((2, e, Format::BinarySI));
    match suffix {
        "" => dec(0),
        "n" => dec(-9),
        "u" => dec(-6),
        "m" => dec(-3),
        "k" => dec(3),
        "M" => dec(6),
        "G" => dec(9),
        "T" => dec(12),
        "P" => dec(15),
        "E" => dec(18),
        "Ki" => bin(10),
        "Mi" => bin(20),
        "Gi" => bin(30),
        "Ti" => bin(40),
        "Pi" => bin(50),
        "Ei" => bin(60),
        _ => {
            let rest = suffix.strip_prefix(['e', 'E'])?;
            if rest.is_empty() {
                return None;
            }
            // Parsed as 64 bits, then truncated to 32 like the reference.
            let parsed: i64 = rest.parse().ok()?;
            Some((10, parsed as i32, Format::DecimalExponent))
        }
    }
}

fn parse(s: &str) -> Result<Quantity, QuantityError> {
    if s.is_empty() {
        return Err(QuantityError::FormatWrong);
    }
    if s == "0" {
        return Ok(Quantity {
            amount: Amount::Int { value: 0, scale: 0 },
            format: Format::DecimalSI,
            text: Some(s.to_string()),
        });
    }
    let p = split(s)?;
    let (base, exponent, format) = interpret(p.suffix).ok_or(QuantityError::Suffix)?;
    if let Some(q) = parse_scaled_i64(s, &p, exponent, format)? {
        return Ok(q);
    }
    parse_exact(&p, base, exponent, format)
}

/// Fast path: the value as a scaled `i64`, if it fits one at a scale of at least nano.
fn parse_scaled_i64(
    s: &str,
    p: &Parts<'_>,
    exponent: i32,
    format: Format,
) -> Result<Option<Quantity>, QuantityError> {
    let digits = (p.num.len() + p.denom.len()) as i64;
    let (precision, scale, mantissa) = match format {
        Format::DecimalExponent | Format::DecimalSI => (18 - digits, exponent, 1i64),
        Format::BinarySI if exponent >= 0 && p.denom.is_empty() => (
            14 - p.num.len() as i64 - i64::from(exponent) * 3 / 10,
            0,
            1i64 << exponent,
        ),
        Format::BinarySI => (-1, 0, 1),
    };
    if precision < 0 {
        return Ok(None);
    }
    let scale = scale.wrapping_sub(p.denom.len() as i32);
    if scale < NANO {
        return Ok(None);
    }
    let shifted = format!("{}{}", p.num, p.denom);
    let value: i64 = shifted.parse().map_err(|_| QuantityError::Numeric)?;
    let Some(mut result) = value.checked_mul(mantissa) else {
        return Ok(None);
    };
    if !p.positive {
        result = -result;
    }
    let keeps_text = match format {
        Format::BinarySI => exponent % 10 == 0 && (value & 0x07) != 0,
        _ => scale % 3 == 0 && !shifted.ends_with("000") && !shifted.starts_with('0'),
    };
    Ok(Some(Quantity {
        amount: Amount::Int {
            value: result,
            scale,
        },
        format,
        text: keeps_text.then(|| s.to_string()),
    }))
}

/// Slow path: arbitrary precision, rounded up to nano units; BinarySI values are capped at
/// `i64::MAX`, and those under 1 become DecimalSI.
fn parse_exact(
    p: &Parts<'_>,
    base: u32,
    exponent: i32,
    mut format: Format,
) -> Result<Quantity, QuantityError> {
    let scanned = scan_digits(p.value).ok_or(QuantityError::Numeric)?;
    let negative = scanned.negative && !scanned.significant().is_empty();
    let (mut amount, mut dscale) = nano_amount(&scanned, base, exponent)?;
    if format == Format::BinarySI
        && cmp_dec(&amount, dscale, &BigInt::from_i64(i64::MAX), 0) == Ordering::Greater
    {
        amount = BigInt::from_i64(i64::MAX);
        dscale = 0;
    }
    if format == Format::BinarySI
        && !amount.is_zero()
        && cmp_dec(&amount, dscale, &BigInt::from_i64(1), 0) == Ordering::Less
    {
        format = Format::DecimalSI;
    }
    if negative {
        amount = amount.neg();
    }
    Ok(Quantity {
        amount: Amount::Dec {
            unscaled: amount,
            scale: dscale,
        },
        format,
        text: None,
    })
}

/// The magnitude of `scanned × base^exponent` as `(unscaled, scale)`, rounded up to nano
/// units (zero keeps the scale it was written with). The digit limit is judged on the text,
/// and the digits finer than the rounding can tell apart are folded into one, before any big
/// number is built: a numeric part of any length costs one scan.
fn nano_amount(
    scanned: &Scanned,
    base: u32,
    exponent: i32,
) -> Result<(BigInt, i32), QuantityError> {
    let mut dscale = scanned.fraction;
    if base == 10 {
        dscale = dscale.wrapping_sub(exponent);
    }
    let significant = scanned.significant();
    if significant.is_empty() {
        return Ok((BigInt::zero(), dscale));
    }
    // The digits the value has at nano scale: its significant digits and the zeros the
    // exponent appends. Counting the exponent alone let a long mantissa through whose
    // canonical form (the same digits, their zeros folded into the exponent) was then
    // refused: a quantity printed by us must parse again.
    if significant.len() as i64 + i64::from(-NANO) - i64::from(dscale) > MAX_DIGITS {
        return Err(QuantityError::TooLarge);
    }
    let (digits, scale) = fold_fine_digits(significant, dscale, base, exponent);
    let mut amount = BigInt::from_decimal(&digits);
    if base != 10 {
        amount = amount.shl(exponent as u32);
    }
    Ok((round_up_to_scale(&amount, scale, -NANO), -NANO))
}

/// The numeric part as `inf.Dec.SetString` reads it (optional leading sign, digits, at most
/// one point), without building the number.
struct Scanned {
    negative: bool,
    /// Every digit, integer part then fraction, the point left out.
    digits: Vec<u8>,
    /// Digits after the point.
    fraction: i32,
}

impl Scanned {
    /// The digits from the first non-zero one (empty for zero).
    fn significant(&self) -> &[u8] {
        let first = self
            .digits
            .iter()
            .position(|&d| d != b'0')
            .unwrap_or(self.digits.len());
        &self.digits[first..]
    }
}

fn scan_digits(v: &str) -> Option<Scanned> {
    let (negative, body) = match v.as_bytes().first() {
        Some(b'-') => (true, &v[1..]),
        Some(b'+') => (false, &v[1..]),
        _ => (false, v),
    };
    let mut digits = Vec::with_capacity(body.len());
    let mut point = None;
    for (i, c) in body.bytes().enumerate() {
        match c {
            b'0'..=b'9' => digits.push(c),
            b'.' if point.is_none() => point = Some(i),
            _ => return None,
        }
    }
    if digits.is_empty() {
        return None;
    }
    Some(Scanned {
        negative,
        digits,
        fraction: point.map_or(0, |pt| (body.len() - pt - 1) as i32),
    })
}

/// `digits × 10^-scale` (× 2^exponent when `base` is 2) rounds up to nano units exactly as
/// the returned, shorter digits and scale do. Rounding up depends only on the digits down to
/// the place where the value's multiples of 2^-exponent end (9 + exponent + 1 places after
/// the point; 10 in base 10) and on whether any finer digit is non-zero: those finer digits
/// become one `1` one place further.
fn fold_fine_digits(digits: &[u8], scale: i32, base: u32, exponent: i32) -> (String, i32) {
    let keep = i64::from(-NANO) + 1 + if base == 10 { 0 } else { i64::from(exponent) };
    let scale = i64::from(scale);
    let text = |d: &[u8]| String::from_utf8_lossy(d).into_owned();
    if scale <= keep {
        return (text(digits), scale as i32);
    }
    let drop = usize::try_from(scale - keep).unwrap_or(usize::MAX);
    let cut = digits.len().saturating_sub(drop);
    let (kept, fine) = digits.split_at(cut);
    let mut folded = text(kept);
    if fine.iter().any(|&d| d != b'0') {
        folded.push('1');
        (folded, keep as i32 + 1)
    } else {
        (folded, keep as i32)
    }
}

/// `int64Amount.Add`; `None` where the reference falls back to the decimal form.
fn int_add(av: i64, asc: i32, bv: i64, bsc: i32) -> Option<(i64, i32)> {
    if bv == 0 {
        return Some((av, asc));
    }
    if av == 0 {
        return Some((bv, bsc));
    }
    match asc.cmp(&bsc) {
        Ordering::Equal => Some((av.checked_add(bv)?, asc)),
        Ordering::Greater => {
            let (c, ok) = positive_scale_i64(av, asc.wrapping_sub(bsc));
            if !ok {
                return None;
            }
            Some((c.checked_add(bv)?, bsc))
        }
        Ordering::Less => {
            let (c, ok) = positive_scale_i64(bv, bsc.wrapping_sub(asc));
            if !ok {
                return None;
            }
            Some((av.checked_add(c)?, asc))
        }
    }
}

/// `positiveScaleInt64`: `base × 10^scale` and whether it fits. On overflow the reference
/// returns the wrapped product for the scales it special-cases (1, 2, 3, 6, 9) and 0 for the
/// others; a negative scale (reachable only through i32 wrap-around) returns `base`.
fn positive_scale_i64(base: i64, scale: i32) -> (i64, bool) {
    fn mul(a: i64, b: i64) -> (i64, bool) {
        if a == 0 || a == 1 {
            return (a.wrapping_mul(b), true);
        }
        if a == i64::MIN {
            return (0, false);
        }
        let c = a.wrapping_mul(b);
        (c, c / b == a)
    }
    match scale {
        s if s <= 0 => (base, true),
        1 => mul(base, 10),
        2 => mul(base, 100),
        3 => mul(base, 1000),
        6 => mul(base, 1_000_000),
        9 => mul(base, 1_000_000_000),
        // Zero stays zero however often it is multiplied: the reference loops `scale` times
        // (up to 2^31 for a parsed `0e2147483647`), with this very result.
        _ if base == 0 => (0, true),
        _ => {
            let mut v = base;
            for _ in 0..scale {
                let (c, ok) = mul(v, 10);
                if !ok {
                    return (0, false);
                }
                v = c;
            }
            (v, true)
        }
    }
}

/// `negativeScaleInt64`: `base / 10^scale` rounded away from zero, and whether exact.
fn negative_scale_i64(base: i64, scale: i32) -> (i64, bool) {
    if scale <= 0 {
        return (base, true);
    }
    let (q, r) = if scale > 18 {
        (0, base)
    } else {
        let d = 10i64.pow(scale as u32);
        (base / d, base % d)
    };
    if r == 0 {
        (q, true)
    } else if base > 0 {
        (q + 1, false)
    } else {
        (q - 1, false)
    }
}

/// `int64MultiplyScale(a, k)` for the constants 10 and 100.
fn checked_scale(a: i64, k: i64) -> Option<i64> {
    if a == i64::MIN {
        return None;
    }
    a.checked_mul(k)
}

/// `removeInt64Factors`: strip factors of `base` while the magnitude is at least `base`.
fn remove_i64_factors(value: i64, base: i64) -> (i64, i32) {
    let negative = value < 0;
    let mut r = value.wrapping_abs();
    let mut times = 0;
    while r >= base && r % base == 0 {
        r /= base;
        times += 1;
    }
    (if negative { r.wrapping_neg() } else { r }, times)
}

/// `scaledValue` of the decimal form: `unscaled × 10^-scale` expressed at `new_scale`.
fn scaled_value_big(unscaled: &BigInt, scale: i64, new_scale: i64) -> i64 {
    let dif = scale - new_scale;
    if dif == 0 {
        return unscaled.low_i64();
    }
    if dif < 0 {
        // int64(math.Pow10(n)): exact up to 10^18, then out of range; amd64 yields i64::MIN.
        let n = -dif;
        let factor = if n <= 18 {
            10i64.pow(n as u32)
        } else {
            i64::MIN
        };
        return unscaled.low_i64().wrapping_mul(factor);
    }
    if unscaled.cmp(&BigInt::from_i64(i64::MAX)) == Ordering::Less && dif < 19 {
        // Truncating division with "+1 when inexact", also for negative values.
        let v = unscaled.low_i64();
        let d = 10i64.pow(dif as u32);
        let (q, r) = (v.wrapping_div(d), v.wrapping_rem(d));
        return if r != 0 { q.wrapping_add(1) } else { q };
    }
    // Euclidean division (remainder >= 0), then "+1 when inexact": a ceiling.
    let (q, exact) = unscaled.div_pow10_floor(dif.min(MAX_DIGITS + 40) as u32);
    let v = q.low_i64();
    if exact { v } else { v.wrapping_add(1) }
}

/// `unscaled × 10^-from` rescaled to `to >= from` exactly.
fn rescale_up(v: &BigInt, from: i32, to: i32) -> Result<BigInt, QuantityError> {
    let n = i64::from(to) - i64::from(from);
    if n > MAX_DIGITS {
        return Err(QuantityError::TooLarge);
    }
    Ok(v.mul_pow10(n as u32))
}

/// `inf.Dec.Round(x, to, RoundUp)`: away from zero.
fn round_up_to_scale(v: &BigInt, from: i32, to: i32) -> BigInt {
    let n = i64::from(to) - i64::from(from);
    if n >= 0 {
        return v.mul_pow10(n.min(MAX_DIGITS) as u32);
    }
    let (q, exact) = v.abs().div_pow10_floor((-n).min(MAX_DIGITS + 40) as u32);
    let q = if exact {
        q
    } else {
        q.add(&BigInt::from_i64(1))
    };
    if v.signum() < 0 { q.neg() } else { q }
}

/// Exact comparison of `a × 10^-sa` with `b × 10^-sb`.
fn cmp_dec(a: &BigInt, sa: i32, b: &BigInt, sb: i32) -> Ordering {
    let (sa_sign, sb_sign) = (a.signum(), b.signum());
    if sa_sign != sb_sign || sa_sign == 0 {
        return sa_sign.cmp(&sb_sign);
    }
    let n = i64::from(sa) - i64::from(sb);
    if n.abs() > MAX_DIGITS {
        // Magnitudes differ by more than MAX_DIGITS orders unless the mantissas are absurd;
        // compare digit counts shifted by the scales.
        let ea = a.digit_count() as i64 - i64::from(sa);
        let eb = b.digit_count() as i64 - i64::from(sb);
        let mag = ea.cmp(&eb);
        return if sa_sign > 0 { mag } else { mag.reverse() };
    }
    if n >= 0 {
        a.cmp(&b.mul_pow10(n as u32))
    } else {
        a.mul_pow10((-n) as u32).cmp(b)
    }
}

/// A signed big integer (the reference's `big.Int`), with just the operations quantities need.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct BigInt(num_bigint::BigInt);

/// `10^n`.
fn pow10(n: u32) -> num_bigint::BigInt {
    num_bigint::BigInt::from(10u32).pow(n)
}

impl BigInt {
    fn zero() -> Self {
        Self(num_bigint::BigInt::ZERO)
    }

    fn from_i64(v: i64) -> Self {
        Self(v.into())
    }

    fn from_decimal(digits: &str) -> Self {
        Self(num_bigint::BigInt::parse_bytes(digits.as_bytes(), 10).unwrap_or_default())
    }

    fn is_zero(&self) -> bool {
        self.0.sign() == Sign::NoSign
    }

    fn signum(&self) -> i32 {
        match self.0.sign() {
            Sign::Minus => -1,
            Sign::NoSign => 0,
            Sign::Plus => 1,
        }
    }

    fn abs(&self) -> Self {
        Self(self.0.magnitude().clone().into())
    }

    fn neg(&self) -> Self {
        Self(-&self.0)
    }

    /// Go's `big.Int.Int64()`: the low 64 bits of the magnitude, negated for negatives.
    fn low_i64(&self) -> i64 {
        let v = self.0.magnitude().iter_u64_digits().next().unwrap_or(0) as i64;
        if self.0.sign() == Sign::Minus {
            v.wrapping_neg()
        } else {
            v
        }
    }

    fn add(&self, other: &Self) -> Self {
        Self(&self.0 + &other.0)
    }

    fn mul_small(&self, k: u32) -> Self {
        Self(&self.0 * k)
    }

    fn mul_pow10(&self, n: u32) -> Self {
        if self.is_zero() {
            return Self::zero();
        }
        Self(&self.0 * pow10(n))
    }

    fn shl(&self, bits: u32) -> Self {
        Self(&self.0 << bits)
    }

    /// Floor division by `10^n` (Euclidean for negatives) and whether it was exact.
    fn div_pow10_floor(&self, n: u32) -> (Self, bool) {
        // Below 2^(3n) <= 10^n the quotient is 0 or -1: no need to build 10^n for the
        // scales of 100,000 digits that reach here.
        if self.0.bits() <= u64::from(n) * 3 {
            return match self.signum() {
                0 => (Self::zero(), true),
                1 => (Self::zero(), false),
                _ => (Self::from_i64(-1), false),
            };
        }
        let d = pow10(n);
        let (q, r) = (&self.0 / &d, &self.0 % &d);
        match r.sign() {
            Sign::NoSign => (Self(q), true),
            Sign::Plus => (Self(q), false),
            Sign::Minus => (Self(q - 1), false),
        }
    }

    /// `removeBigIntFactors`: strip factors of `base` (zero stays zero).
    ///
    /// The reference divides by `base` once per factor, each division a pass over the whole
    /// number: for a value of 100,000 digits with as many factors that is seconds of work.
    /// The result is the same when the largest power of `base` that fits 64 bits is stripped
    /// first, as long as it divides, then single factors.
    fn remove_factors(&self, base: u32) -> (Self, i32) {
        let mut v = self.0.clone();
        let mut times = 0i32;
        if self.is_zero() || base < 2 {
            return (Self(v), 0);
        }
        let (mut chunk, mut per) = (u64::from(base), 1);
        while let Some(c) = chunk.checked_mul(u64::from(base)) {
            (chunk, per) = (c, per + 1);
        }
        for (d, n) in [(chunk, per), (u64::from(base), 1)] {
            while (&v % d).sign() == Sign::NoSign {
                v /= d;
                times += n;
            }
        }
        (Self(v), times)
    }

    fn digit_count(&self) -> usize {
        self.0.magnitude().to_string().len()
    }
}

impl fmt::Display for BigInt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(s: &str) -> Quantity {
        Quantity::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    fn describe(q: &Quantity) -> String {
        format!(
            "{}\t{}\t{}\t{}",
            q.canonical(),
            q.format().as_str(),
            q.value(),
            q.milli_value()
        )
    }

    /// Every line of `testdata/quantity_golden.tsv` was produced by apimachinery v0.35.3
    /// (ParseQuantity, Sub, Add, String, Format, Value, MilliValue) on hand-picked and random
    /// inputs; the Rust port must agree on all of them.
    #[test]
    fn agrees_with_apimachinery_golden_vectors() {
        let golden = include_str!("../testdata/quantity_golden.tsv");
        let mut checked = 0;
        for line in golden.lines() {
            let f: Vec<&str> = line.split('\t').collect();
            match f[0] {
                "P" => {
                    let got = match Quantity::parse(f[1]) {
                        Ok(q) => describe(&q),
                        Err(_) => "ERR".to_string(),
                    };
                    assert_eq!(got, f[2..].join("\t"), "parse {:?}", f[1]);
                }
                "S" | "A" => {
                    let (a, b) = (Quantity::parse(f[1]), Quantity::parse(f[2]));
                    let got = match (a, b) {
                        (Ok(a), Ok(b)) => {
                            let r = if f[0] == "S" { a.sub(&b) } else { a.add(&b) };
                            describe(&r.unwrap())
                        }
                        _ => "ERR".to_string(),
                    };
                    assert_eq!(got, f[3..].join("\t"), "{} {:?} {:?}", f[0], f[1], f[2]);
                }
                other => panic!("unknown golden line kind {other}"),
            }
            checked += 1;
        }
        assert!(checked > 2000, "golden file too small: {checked}");
    }

    #[test]
    fn formats_follow_the_suffix() {
        assert_eq!(q("16G").format(), Format::DecimalSI);
        assert_eq!(q("1Gi").format(), Format::BinarySI);
        assert_eq!(q("12e6").format(), Format::DecimalExponent);
        assert_eq!(q("100m").format(), Format::DecimalSI);
        // A BinarySI value below one becomes DecimalSI.
        assert_eq!(q("0.0001Ki").format(), Format::DecimalSI);
    }

    #[test]
    fn value_rounds_up_and_milli_value_scales() {
        assert_eq!(q("100m").value(), 1);
        assert_eq!(q("100m").milli_value(), 100);
        assert_eq!(q("1.5").value(), 2);
        assert_eq!(q("-1.5").value(), -2);
        assert_eq!(q("1Gi").value(), 1 << 30);
        assert_eq!(q("0.1m").milli_value(), 1);
        // 10E overflows the i64 form: the reference returns 0.
        assert_eq!(q("10E").value(), 0);
    }

    #[test]
    fn subtraction_keeps_left_format_unless_left_is_zero() {
        let r = q("16G").sub(&q("1Gi")).unwrap();
        assert_eq!(r.format(), Format::DecimalSI);
        assert_eq!(r.value(), 16_000_000_000 - (1 << 30));
        let r = q("0").sub(&q("1Gi")).unwrap();
        assert_eq!(r.format(), Format::BinarySI);
        let r = q("8").sub(&q("2")).unwrap().sub(&q("500m")).unwrap();
        assert_eq!(r.milli_value(), 5500);
        assert_eq!(r.canonical(), "5500m");
    }

    #[test]
    fn canonical_form() {
        assert_eq!(q("1.5").canonical(), "1500m");
        assert_eq!(q("1.5Gi").canonical(), "1536Mi");
        assert_eq!(q("1000m").canonical(), "1");
        assert_eq!(q("+1").canonical(), "+1"); // the parsed text is kept, as upstream
        assert_eq!(q("+1").canonicalize(), "1");
        assert_eq!(q("1024").canonical(), "1024");
        assert_eq!(
            Quantity::from_i64(2048, Format::BinarySI).canonical(),
            "2Ki"
        );
        assert_eq!(
            Quantity::from_milli(1500, Format::DecimalSI).canonical(),
            "1500m"
        );
    }

    #[test]
    fn errors() {
        assert_eq!(Quantity::parse(""), Err(QuantityError::FormatWrong));
        assert_eq!(Quantity::parse("1.5.5"), Err(QuantityError::FormatWrong));
        assert_eq!(Quantity::parse("1a"), Err(QuantityError::FormatWrong));
        assert_eq!(Quantity::parse("1ii"), Err(QuantityError::Suffix));
        assert_eq!(Quantity::parse(".e-20"), Err(QuantityError::Numeric));
        assert_eq!(
            Quantity::parse("1e-2147483648"),
            Err(QuantityError::TooLarge)
        );
        let k = k8s_openapi::apimachinery::pkg::api::resource::Quantity(" 2Gi ".into());
        assert_eq!(Quantity::from_k8s(&k).unwrap().value(), 2 << 30);
    }

    #[test]
    fn comparison_is_exact() {
        assert_eq!(q("1Ki").cmp_value(&q("1024")), Ordering::Equal);
        assert_eq!(q("1k").cmp_value(&q("1Ki")), Ordering::Less);
        assert_eq!(q("-1n").cmp_value(&q("0")), Ordering::Less);
        assert_eq!(
            q("123456789012345678901234567890").cmp_value(&q("1e29")),
            Ordering::Greater
        );
        assert!(q("1.0") == q("1000m"));
    }

    /// Found by fuzzing (fuzz/corpus/quantity/found-long-mantissa): 122 digits at `e99899`
    /// passed the digit limit, which counted the exponent only, and printed as
    /// `9999999999999999990e100002`, which did not parse. The limit counts the digits too,
    /// so a value and its canonical form get the same verdict.
    #[test]
    fn the_digit_limit_counts_the_mantissa() {
        let long = format!("999999999999999999{}e99899", "0".repeat(104));
        assert_eq!(Quantity::parse(&long), Err(QuantityError::TooLarge));
        assert_eq!(
            Quantity::parse("9999999999999999990e100002"),
            Err(QuantityError::TooLarge)
        );
        // Just inside the limit, the value prints and parses back to itself.
        let inside = Quantity::parse("99e99889").expect("within the limit");
        let again = Quantity::parse(&inside.to_string()).expect("its canonical form parses");
        assert_eq!(again.cmp_value(&inside), std::cmp::Ordering::Equal);
    }

    /// Found by fuzzing (fuzz/corpus/quantity/found-fast-path-scale): 18 digits at `e99000070`
    /// fit the reference's i64 fast path, which takes any scale (the golden vectors have
    /// `1e2147483647`), so they parse; the canonical form `1000000000000000090e99000069` has
    /// 19 digits, goes to the slow path, and is refused by the digit limit there (the
    /// reference would try to expand it to nano units and exhaust memory). A printed value
    /// fails to parse again only from the digit limit, and only beyond it.
    #[test]
    fn the_fast_path_takes_any_scale() {
        let big = q("100000000000000009e99000070");
        assert_eq!(big.canonicalize(), "1000000000000000090e99000069");
        assert_eq!(
            Quantity::parse(&big.canonicalize()),
            Err(QuantityError::TooLarge)
        );
        assert_eq!(big.cmp_value(&q("1e99991")), Ordering::Greater);
        // Inside the limit the printed form parses back to the same value.
        let inside = q("100000000000000009e99970");
        let again = q(&inside.canonicalize());
        assert!(again == inside);
    }

    /// The slow path as it was before the digits were folded: every digit made into the big
    /// number, then rounded. Only for comparing with [`parse`].
    fn unfolded(s: &str) -> Option<(BigInt, i32)> {
        let p = split(s).ok()?;
        let (base, exponent, _) = interpret(p.suffix)?;
        let scanned = scan_digits(p.value)?;
        let mut dscale = scanned.fraction;
        let digits = String::from_utf8(scanned.digits.clone()).unwrap();
        let mut amount = BigInt::from_decimal(&digits);
        if base == 10 {
            dscale = dscale.wrapping_sub(exponent);
        } else {
            amount = amount.shl(exponent as u32);
        }
        if amount.is_zero() {
            return Some((amount, dscale));
        }
        let mut amount = round_up_to_scale(&amount, dscale, -NANO);
        let mut scale = -NANO;
        // BinarySI values are capped at i64::MAX, in magnitude.
        if base == 2 && cmp_dec(&amount, scale, &BigInt::from_i64(i64::MAX), 0) == Ordering::Greater
        {
            (amount, scale) = (BigInt::from_i64(i64::MAX), 0);
        }
        Some((
            if scanned.negative {
                amount.neg()
            } else {
                amount
            },
            scale,
        ))
    }

    /// Folding the digits finer than nano units changes no value: long fractions with every
    /// suffix, compared with the unfolded computation (the golden vectors cover the rest).
    #[test]
    fn folded_digits_round_as_all_of_them() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = move |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        let suffixes = [
            "", "n", "u", "m", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei",
            "e-3", "e3", "e-12", "e20",
        ];
        for round in 0..3000 {
            let int_len = next(4) as usize;
            let frac_len = 15 + next(90) as usize;
            let mut text = String::new();
            if round % 5 == 0 {
                text.push('-');
            }
            for _ in 0..int_len {
                text.push(char::from(b'0' + next(10) as u8));
            }
            text.push('.');
            for i in 0..frac_len {
                // Runs of zeros and nines put values next to the rounding boundaries.
                let d = match round % 3 {
                    0 => next(10) as u8,
                    1 if i < frac_len - 1 => 0,
                    2 if i < frac_len - 1 => 9,
                    _ => next(10) as u8,
                };
                text.push(char::from(b'0' + d));
            }
            text.push_str(suffixes[next(suffixes.len() as u64) as usize]);
            let parsed = Quantity::parse(&text).unwrap_or_else(|e| panic!("{text}: {e}"));
            let (unscaled, scale) = unfolded(&text).expect("parses");
            let (got, got_scale) = parsed.as_dec();
            assert_eq!(
                cmp_dec(&got, got_scale, &unscaled, scale),
                Ordering::Equal,
                "{text}: {} against the unfolded {:?}e-{scale}",
                parsed.canonical(),
                unscaled
            );
        }
    }

    /// The digit limit comes before any big number: a megabyte of digits is refused, or
    /// folded, after one scan (building the number was quadratic: minutes for this size).
    #[test]
    fn a_megabyte_of_digits_costs_one_scan() {
        let started = std::time::Instant::now();
        let digits = "7".repeat(1 << 20);
        assert_eq!(Quantity::parse(&digits), Err(QuantityError::TooLarge));
        assert_eq!(
            Quantity::parse(&format!("{digits}.5Ki")),
            Err(QuantityError::TooLarge)
        );
        // A long fraction is within the limit: it rounds up to one nano unit past 0.777777777.
        let tiny = q(&format!("0.{digits}"));
        assert_eq!(tiny.canonical(), "777777778n");
        assert_eq!(q(&format!("-0.{digits}")).canonical(), "-777777778n");
        // Leading zeros are not digits of the value.
        let zeros = "0".repeat(1 << 20);
        assert_eq!(q(&format!("{zeros}1.5")).canonical(), "1500m");
        assert_eq!(q(&format!("0.{zeros}")).canonical(), "0");
        assert!(
            started.elapsed() < std::time::Duration::from_secs(10),
            "{:?}",
            started.elapsed()
        );
    }

    /// Found by fuzzing (fuzz/corpus/quantity/found-*): zero at a huge scale made `Value()`
    /// multiply zero by ten `scale` times, 2^31 steps for `0e2147483647`.
    #[test]
    fn zero_at_a_huge_scale() {
        let zero = q("0e0361341528621367");
        assert!(zero.is_zero());
        assert_eq!((zero.value(), zero.milli_value()), (0, 0));
        assert_eq!(zero.scaled_value(-9), 0);
        assert_eq!(zero.canonicalize(), "0");
        assert_eq!(positive_scale_i64(0, i32::MAX), (0, true));
        assert_eq!(positive_scale_i64(1, 19), (0, false));
        assert_eq!(positive_scale_i64(1, 18), (1_000_000_000_000_000_000, true));
    }

    /// Found by fuzzing: values of up to 100,000 digits with as many factors of ten, which
    /// took seconds to strip one division at a time; stripped in chunks, the result is the
    /// same.
    #[test]
    fn many_factors_of_ten_and_of_1024() {
        let big = q("1000000000000000000000e19970");
        // 10^21 x 10^19970, printed with an exponent that is a multiple of three.
        assert_eq!(big.canonicalize(), "100e19989");
        assert_eq!(big.canonical(), "100e19989");
        assert!(big == q("1e19991"));
        let (v, n) = BigInt::from_i64(10).mul_pow10(19_999).remove_factors(10);
        assert_eq!((v, n), (BigInt::from_i64(1), 20_000));
        let (v, n) = BigInt::from_i64(-7).mul_pow10(25).remove_factors(10);
        assert_eq!((v, n), (BigInt::from_i64(-7), 25));
        let (v, n) = BigInt::from_i64(3).shl(10 * 7 + 4).remove_factors(1024);
        assert_eq!((v, n), (BigInt::from_i64(3 << 4), 7));
        assert_eq!(BigInt::zero().remove_factors(10), (BigInt::zero(), 0));
        let (v, n) = BigInt::from_i64(-2 * 3i64.pow(30)).remove_factors(3);
        assert_eq!((v, n), (BigInt::from_i64(-2), 30));
        assert_eq!(
            BigInt::from_decimal("1234567890123456789012345678900000").to_string(),
            "1234567890123456789012345678900000"
        );
    }
}
