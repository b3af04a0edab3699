//! `idemgen rule ID` and `idemgen rules`.

use std::process::ExitCode;

use super::{EXIT_BAD_INPUT, print};
use idemgen_diagnostics::Applicability;
use idemgen_lint::RULES;

pub fn explain(id: &str) -> ExitCode {
    match idemgen_lint::rule(id) {
        Some(rule) => {
            let fix = match rule.fix {
                Some(Applicability::Safe) => "\nFix: safe (`idemgen lint --fix`)",
                Some(Applicability::Unsafe) => {
                    "\nFix: unsafe (`idemgen lint --fix --unsafe-fixes`: review the result)"
                }
                None => "",
            };
            print(&format!(
                "{}\n\nDefault severity: {}{fix}\n",
                rule.docs(),
                rule.severity.as_str()
            ));
            ExitCode::SUCCESS
        }
        None => {
            let suggestion =
                idemgen_spec::contract::suggest::closest(id, RULES.iter().map(|rule| rule.id))
                    .map(|name| format!(" Did you mean `{name}`?"))
                    .unwrap_or_default();
            eprintln!(
                "error: there is no rule `{id}`.{suggestion} `idemgen rules` lists them all."
            );
            ExitCode::from(EXIT_BAD_INPUT)
        }
    }
}

pub fn list() -> ExitCode {
    let width = RULES.iter().map(|rule| rule.id.len()).max().unwrap_or(0);
    let mut text = String::new();
    for rule in RULES {
        let fix = rule.fix.map_or("", Applicability::as_str);
        text.push_str(&format!(
            "{:width$}  {:7}  {:6}  {}\n",
            rule.id,
            rule.severity.as_str(),
            fix,
            rule.summary
        ));
    }
    print(&text);
    ExitCode::SUCCESS
}
