//! `idemgen rule ID` and `idemgen rules`.

use std::process::ExitCode;

use super::{EXIT_BAD_INPUT, print};
use crate::lint::RULES;

pub fn explain(id: &str) -> ExitCode {
    match crate::lint::rule(id) {
        Some(rule) => {
            print(&format!(
                "{}\n\nDefault severity: {}\n",
                rule.docs(),
                rule.severity.as_str()
            ));
            ExitCode::SUCCESS
        }
        None => {
            let suggestion =
                crate::contract::suggest::closest(id, RULES.iter().map(|rule| rule.id))
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
        text.push_str(&format!(
            "{:width$}  {:7}  {}\n",
            rule.id,
            rule.severity.as_str(),
            rule.summary
        ));
    }
    print(&text);
    ExitCode::SUCCESS
}
