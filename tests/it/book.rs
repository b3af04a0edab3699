//! The book under `docs/` kept true to the tool it describes.
//!
//! - The rule pages (`docs/src/rules/ID.md`), the rule table in
//!   `docs/src/rules.md`, the probe-check pages (`docs/src/probe-checks/ID.md`)
//!   and their table in `docs/src/probe-checks.md` are rendered from the
//!   built binary (`idemgen rules`, `idemgen rule ID`, `idemgen probe --help`)
//!   and must equal the committed files; so must the alerts' sections of
//!   `docs/src/alerts.md` (the guides of `idemgen_codegen::alert_guides`,
//!   which every generated `ops/prometheus/runbook.md` carries). `IDEMGEN_BLESS=1 cargo test --test
//!   book` rewrites them (and their entries in `SUMMARY.md`).
//! - `SUMMARY.md` lists every page under `docs/src/`.
//! - Every `$ idemgen ...` command shown in a `console` block of the book or
//!   the README that needs no running service and no file outside the
//!   repository is run, and its output compared with the one shown (`...`
//!   and `…` lines stand for left-out output).
//! - The window chapter's SVG is what its caption's command draws, the
//!   conformance chapter's verdicts are `conformance/expected.json`'s, and
//!   the README stays within 400 lines.

use crate::support::{self, root};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

const REGENERATE: &str = "IDEMGEN_BLESS=1 cargo test --test it book::";

fn book() -> PathBuf {
    root().join("docs/src")
}

fn bless() -> bool {
    std::env::var_os("IDEMGEN_BLESS").is_some_and(|value| value != "0" && !value.is_empty())
}

fn idemgen(args: &[&str]) -> String {
    let run = support::run::idemgen(args);
    assert_eq!(run.code, 0, "idemgen {}: {}", args.join(" "), run.stderr);
    run.stdout
}

struct Rule {
    id: String,
    severity: String,
    fix: Option<String>,
    summary: String,
}

/// `idemgen rules`: id, severity, the fix's applicability if any, summary,
/// in columns at least two spaces apart.
fn rules() -> Vec<Rule> {
    idemgen(&["rules"])
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| {
            let cells: Vec<&str> = line
                .split("  ")
                .map(str::trim)
                .filter(|cell| !cell.is_empty())
                .collect();
            match cells.as_slice() {
                [id, severity, summary] => Rule {
                    id: id.to_string(),
                    severity: severity.to_string(),
                    fix: None,
                    summary: summary.to_string(),
                },
                [id, severity, fix, summary] => Rule {
                    id: id.to_string(),
                    severity: severity.to_string(),
                    fix: Some(fix.to_string()),
                    summary: summary.to_string(),
                },
                _ => panic!("cannot read this line of `idemgen rules`: {line:?}"),
            }
        })
        .collect()
}

/// The checks `idemgen probe --help` lists: the help's list is generated
/// from the probe's check registry (`idemgen_probe::CHECKS`), so the pages
/// follow what a user of the binary sees.
fn probe_checks() -> Vec<(String, String)> {
    let help = idemgen(&["probe", "--help"]);
    let mut lines = help
        .lines()
        .skip_while(|line| !line.starts_with("Checks, per operation with x-idempotency:"));
    assert!(
        lines.next().is_some(),
        "`idemgen probe --help` no longer lists its checks under \
         \"Checks, per operation with x-idempotency:\"; tests/it/book.rs reads them from there"
    );
    let mut checks: Vec<(String, String)> = Vec::new();
    for line in lines.take_while(|line| !line.trim().is_empty()) {
        let indent = line.len() - line.trim_start().len();
        if indent == 2 {
            let entry = line.trim_start();
            let (id, text) = entry.split_once(' ').unwrap_or((entry, ""));
            checks.push((id.to_string(), text.trim().to_string()));
        } else {
            let (_, text) = checks
                .last_mut()
                .expect("a check's continuation line first");
            text.push(' ');
            text.push_str(line.trim());
        }
    }
    assert!(checks.len() >= 8, "too few probe checks read: {:?}", checks);
    checks
}

fn cell(text: &str) -> String {
    text.replace('|', "\\|")
}

fn rule_table(rules: &[Rule]) -> String {
    let mut table = String::from(
        "| rule | default severity | `--fix` | what it reports |\n|---|---|---|---|\n",
    );
    for rule in rules {
        table.push_str(&format!(
            "| [`{id}`](rules/{id}.md) | {severity} | {fix} | {summary} |\n",
            id = rule.id,
            severity = rule.severity,
            fix = rule.fix.as_deref().unwrap_or("–"),
            summary = cell(&rule.summary),
        ));
    }
    table
}

fn check_table(checks: &[(String, String)]) -> String {
    let mut table = String::from("| check | what it sends and expects |\n|---|---|\n");
    for (id, text) in checks {
        table.push_str(&format!(
            "| [`{id}`](probe-checks/{id}.md) | {} |\n",
            cell(text)
        ));
    }
    table
}

fn check_page(id: &str, text: &str) -> String {
    format!(
        "# `{id}`\n\n{text}\n\n\
         This is the check's entry in `idemgen probe --help`. How the probe \
         builds its requests, what it sends and what a report looks like: \
         [`idemgen probe`](../probe.md); every check in one table: \
         [Probe checks](../probe-checks.md).\n"
    )
}

const BEGIN: &str = "<!-- generated by tests/it/book.rs: do not edit; IDEMGEN_BLESS=1 cargo test --test it book:: rewrites it -->\n";
const END: &str = "<!-- end of generated part -->\n";

/// `text` with the part between the generated-part markers replaced.
fn with_generated_part(path: &Path, text: &str, part: &str) -> String {
    let start = text
        .find(BEGIN)
        .unwrap_or_else(|| panic!("{} lacks the line {BEGIN:?}", path.display()))
        + BEGIN.len();
    let end = start
        + text[start..]
            .find(END)
            .unwrap_or_else(|| panic!("{} lacks the line {END:?}", path.display()));
    format!("{}{}{}", &text[..start], part, &text[end..])
}

/// `SUMMARY.md` with its run of entries linking into `dir/` replaced by
/// `entries` (each `  - [title](dir/id.md)`, at the indentation of the first).
fn with_summary_entries(summary: &str, dir: &str, entries: &[(String, String)]) -> String {
    let lines: Vec<&str> = summary.lines().collect();
    let is_entry =
        |line: &&str| line.trim_start().starts_with("- [") && line.contains(&format!("]({dir}/"));
    let first = lines
        .iter()
        .position(&is_entry)
        .unwrap_or_else(|| panic!("SUMMARY.md lists no page of {dir}/"));
    let last = lines.iter().rposition(is_entry).unwrap();
    let indent = &lines[first][..lines[first].len() - lines[first].trim_start().len()];
    let mut out: Vec<String> = lines[..first].iter().map(|line| line.to_string()).collect();
    for (title, id) in entries {
        out.push(format!("{indent}- [{title}]({dir}/{id}.md)"));
    }
    out.extend(lines[last + 1..].iter().map(|line| line.to_string()));
    out.join("\n") + "\n"
}

#[test]
fn generated_pages_match_the_registries() {
    let book = book();
    let rules = rules();
    let checks = probe_checks();
    // Every generated file, by path, with the text it must have.
    let mut expected: BTreeMap<PathBuf, String> = BTreeMap::new();
    for rule in &rules {
        let mut page = idemgen(&["rule", &rule.id]);
        if !page.ends_with('\n') {
            page.push('\n');
        }
        expected.insert(book.join("rules").join(format!("{}.md", rule.id)), page);
    }
    for (id, text) in &checks {
        expected.insert(
            book.join("probe-checks").join(format!("{id}.md")),
            check_page(id, text),
        );
    }
    let rules_md = book.join("rules.md");
    let text = std::fs::read_to_string(&rules_md).unwrap();
    expected.insert(
        rules_md.clone(),
        with_generated_part(&rules_md, &text, &rule_table(&rules)),
    );
    let checks_md = book.join("probe-checks.md");
    let text = std::fs::read_to_string(&checks_md).unwrap();
    expected.insert(
        checks_md.clone(),
        with_generated_part(&checks_md, &text, &check_table(&checks)),
    );
    // The alerts' guides, as every generated runbook.md has them.
    let alerts_md = book.join("alerts.md");
    let text = std::fs::read_to_string(&alerts_md).unwrap();
    expected.insert(
        alerts_md.clone(),
        with_generated_part(&alerts_md, &text, &idemgen_codegen::alert_guides()),
    );
    let summary_md = book.join("SUMMARY.md");
    let summary = std::fs::read_to_string(&summary_md).unwrap();
    let summary = with_summary_entries(
        &summary,
        "rules",
        &rules
            .iter()
            .map(|rule| (format!("`{}`", rule.id), rule.id.clone()))
            .collect::<Vec<_>>(),
    );
    let summary = with_summary_entries(
        &summary,
        "probe-checks",
        &checks
            .iter()
            .map(|(id, _)| (format!("`{id}`"), id.clone()))
            .collect::<Vec<_>>(),
    );
    expected.insert(summary_md, summary);

    let mut drifted = Vec::new();
    for (path, text) in &expected {
        if std::fs::read_to_string(path).ok().as_deref() != Some(text.as_str()) {
            drifted.push(path.clone());
            if bless() {
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                std::fs::write(path, text).unwrap();
            }
        }
    }
    // A page whose rule or check is gone.
    for dir in ["rules", "probe-checks"] {
        for entry in std::fs::read_dir(book.join(dir)).into_iter().flatten() {
            let path = entry.unwrap().path();
            if !expected.contains_key(&path) {
                drifted.push(path.clone());
                if bless() {
                    std::fs::remove_file(&path).unwrap();
                }
            }
        }
    }
    let root = root();
    let names: Vec<String> = drifted
        .iter()
        .map(|path| {
            path.strip_prefix(&root)
                .unwrap_or(path)
                .display()
                .to_string()
        })
        .collect();
    assert!(
        drifted.is_empty() || bless(),
        "the book's generated pages differ from what the binary prints \
         (`idemgen rules`, `idemgen rule ID`, `idemgen probe --help`, the alerts' guides):\n  {}\n\
         regenerate them with `{REGENERATE}` and commit the result",
        names.join("\n  ")
    );
}

/// Every `.md` file under `docs/src/` is a chapter of the book.
#[test]
fn summary_lists_every_page() {
    let book = book();
    let summary = std::fs::read_to_string(book.join("SUMMARY.md")).unwrap();
    let mut missing = Vec::new();
    let mut stack = vec![book.clone()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|ext| ext == "md") {
                let relative = path
                    .strip_prefix(&book)
                    .unwrap()
                    .to_string_lossy()
                    .replace('\\', "/");
                if relative != "SUMMARY.md" && !summary.contains(&format!("]({relative})")) {
                    missing.push(relative);
                }
            }
        }
    }
    missing.sort();
    assert!(
        missing.is_empty(),
        "docs/src/SUMMARY.md does not list these pages; add them where they belong: {missing:?}"
    );
}

/// The picture in the window chapter is what its caption's command draws.
#[test]
fn window_svg_is_current() {
    let svg = idemgen(&[
        "window",
        "--format",
        "svg",
        "examples/broken/window-too-short.yaml",
    ]);
    let path = book().join("window-too-short.svg");
    if std::fs::read_to_string(&path).ok().as_deref() != Some(svg.as_str()) {
        if bless() {
            std::fs::write(&path, &svg).unwrap();
        } else {
            panic!(
                "docs/src/window-too-short.svg is not what `idemgen window --format svg \
                 examples/broken/window-too-short.yaml` draws; regenerate it with `{REGENERATE}`"
            );
        }
    }
}

/// One `$ command` of a console block and the output shown below it.
struct Shown {
    file: String,
    line: usize,
    command: String,
    output: Vec<String>,
}

/// The console blocks of a Markdown file, each as its commands.
fn console_blocks(file: &str, text: &str) -> Vec<Vec<Shown>> {
    let mut blocks = Vec::new();
    let mut current: Option<Vec<Shown>> = None;
    // A block inside a list item is indented as a whole, by its fence's indent.
    let mut fence_indent = 0;
    for (index, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        if let Some(block) = current.as_mut() {
            if trimmed.starts_with("```") {
                blocks.push(current.take().unwrap());
            } else if let Some(command) = trimmed.strip_prefix("$ ") {
                block.push(Shown {
                    file: file.to_string(),
                    line: index + 1,
                    command: command.to_string(),
                    output: Vec::new(),
                });
            } else if let Some(last) = block.last_mut() {
                let indent = (line.len() - trimmed.len()).min(fence_indent);
                last.output.push(line[indent..].to_string());
            }
        } else if trimmed == "```console" {
            fence_indent = line.len() - trimmed.len();
            current = Some(Vec::new());
        }
    }
    blocks
}

/// Does `actual` show what `shown` shows? A line `...` or `…` stands for any
/// number of lines; a line ending in `…` for any line that starts with the
/// rest; trailing blank lines do not count.
fn matches(shown: &[String], actual: &[&str]) -> bool {
    fn go(shown: &[String], actual: &[&str]) -> bool {
        match shown.split_first() {
            None => actual.is_empty(),
            Some((first, rest)) if first.trim() == "..." || first.trim() == "…" => {
                (0..=actual.len()).any(|skip| go(rest, &actual[skip..]))
            }
            Some((first, rest)) => match actual.split_first() {
                None => false,
                Some((line, more)) => {
                    let same = match first.strip_suffix('…') {
                        Some(prefix) if !prefix.is_empty() => line.starts_with(prefix.trim_end()),
                        _ => line.trim_end() == first.trim_end(),
                    };
                    same && go(rest, more)
                }
            },
        }
    }
    let mut shown = shown.to_vec();
    while shown.last().is_some_and(|line| line.trim().is_empty()) {
        shown.pop();
    }
    let mut actual = actual.to_vec();
    while actual.last().is_some_and(|line| line.trim().is_empty()) {
        actual.pop();
    }
    go(&shown, &actual)
}

/// The full corpus of published specs (`IDEMGEN_CORPUS`, else beside the
/// project, as for `tests/it/corpus.rs`), when it is there.
fn corpus_specs() -> Option<PathBuf> {
    support::corpus::full_corpus_dir().map(|dir| dir.join("specs"))
}

/// The files a command names, each as (where it is, the path the command
/// gives): files of this repository, or a bare name of a corpus spec. `None`
/// when one of them is not here.
fn files_named(command: &str) -> Option<Vec<(PathBuf, PathBuf)>> {
    let root = root();
    let mut files = Vec::new();
    for word in command.split_whitespace() {
        let word = word.trim_matches(|c| c == '\'' || c == '"');
        let looks_like_file = [".yaml", ".yml", ".json", ".toml"]
            .iter()
            .any(|ext| word.ends_with(ext));
        if !looks_like_file {
            continue;
        }
        if root.join(word).is_file() {
            files.push((root.join(word), PathBuf::from(word)));
        } else if let Some(spec) = corpus_specs()
            .filter(|_| !word.contains('/'))
            .map(|specs| specs.join(word))
            .filter(|spec| spec.is_file())
        {
            files.push((spec, PathBuf::from(word)));
        } else {
            return None;
        }
    }
    Some(files)
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

#[test]
fn commands_shown_in_the_book_run_as_shown() {
    let root = root();
    let mut sources: Vec<PathBuf> = vec![root.join("README.md")];
    let mut stack = vec![book()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|ext| ext == "md") {
                sources.push(path);
            }
        }
    }
    sources.sort();
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_idemgen"))
        .parent()
        .unwrap()
        .to_path_buf();
    let path_var = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let (mut ran, mut skipped, mut failures) = (0, Vec::new(), Vec::new());
    for source in &sources {
        let name = source.strip_prefix(&root).unwrap().display().to_string();
        let text = std::fs::read_to_string(source).unwrap();
        for block in console_blocks(&name, &text) {
            // Only blocks made of idemgen commands that read files of this
            // repository (and `echo`s that edit what they wrote), run in a
            // temporary directory: `probe` needs a running service, `lsp`
            // an editor, and a file outside the repository is not here.
            let runnable = block
                .iter()
                .any(|shown| shown.command.starts_with("idemgen "))
                && block.iter().all(|shown| {
                    let words: Vec<&str> = shown.command.split_whitespace().collect();
                    let idemgen = words.first() == Some(&"idemgen")
                        && matches!(
                            words.get(1).copied(),
                            Some(
                                "lint"
                                    | "window"
                                    | "rules"
                                    | "rule"
                                    | "ddl"
                                    | "gen"
                                    | "completions"
                                    | "--help"
                                    | "--version"
                            )
                        );
                    let echo = words.first() == Some(&"echo");
                    // `gen` of a whole published API formats hundreds of
                    // files (about 40 s for Stripe's): not run here.
                    let big_gen = words.get(1) == Some(&"gen")
                        && files_named(&shown.command).is_some_and(|files| {
                            files.iter().any(|(_, file)| {
                                file.parent().is_some_and(|dir| dir.as_os_str().is_empty())
                            })
                        });
                    (idemgen || echo)
                        && !big_gen
                        && !words
                            .iter()
                            .any(|word| word.starts_with('/') || word.contains(".."))
                        && files_named(&shown.command).is_some()
                });
            if !runnable {
                for shown in &block {
                    skipped.push(format!(
                        "{}:{}: $ {}",
                        shown.file, shown.line, shown.command
                    ));
                }
                continue;
            }
            // Each block runs in a copy of the directories its files are in,
            // so `--fix` changes nothing here.
            let work = tempfile::tempdir().unwrap();
            for shown in &block {
                for (from, file) in files_named(&shown.command).unwrap() {
                    let dir = file.parent().unwrap();
                    if dir.as_os_str().is_empty() {
                        std::fs::copy(&from, work.path().join(&file)).unwrap();
                    } else if !work.path().join(dir).exists() {
                        copy_dir(&root.join(dir), &work.path().join(dir));
                    }
                }
            }
            for shown in &block {
                let output = Command::new("sh")
                    .arg("-c")
                    // A newline ends a trailing `# comment` before the redirection.
                    .arg(format!("{{ {}\n}} 2>&1", shown.command))
                    .current_dir(work.path())
                    .env("PATH", &path_var)
                    .env("NO_COLOR", "1")
                    .output()
                    .unwrap();
                ran += 1;
                let actual = String::from_utf8_lossy(&output.stdout).to_string();
                let actual_lines: Vec<&str> = actual.lines().collect();
                if !matches(&shown.output, &actual_lines) {
                    failures.push(format!(
                        "{}:{}: $ {}\n--- shown\n{}\n--- printed\n{}",
                        shown.file,
                        shown.line,
                        shown.command,
                        shown.output.join("\n"),
                        actual
                    ));
                }
            }
        }
    }
    eprintln!(
        "ran {ran} commands shown in the book; {} need a service, a project or a file not in the repository:\n  {}",
        skipped.len(),
        skipped.join("\n  ")
    );
    assert!(ran >= 20, "only {ran} commands of the book were run");
    assert!(
        failures.is_empty(),
        "{} commands shown in the book print something else now (fix the page, or the tool):\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

/// The README is the one-screen tour; the manual is the book.
#[test]
fn readme_stays_short() {
    let lines = std::fs::read_to_string(root().join("README.md"))
        .unwrap()
        .lines()
        .count();
    assert!(
        lines <= 400,
        "README.md has {lines} lines: move the detail into a chapter of docs/src/ and link it"
    );
}

/// The conformance chapter's table of verdicts is the one
/// `conformance/run.sh` holds the libraries to (`conformance/expected.json`).
#[test]
fn conformance_table_matches_the_expected_verdicts() {
    let expected: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("conformance/expected.json")).unwrap(),
    )
    .unwrap();
    let verdicts = expected["verdicts"].as_object().unwrap();
    let chapter = std::fs::read_to_string(book().join("conformance.md")).unwrap();
    let rows: Vec<Vec<String>> = chapter
        .lines()
        .skip_while(|line| !line.starts_with("| check |"))
        .take_while(|line| line.starts_with('|'))
        .map(|line| {
            line.trim_matches('|')
                .split('|')
                .map(|cell| cell.trim().trim_matches('`').to_string())
                .collect()
        })
        .collect();
    assert!(
        rows.len() > 2,
        "docs/src/conformance.md has no `| check |` table"
    );
    let apps = &rows[0][1..];
    let mut shown = 0;
    for row in &rows[2..] {
        let check = &row[0];
        for (app, verdict) in apps.iter().zip(&row[1..]) {
            let want = verdicts
                .get(app)
                .and_then(|checks| checks.get(check))
                .and_then(|verdict| verdict.as_str());
            assert_eq!(
                want,
                Some(verdict.as_str()),
                "docs/src/conformance.md says `{check}` is {verdict} for {app}; \
                 conformance/expected.json says {want:?}"
            );
            shown += 1;
        }
    }
    let total: usize = verdicts
        .values()
        .map(|checks| checks.as_object().map_or(0, |checks| checks.len()))
        .sum();
    assert_eq!(
        shown, total,
        "docs/src/conformance.md shows {shown} verdicts, conformance/expected.json has {total}"
    );
}

/// The check ids a Markdown table's first column names (each in
/// backticks; one cell may name several), from the first table whose
/// header starts `| check |` after the line `after` begins with.
fn checks_in_table(page: &str, after: &str) -> Vec<String> {
    let text = std::fs::read_to_string(book().join(page)).unwrap();
    let start = text
        .lines()
        .position(|line| line.starts_with(after))
        .unwrap_or_else(|| panic!("docs/src/{page} has no line starting {after:?}"));
    let mut ids = Vec::new();
    for line in text
        .lines()
        .skip(start)
        .skip_while(|line| !line.starts_with("| check |"))
        .skip(2)
        .take_while(|line| line.starts_with('|'))
    {
        let first = line.trim_start_matches('|').split('|').next().unwrap();
        ids.extend(first.split('`').skip(1).step_by(2).map(str::to_string));
    }
    ids
}

/// The pages that describe the probe in prose list every check the binary
/// runs, and their sample runs count as many: `probe.md`'s table and
/// `contract.md`'s "What `idemgen probe` checks", and every totals line.
#[test]
fn probe_pages_list_every_check_the_probe_runs() {
    let checks: Vec<String> = probe_checks().into_iter().map(|(id, _)| id).collect();
    for (page, after) in [
        ("probe.md", "# `idemgen probe`"),
        ("contract.md", "## What `idemgen probe` checks"),
    ] {
        let listed = checks_in_table(page, after);
        let missing: Vec<&String> = checks.iter().filter(|id| !listed.contains(id)).collect();
        let unknown: Vec<&String> = listed.iter().filter(|id| !checks.contains(id)).collect();
        assert!(
            missing.is_empty() && unknown.is_empty(),
            "docs/src/{page}'s table of checks drifted from `idemgen probe --help`: \
             missing {missing:?}, not a check {unknown:?}"
        );
    }
    // `9 passed, 0 failed, 6 not applicable, ...`: one outcome per check.
    for page in [
        "probe.md",
        "contract.md",
        "conformance.md",
        "../../README.md",
    ] {
        let text = std::fs::read_to_string(book().join(page)).unwrap();
        for (index, line) in text.lines().enumerate() {
            let words: Vec<&str> = line.split_whitespace().collect();
            if let [
                passed,
                "passed,",
                failed,
                "failed,",
                na,
                "not",
                "applicable,",
                ..,
            ] = words.as_slice()
            {
                let total: usize = [passed, failed, na]
                    .iter()
                    .map(|count| count.parse::<usize>().unwrap())
                    .sum();
                // A run of one operation counts each check once.
                assert!(
                    total % checks.len() == 0,
                    "docs/src/{page}:{}: {line:?} counts {total} outcomes; the probe runs {} checks per operation",
                    index + 1,
                    checks.len()
                );
            }
        }
    }
}

/// The contract chapter's table of rules (`## Rules`) has a row for every
/// rule the binary has, at its default severity, and none other.
#[test]
fn contract_rule_table_lists_every_rule() {
    let text = std::fs::read_to_string(book().join("contract.md")).unwrap();
    let rows: Vec<(String, String)> = text
        .lines()
        .skip_while(|line| *line != "## Rules")
        .skip_while(|line| !line.starts_with("| id | default |"))
        .skip(2)
        .take_while(|line| line.starts_with('|'))
        .map(|line| {
            let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
            (cells[0].trim_matches('`').to_string(), cells[1].to_string())
        })
        .collect();
    let rules = rules();
    for rule in &rules {
        let row = rows.iter().find(|(id, _)| *id == rule.id);
        assert!(
            row.is_some_and(|(_, severity)| *severity == rule.severity),
            "docs/src/contract.md's table of rules: `{}` ({}) is {}",
            rule.id,
            rule.severity,
            match row {
                Some((_, severity)) => format!("listed as {severity}"),
                None => "missing".into(),
            }
        );
    }
    for (id, _) in &rows {
        assert!(
            rules.iter().any(|rule| rule.id == *id),
            "docs/src/contract.md's table of rules lists `{id}`, which `idemgen rules` does not"
        );
    }
}
