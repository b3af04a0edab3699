//! The canonical JSON behind fingerprints: every spelling of one value
//! has one canonical form, and that form is its own.

use idemgen_runtime::fuzzing::canonicalize;

/// Found by the `canonical_json` fuzz target: the exponent limit applied to
/// the exponent as written, so `1501e1000000000` canonicalised to
/// `1.501e+1000000003`, which was then refused (its written exponent past
/// the limit): the same value was canonical JSON in one spelling and
/// hashed byte for byte in another. The limit is on the value's exponent.
#[test]
fn a_number_near_the_exponent_limit_has_one_canonical_form_in_every_spelling() {
    for spellings in [
        ["1501e1000000000", "1.501e1000000003", "15010e999999999"],
        ["1501e999999990", "1.501e999999993", "0.1501e999999994"],
        ["-25e-1000000001", "-2.5e-1000000000", "-0.25e-999999999"],
    ] {
        let forms: Vec<_> = spellings
            .iter()
            .map(|text| canonicalize(text.as_bytes()))
            .collect();
        for (spelling, form) in spellings.iter().zip(&forms) {
            assert_eq!(
                form.as_ref().ok(),
                forms[0].as_ref().ok(),
                "{spelling} vs {}",
                spellings[0]
            );
            if let Ok(canonical) = form {
                assert_eq!(
                    canonicalize(canonical).as_ref(),
                    Ok(canonical),
                    "{spelling}"
                );
            }
        }
    }
}
