//! A fix's applicability is stated once, in its rule's `declare_rule!`:
//! every fix a rule's findings carry has exactly that applicability, and a
//! rule that declares a fix offers one on its broken example.

use idemgen_lint::{LintOptions, RULES, lint, rule};
use idemgen_spec::Workspace;

use crate::support::workspace_root;

#[test]
fn every_fix_has_the_applicability_its_rule_declares() {
    let broken = workspace_root().join("examples/broken");
    for declared in RULES {
        let path = broken.join(format!("{}.yaml", declared.id));
        if !path.exists() {
            // Rules without a broken example of their own (ref-unresolved,
            // duplicate-key, unused-ignore) offer no fix.
            assert!(
                declared.fix.is_none(),
                "{}: add {}",
                declared.id,
                path.display()
            );
            continue;
        }
        let workspace = Workspace::load(&path).unwrap_or_else(|error| panic!("{}", error.message));
        let findings = lint(&workspace, &LintOptions::default()).diagnostics;
        let mut offered = false;
        for finding in &findings {
            let Some(fix) = &finding.fix else { continue };
            let owner = rule(finding.rule).expect("a registered rule");
            assert_eq!(
                owner.fix,
                Some(fix.applicability),
                "{}: a {} finding's fix",
                path.display(),
                finding.rule
            );
            offered |= finding.rule == declared.id;
        }
        assert_eq!(
            offered,
            declared.fix.is_some(),
            "{}: its declare_rule! says fix = {:?}, its broken example offers {}",
            declared.id,
            declared.fix,
            if offered { "one" } else { "none" }
        );
    }
}
