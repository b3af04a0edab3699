//! The Prometheus alert rules `idemgen gen` writes (`ops/prometheus/`):
//! `promtool check rules` accepts them and `promtool test rules` runs the
//! unit tests gen writes beside them, which fire each alert on series
//! above its threshold and keep it silent below; the thresholds are the
//! contract's numbers; each rule links to its section of the runbook gen
//! writes beside them. Needs `promtool` (Debian's `prometheus` package;
//! `.ci/run` installs it), else says SKIPPED.

use std::path::Path;
use std::process::Command;

use crate::support::root;
use crate::support::run::idemgen;
use crate::support::skip;

const EXAMPLE: &str = "examples/payment-callback";

/// `promtool check rules` and `promtool test rules` on the files in `dir`;
/// `false` (and SKIPPED) without promtool.
fn promtool_passes(dir: &Path) -> bool {
    if Command::new("promtool").arg("--version").output().is_err() {
        skip::skipped("promtool is not installed (Debian package `prometheus`)");
        return false;
    }
    for args in [
        ["check", "rules", "alerts.yml"],
        ["test", "rules", "alerts.test.yml"],
    ] {
        let output = Command::new("promtool")
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "promtool {} in {}:\n{}{}",
            args.join(" "),
            dir.display(),
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    true
}

#[test]
fn the_example_alerts_pass_promtool_and_their_unit_tests() {
    let dir = root().join(EXAMPLE).join("ops/prometheus");
    let rules = std::fs::read_to_string(dir.join("alerts.yml")).unwrap();
    // The example's contract: the default replay-rate-alert (0.1 %) and
    // server.max-processing: 3s, whose 75 % is 2.25 s.
    assert!(rules.contains("  > 0.001\n"), "{rules}");
    assert!(rules.contains("  > 2.25\n"), "{rules}");
    assert!(
        rules.contains("monitoring.replay-rate-alert (0.1 %)"),
        "{rules}"
    );
    let runbook = std::fs::read_to_string(dir.join("runbook.md")).unwrap();
    let manual = std::fs::read_to_string(root().join("docs/src/alerts.md")).unwrap();
    for alert in [
        "IdempotencyReplayRateHigh",
        "IdempotencyInProgressRising",
        "IdempotencyBusinessNearMaxProcessing",
        "IdempotencyConflictsRising",
        "IdempotencyLostRacesHigh",
        "IdempotencyBusy",
        "IdempotencyServerErrors",
        "IdempotencyUnavailable",
        "IdempotencyRecordsStuckInProgress",
    ] {
        assert!(rules.contains(&format!("- alert: {alert}\n")), "{alert}");
        // Its link is a path in the project, to its section of the
        // runbook, which carries the manual's guide.
        let anchor = alert.to_ascii_lowercase();
        assert!(
            rules.contains(&format!(
                "runbook_url: \"ops/prometheus/runbook.md#{anchor}\"\n"
            )),
            "{alert}: {rules}"
        );
        let section = runbook
            .split(&format!("\n## {alert}\n\n"))
            .nth(1)
            .and_then(|rest| rest.split("\n## ").next())
            .unwrap_or_else(|| panic!("runbook.md: {alert}"));
        let guide = section.split("\n\nIn this service:").next().unwrap();
        assert!(
            manual.contains(&format!("## {alert}\n\n{guide}\n")),
            "{alert}: the runbook's guide is not the manual's"
        );
        assert!(section.contains("In this service:"), "{alert}: {section}");
        assert!(section.contains("onPayCallback") || section.contains("idempotent_record"));
    }
    // This service's numbers.
    assert!(
        runbook.contains("`monitoring.replay-rate-alert`: 0.1 %"),
        "{runbook}"
    );
    assert!(
        runbook.contains("`server.max-processing`: 3 s (the alert at 2.25 s, 75 %)"),
        "{runbook}"
    );
    // The README's window section shows the example's window table and
    // these thresholds beside it.
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let onboarding = readme
        .split("\n## window\n")
        .nth(1)
        .and_then(|rest| rest.split("\n## ").next())
        .expect("README has its window section");
    for shown in [
        "onPayCallback  5s       200ms, 800ms  0s      3s          18s",
        "replays > 0.1 % of requests",
        "> 2.25 s (75 % of 3 s)",
        "503, \"server busy\" (429), or other 5xx answers > 1 %",
        "newly in progress past its 3 s lease",
    ] {
        assert!(onboarding.contains(shown), "README onboarding: {shown}");
    }
    for alert in rules
        .lines()
        .filter_map(|line| line.strip_prefix("      - alert: "))
    {
        assert!(
            onboarding.contains(&format!("`{alert}`")),
            "README onboarding: {alert}"
        );
    }
    // An 18 s window less a 3 s lease: the purge deletes a stuck record
    // before the census samples it twice, so one sample is enough.
    assert!(
        rules.contains("  > 0.01\n") && rules.contains("for: 0m"),
        "{rules}"
    );
    every_selector_is_the_job(&rules, "payment-callback");
    promtool_passes(&dir);
}

/// Every series the rules read is selected by `job="{job}"`, and every
/// aggregation keeps the `job` label.
fn every_selector_is_the_job(rules: &str, job: &str) {
    let expressions = rules.lines().filter(|line| {
        line.contains("_total{") || line.contains("_bucket{") || line.contains("_past_lease{")
    });
    let mut selectors = 0;
    for line in expressions {
        for selector in line.split('{').skip(1) {
            selectors += 1;
            assert!(
                selector.starts_with(&format!("job=\"{job}\",")),
                "not scoped to the job: {line}"
            );
        }
        for aggregation in line.split(" by (").skip(1) {
            assert!(
                aggregation.starts_with("job, "),
                "the job label is dropped: {line}"
            );
        }
    }
    assert!(selectors > 20, "{rules}");
}

/// Two operations with other numbers than the example's: each gets its
/// own thresholds, and the unit tests still prove every alert both ways.
#[test]
fn each_contract_sets_its_own_thresholds() {
    let spec = std::fs::read_to_string(root().join(EXAMPLE).join("openapi.yaml")).unwrap();
    let spec = spec
        .replace("max-processing: 3s ", "max-processing: 4s ")
        .replace(
            "        window: 18s ",
            "        monitoring: {replay-rate-alert: 0.05%}\n        window: 20s ",
        );
    assert!(
        spec.contains("0.05%") && spec.contains("4s "),
        "the example changed"
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("openapi.yaml");
    std::fs::write(&path, spec).unwrap();
    let out = dir.path().join("svc");
    let published = "https://git.example.com/svc/-/blob/main/ops/prometheus/runbook.md";
    let run = idemgen(&[
        "gen",
        path.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--runbook-url",
        published,
        "--job",
        "payments-eu",
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let ops = out.join("ops/prometheus");
    let rules = std::fs::read_to_string(ops.join("alerts.yml")).unwrap();
    // Each link is the published address and the section.
    assert!(
        rules.contains(&format!(
            "runbook_url: \"{published}#idempotencybusinessnearmaxprocessing\"\n"
        )),
        "{rules}"
    );
    assert!(!rules.contains("runbook_url: \"ops/"), "{rules}");
    let runbook = std::fs::read_to_string(ops.join("runbook.md")).unwrap();
    assert!(runbook.contains(&format!("<{published}>")), "{runbook}");
    assert!(
        runbook.contains("`server.max-processing`: 4 s (the alert at 3 s, 75 %)")
            && runbook.contains("`monitoring.replay-rate-alert`: 0.05 %"),
        "{runbook}"
    );
    // An address with a section of its own is refused.
    let refused = idemgen(&[
        "gen",
        path.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--runbook-url",
        "https://example.com/runbook.md#top",
    ]);
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    assert!(rules.contains("  > 0.0005\n"), "{rules}");
    assert!(rules.contains("  > 3\n"), "75 % of 4 s: {rules}");
    assert!(rules.contains("server.max-processing (4 s)"), "{rules}");
    every_selector_is_the_job(&rules, "payments-eu");
    assert!(
        rules.contains(
            "job=\"payments-eu\" (from `idemgen gen --job` or idemgen.toml's `[gen] job`)"
        ),
        "{rules}"
    );
    // A job name that cannot be a label value is refused.
    let refused = idemgen(&[
        "gen",
        path.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--job",
        "pay\"ments",
    ]);
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    assert!(refused.stderr.contains("--job"), "{}", refused.stderr);
    promtool_passes(&ops);
}

/// `[gen] job` in idemgen.toml names the job when `--job` does not; the
/// flag wins over it, and a name that cannot be a label value is refused
/// with the file and line.
#[test]
fn the_job_comes_from_idemgen_toml_unless_the_flag_names_one() {
    let dir = tempfile::tempdir().unwrap();
    let spec = root().join(EXAMPLE).join("openapi.yaml");
    let config = dir.path().join("idemgen.toml");
    let out = dir.path().join("svc");
    let gen_with = |extra: &[&str]| {
        let mut args = vec![
            "gen",
            spec.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
            "--config",
            config.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        idemgen(&args)
    };
    let rules = || std::fs::read_to_string(out.join("ops/prometheus/alerts.yml")).unwrap();

    std::fs::write(&config, "[gen]\njob = \"payments-toml\"\n").unwrap();
    let run = gen_with(&[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    every_selector_is_the_job(&rules(), "payments-toml");
    assert!(
        rules().contains("job=\"payments-toml\" (from `idemgen gen --job` or idemgen.toml's"),
        "{}",
        rules()
    );

    let run = gen_with(&["--job", "payments-flag"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    every_selector_is_the_job(&rules(), "payments-flag");
    assert!(!rules().contains("payments-toml"), "{}", rules());

    std::fs::write(&config, "[gen]\njob = \"pay\\\"ments\"\n").unwrap();
    let refused = gen_with(&[]);
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    assert!(
        refused
            .stderr
            .contains(&format!("{}:2: [gen] job:", config.display())),
        "{}",
        refused.stderr
    );
}
