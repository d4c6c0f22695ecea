//! Go's value syntax as flag values reach it (`component_base::goparse`): durations,
//! integers, unsigned integers, levels, severities, floats, booleans and the quantity check.
//!
//! Input: one value (any text; the whole input is the value).

#![no_main]

#[global_allocator]
static ALLOC: karmada_fuzz::LimitedAlloc = karmada_fuzz::LimitedAlloc;

use component_base::goparse::{self, GoDuration};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };

    // A duration prints as Go's Duration.String() and that text parses to the same value.
    if let Ok(d) = GoDuration::parse(text) {
        let shown = d.to_string();
        assert_eq!(
            GoDuration::parse(&shown),
            Ok(d),
            "{text:?} = {} ns prints as {shown:?}",
            d.0
        );
        assert_eq!(d.is_negative(), d.0 < 0);
        let std = d.to_std();
        if d.0 >= 0 {
            assert_eq!(std.as_nanos(), d.0 as u128);
        } else {
            assert!(std.is_zero());
        }
    } else {
        let e = GoDuration::parse(text).unwrap_err();
        assert!(e.starts_with("time: "), "{e}");
    }

    // Integers: the decimal form of a parsed value parses to the same value; errors are
    // strconv's texts.
    match goparse::parse_int(text) {
        Ok(v) => assert_eq!(goparse::parse_int(&v.to_string()), Ok(v)),
        Err(e) => assert!(e.starts_with("strconv.ParseInt: parsing "), "{e}"),
    }
    match goparse::parse_uint64(text) {
        Ok(v) => {
            assert_eq!(goparse::parse_uint64(&v.to_string()), Ok(v));
            // Every unsigned value that fits an i64 parses as the same signed value.
            if let Ok(signed) = i64::try_from(v) {
                assert_eq!(goparse::parse_int(text), Ok(signed), "{text:?}");
            }
        }
        Err(e) => assert!(e.starts_with("strconv.ParseUint: parsing "), "{e}"),
    }
    match goparse::parse_level(text) {
        Ok(v) => {
            assert!(v <= i32::MAX as u32, "a level has 31 bits");
            assert_eq!(goparse::parse_level(&v.to_string()), Ok(v));
        }
        Err(e) => assert!(e.starts_with("strconv.ParseUint: parsing "), "{e}"),
    }
    match goparse::parse_int32_base10(text) {
        Ok(v) => assert_eq!(goparse::parse_int32_base10(&v.to_string()), Ok(v)),
        Err(e) => assert!(e.starts_with("strconv.ParseInt: parsing "), "{e}"),
    }
    match goparse::parse_float32(text) {
        Ok(v) if v.is_nan() => {}
        Ok(v) => {
            // Rust prints the shortest text that reads back as the same f32.
            let shown = v.to_string();
            assert_eq!(
                goparse::parse_float32(&shown).map(f32::to_bits),
                Ok(v.to_bits()),
                "{text:?} -> {shown:?}"
            );
        }
        Err(e) => assert!(e.starts_with("strconv.ParseFloat: parsing "), "{e}"),
    }
    match goparse::parse_bool(text) {
        Ok(b) => assert_eq!(goparse::parse_bool(&b.to_string()), Ok(b)),
        Err(e) => assert!(e.starts_with("strconv.ParseBool: parsing "), "{e}"),
    }
    // The quantity check of the `quantity` flags: whatever it accepts, the full parser
    // accepts too, with the same zero-ness (only absurd exponents are out of its reach).
    if let Ok(zero) = goparse::parse_quantity_is_zero(text) {
        match scheduler_core::quantity::Quantity::parse(text) {
            Ok(q) => assert_eq!(q.is_zero(), zero, "{text:?}"),
            Err(scheduler_core::quantity::QuantityError::TooLarge) => {}
            Err(e) => panic!("{text:?}: the flag check accepts what the parser rejects: {e}"),
        }
    }
    let quoted = goparse::go_quote(text);
    assert!(quoted.starts_with('"') && quoted.ends_with('"') && quoted.len() >= 2);
});
