//! The `--help` of every command says what the binary has: the OpenAPI
//! versions it reads, a description for every argument, and only what the
//! command itself does with a shared flag.

use crate::support::run::idemgen;
use idemgen_spec::OpenApiVersion;

/// Every subcommand, as `idemgen --help` lists them.
fn subcommands() -> Vec<String> {
    let help = idemgen(&["--help"]).stdout;
    let commands: Vec<String> = help
        .lines()
        .skip_while(|line| !line.starts_with("Commands:"))
        .skip(1)
        .take_while(|line| !line.trim().is_empty())
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_string)
        .collect();
    assert!(commands.len() >= 8, "too few commands read: {commands:?}");
    commands
}

/// `idemgen [COMMAND] -h` and `--help`, with the command's name.
fn helps() -> Vec<(String, String)> {
    let mut helps = vec![
        ("idemgen -h".to_string(), idemgen(&["-h"]).stdout),
        ("idemgen --help".to_string(), idemgen(&["--help"]).stdout),
    ];
    for command in subcommands() {
        for flag in ["-h", "--help"] {
            let run = idemgen(&[&command, flag]);
            assert_eq!(run.code, 0, "idemgen {command} {flag}: {}", run.stderr);
            helps.push((format!("idemgen {command} {flag}"), run.stdout));
        }
    }
    helps
}

/// Each `OpenAPI 3.x/3.y` a text names, as the versions it lists.
fn versions_named(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("OpenAPI 3.") {
        let tail = &rest[at + "OpenAPI ".len()..];
        let end = tail
            .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '/'))
            .unwrap_or(tail.len());
        found.push(tail[..end].trim_end_matches(['.', '/']).to_string());
        rest = &tail[end..];
    }
    found
}

#[test]
fn every_help_names_the_openapi_versions_idemgen_reads() {
    let supported = OpenApiVersion::ALL
        .iter()
        .map(|version| version.minor())
        .collect::<Vec<_>>()
        .join("/");
    let mut named = 0;
    for (command, help) in helps() {
        for versions in versions_named(&help) {
            named += 1;
            assert_eq!(
                versions, supported,
                "`{command}` says OpenAPI {versions}; idemgen reads OpenAPI {supported}"
            );
        }
    }
    // lint, window, gen and ddl say which versions their SPEC may be.
    assert!(named >= 8, "only {named} helps name the OpenAPI versions");
}

#[test]
fn every_argument_has_a_description() {
    let mut undescribed = Vec::new();
    for command in subcommands() {
        let help = idemgen(&[&command, "-h"]).stdout;
        for line in help
            .lines()
            .skip_while(|line| !line.starts_with("Arguments:"))
            .skip(1)
            .take_while(|line| !line.trim().is_empty())
        {
            let entry = line.trim_start();
            if !(entry.starts_with('<') || entry.starts_with('[')) {
                continue; // a description's continuation
            }
            let description = entry
                .split_once("  ")
                .map(|(_, text)| text.trim())
                .unwrap_or("");
            if description.is_empty() || description.starts_with("[possible values") {
                undescribed.push(format!("idemgen {command}: {}", entry.trim()));
            }
        }
    }
    assert!(
        undescribed.is_empty(),
        "arguments without a description in their `-h`:\n  {}",
        undescribed.join("\n  ")
    );
}

#[test]
fn only_lint_help_says_what_fix_does_with_an_overlay() {
    let mut with_overlay = 0;
    for command in subcommands() {
        let help = idemgen(&[&command, "--help"]).stdout;
        // The `--overlay` entry: its line and the indented ones below it.
        let Some(start) = help.find("--overlay <FILE>") else {
            continue;
        };
        with_overlay += 1;
        let entry: String = help[start..]
            .lines()
            .take_while(|line| !line.trim_start().starts_with('-') || line.contains("--overlay"))
            .collect::<Vec<_>>()
            .join(" ");
        assert!(
            entry.contains("Overlay document"),
            "idemgen {command} --help: {entry}"
        );
        if command == "lint" {
            assert!(entry.contains("With --fix"), "idemgen lint --help: {entry}");
        } else {
            assert!(
                !entry.contains("--fix"),
                "idemgen {command} --help tells what `lint --fix` does with --overlay: {entry}"
            );
        }
    }
    assert!(
        with_overlay >= 5,
        "only {with_overlay} commands take --overlay"
    );
}

/// The values `--format` takes, as `idemgen COMMAND --help` lists them.
fn format_values(command: &str) -> Vec<String> {
    let help = idemgen(&[command, "--help"]).stdout;
    let entry: Vec<&str> = help
        .lines()
        .skip_while(|line| !line.trim_start().starts_with("--format <FORMAT>"))
        .skip(1)
        .take_while(|line| !line.trim_start().starts_with("--"))
        .collect();
    let mut values = Vec::new();
    for line in &entry {
        let line = line.trim();
        if let Some(listed) = line
            .split("[possible values: ")
            .nth(1)
            .and_then(|rest| rest.split(']').next())
        {
            values.extend(listed.split(", ").map(str::to_string));
        } else if let Some(item) = line.strip_prefix("- ") {
            values.push(item.split(':').next().unwrap().trim().to_string());
        }
    }
    assert!(values.len() >= 3, "idemgen {command} --help: {entry:?}");
    values
}

/// The book's synopses and the output-formats chapter name every format
/// the binary has, and no other.
#[test]
fn the_book_names_every_output_format() {
    let book = crate::support::root().join("docs/src");
    let read = |page: &str| std::fs::read_to_string(book.join(page)).unwrap();
    for (command, page) in [("probe", "probe.md"), ("window", "window.md")] {
        let synopsis = format!("[--format {}]", format_values(command).join("|"));
        assert!(
            read(page).contains(&synopsis),
            "docs/src/{page}'s synopsis should say {synopsis}"
        );
    }
    let chapter = read("output-formats.md");
    for value in format_values("lint") {
        if value != "pretty" {
            assert!(
                chapter.contains(&format!("`--format {value}`")),
                "docs/src/output-formats.md does not describe `--format {value}`"
            );
        }
    }
}
