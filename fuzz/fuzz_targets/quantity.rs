//! Kubernetes quantities (`scheduler_core::quantity`): parsing, the canonical form, exact
//! arithmetic, and the protobuf bytes the estimator requests carry (`kubeproto`).
//!
//! Input: one or two quantity strings separated by a newline.

#![no_main]

#[global_allocator]
static ALLOC: karmada_fuzz::LimitedAlloc = karmada_fuzz::LimitedAlloc;

use std::cmp::Ordering;

use estimator_client::kubeproto;
use estimator_client::pb::resource;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as K8sQuantity;
use libfuzzer_sys::fuzz_target;
use prost::Message;
use scheduler_core::quantity::{Format, MAX_DIGITS, Quantity, QuantityError};

/// The canonical form drops a decimal suffix it has no name for (Go's `String()` does the
/// same), so `1000E` and beyond print as a smaller number; below that, printing is exact.
fn exact_when_printed(q: &Quantity) -> bool {
    let limit = Quantity::parse("1000E").expect("a valid quantity");
    let below = |v: &Quantity| v.cmp_value(&limit) == Ordering::Less;
    match q.format() {
        Format::DecimalSI => below(q) && below(&negated(q)),
        Format::BinarySI | Format::DecimalExponent => true,
    }
}

/// Parses what `q` printed as; `None` only where the digit limit allows a refusal.
fn reparse(text: &str, what: &str, printed: &str, q: &Quantity) -> Option<Quantity> {
    match Quantity::parse(printed) {
        Ok(again) => Some(again),
        Err(QuantityError::TooLarge) if beyond_digit_limit(q) => None,
        Err(e) => panic!("{text:?}: {what} {printed:?}, which does not parse: {e}"),
    }
}

/// `-q`, exactly.
fn negated(q: &Quantity) -> Quantity {
    Quantity::from_i64(0, Format::DecimalSI)
        .sub(q)
        .expect("negating a parsed quantity stays in range")
}

/// |q| >= 10^(MAX_DIGITS - 9): at nano scale more than `MAX_DIGITS` digits.
fn beyond_digit_limit(q: &Quantity) -> bool {
    let limit = Quantity::parse(&format!("1e{}", MAX_DIGITS - 9)).expect("a valid quantity");
    let magnitude = if q.sign() < 0 { negated(q) } else { q.clone() };
    magnitude.cmp_value(&limit) != Ordering::Less
}

fn check_one(text: &str) -> Option<Quantity> {
    let parsed = Quantity::parse(text);
    // The flag parser's own check (component-base) accepts what the full parser accepts.
    if let Ok(q) = &parsed {
        assert_eq!(
            component_base::goparse::parse_quantity_is_zero(text),
            Ok(q.is_zero()),
            "{text:?}: the flag check and the parser disagree"
        );
    }

    // What the estimator request carries: the canonical text (or the trimmed input when it
    // does not parse), as the bytes of a `resource.Quantity` message.
    let k8s = K8sQuantity(text.to_string());
    let bytes = kubeproto::encode_quantity(&k8s);
    let back = resource::Quantity::decode(bytes.as_slice()).expect("our own bytes decode");
    let expected = match Quantity::from_k8s(&k8s) {
        Ok(q) => q.canonical(),
        Err(_) => text.trim().to_string(),
    };
    assert_eq!(back.string.as_deref(), Some(expected.as_str()));

    let q = parsed.ok()?;
    // Go's String() (the text kept from parsing, or the canonical form) parses again, to the
    // same value while no suffix was dropped. The one exception: the fast path (like the
    // reference's) takes an i64 at any scale, and a form printed with more digits goes to the
    // slow path, whose digit limit refuses values of 10^99991 and beyond.
    let shown = q.canonical();
    let Some(reparsed) = reparse(text, "shows as", &shown, &q) else {
        return Some(q);
    };
    let canonical = q.canonicalize();
    let Some(recanonical) = reparse(text, "canonical", &canonical, &q) else {
        return Some(q);
    };
    // The canonical form is a fixed point.
    assert_eq!(
        recanonical.canonicalize(),
        canonical,
        "{text:?}: canonical form not stable"
    );
    if exact_when_printed(&q) {
        assert!(reparsed == q, "{text:?} -> {shown:?} changed the value");
        assert!(
            recanonical == q,
            "{text:?} -> {canonical:?} changed the value"
        );
    }
    let _ = (q.value(), q.milli_value(), q.sign(), q.is_zero());
    let _ = scheduler_core::general::quantity_as_int(&q);
    Some(q)
}

fn check_pair(a: &Quantity, b: &Quantity) {
    let order = a.cmp_value(b);
    assert_eq!(
        order.reverse(),
        b.cmp_value(a),
        "comparison not antisymmetric"
    );
    assert_eq!(order == Ordering::Equal, a == b);
    match a.sub(b) {
        Ok(d) => {
            // Exact arithmetic: the sign of the difference is the comparison.
            assert_eq!(d.sign(), order as i32, "sign of a - b is not cmp(a, b)");
            let _ = d.canonicalize();
            let _ = (d.value(), d.milli_value());
            if let Ok(back) = d.add(b) {
                assert!(back == *a, "(a - b) + b != a");
            }
        }
        // Only values apart by more digits than the bound refuse to combine.
        Err(e) => assert_eq!(e, QuantityError::TooLarge),
    }
    if let Ok(s) = a.add(b) {
        let _ = s.canonicalize();
        if let Ok(s2) = b.add(a) {
            assert!(s == s2, "a + b != b + a");
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (first, second) = match text.split_once('\n') {
        Some((a, b)) => (a, Some(b)),
        None => (text, None),
    };
    let a = check_one(first);
    let b = second.and_then(check_one);
    if let (Some(a), Some(b)) = (a, b) {
        check_pair(&a, &b);
    }
});
