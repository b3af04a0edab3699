//! `idemgen.toml`: project defaults and rule severities.
//!
//! ```toml
//! profile = "retry-after"          # default status-code profile
//!
//! [store]
//! dialect = "mysql"                # default store.dialect
//!
//! [rules]
//! missing-idempotency = "error"    # error | warning | info | off
//! replay-alert-too-high = "off"
//!
//! [overlays]                       # spec = its Overlay documents, in order
//! "api/openapi.yaml" = ["api/idempotency.overlay.yaml"]
//!
//! [gen]
//! job = "payments"                 # the alert rules' Prometheus job
//! ```
//!
//! Paths in `[overlays]` are relative to the configuration file.
//!
//! The file is the one given with `--config`, else the first `idemgen.toml`
//! in the working directory or one of its parents. Command-line flags win
//! over it. An unknown key, rule id or value is an error that names it.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;

use crate::{LintOptions, RULES};
use idemgen_diagnostics::Severity;
use idemgen_spec::contract::model::{Defaults, Dialect};
use idemgen_spec::contract::profile::Profile;
use idemgen_spec::contract::suggest::closest;

/// The configuration file's name.
pub const FILE_NAME: &str = "idemgen.toml";

/// Levels a rule can be set to.
pub const LEVELS: [&str; 4] = ["error", "warning", "info", "off"];

/// A loaded configuration, ready to turn into [`LintOptions`].
#[derive(Debug, Clone, Default)]
pub struct Config {
    /// The file it came from; `None` when no file was used.
    pub path: Option<PathBuf>,
    pub defaults: Defaults,
    /// Rule id → severity; `None` turns the rule off.
    pub severities: HashMap<String, Option<Severity>>,
    /// Spec (absolute, normalised path) → the Overlay documents applied to
    /// it before it is read, in order.
    pub overlays: HashMap<PathBuf, Vec<PathBuf>>,
    /// `[gen] job`: the `job` label `gen`'s alert rules select (`--job`
    /// wins over it).
    pub gen_job: Option<String>,
}

impl Config {
    /// The Overlay documents `[overlays]` lists for `spec`.
    pub fn overlays_for(&self, spec: &Path) -> &[PathBuf] {
        overlays_for(&self.overlays, spec)
    }
}

/// A configuration that cannot be used; the message names the file, the
/// line and the offending key or value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError(pub String);

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ConfigError {}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ConfigFile {
    profile: Option<Spanned<String>>,
    store: Option<StoreSection>,
    #[serde(default)]
    rules: BTreeMap<Spanned<String>, Spanned<String>>,
    #[serde(default)]
    overlays: BTreeMap<String, Vec<String>>,
    #[serde(rename = "gen")]
    generate: Option<GenSection>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StoreSection {
    dialect: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GenSection {
    job: Option<Spanned<String>>,
}

impl Config {
    /// The lint options this configuration asks for.
    pub fn lint_options(&self) -> LintOptions {
        LintOptions {
            defaults: self.defaults,
            severities: self.severities.clone(),
            overlays: self.overlays.clone(),
            ..LintOptions::default()
        }
    }
}

/// The Overlay documents an `[overlays]` table lists for `spec`.
pub fn overlays_for<'o>(
    overlays: &'o HashMap<PathBuf, Vec<PathBuf>>,
    spec: &Path,
) -> &'o [PathBuf] {
    let key = idemgen_spec::normalize_absolute(spec);
    overlays.get(&key).map_or(&[], Vec::as_slice)
}

/// The first `idemgen.toml` in `start` or one of its parents.
pub fn discover(start: &Path) -> Option<PathBuf> {
    let start = std::path::absolute(start).unwrap_or_else(|_| start.to_path_buf());
    start
        .ancestors()
        .map(|dir| dir.join(FILE_NAME))
        .find(|candidate| candidate.is_file())
}

/// Where the configuration comes from, as every command's `--config` and
/// `--no-config` say.
#[derive(Debug, Clone, Default)]
pub enum Source {
    /// The first `idemgen.toml` in the working directory or its parents.
    #[default]
    Discover,
    /// This file (`--config FILE`).
    File(PathBuf),
    /// None at all (`--no-config`): the built-in defaults.
    Disabled,
}

/// The configuration `source` names.
pub fn resolve(source: &Source) -> Result<Config, ConfigError> {
    match source {
        Source::Discover => for_working_directory(),
        Source::File(path) => load(path),
        Source::Disabled => Ok(Config::default()),
    }
}

/// The configuration that applies in the working directory: the first
/// `idemgen.toml` there or above, else the defaults.
pub fn for_working_directory() -> Result<Config, ConfigError> {
    let here = std::env::current_dir()
        .map_err(|error| ConfigError(format!("no working directory: {error}")))?;
    match discover(&here) {
        Some(path) => load(&path),
        None => Ok(Config::default()),
    }
}

/// Reads and checks a configuration file.
pub fn load(path: &Path) -> Result<Config, ConfigError> {
    let display = path.display().to_string();
    let text = read_bounded(path).map_err(|error| {
        ConfigError(format!("{display}: cannot read the configuration: {error}"))
    })?;
    let mut config = parse(&text, &display)?;
    let dir = std::path::absolute(path)
        .ok()
        .and_then(|absolute| absolute.parent().map(Path::to_path_buf))
        .unwrap_or_default();
    config.overlays = config
        .overlays
        .into_iter()
        .map(|(spec, overlays)| {
            let within = |relative: PathBuf| idemgen_spec::normalize(&dir.join(relative));
            (within(spec), overlays.into_iter().map(within).collect())
        })
        .collect();
    config.path = Some(path.to_path_buf());
    Ok(config)
}

/// The most a configuration file may hold: a few hundred lines are 10 KiB.
const MAX_CONFIG_BYTES: u64 = 1024 * 1024;

/// Reads at most one byte past [`MAX_CONFIG_BYTES`], so that a device or
/// a pipe named as the configuration (`--config /dev/zero`) cannot fill
/// memory.
fn read_bounded(path: &Path) -> std::io::Result<String> {
    use std::io::Read;
    let mut bytes = Vec::new();
    std::fs::File::open(path)?
        .take(MAX_CONFIG_BYTES + 1)
        .read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_CONFIG_BYTES {
        return Err(std::io::Error::other(format!(
            "it is larger than the {} KiB limit of a configuration file",
            MAX_CONFIG_BYTES / 1024
        )));
    }
    String::from_utf8(bytes)
        .map_err(|_| std::io::Error::other("it is not UTF-8 text; save it as UTF-8"))
}

/// Checks configuration text; `display` names the file in messages.
pub fn parse(text: &str, display: &str) -> Result<Config, ConfigError> {
    let file: ConfigFile = toml::from_str(text).map_err(|error| {
        ConfigError(format!(
            "{display}: invalid configuration: {}\n  help: the keys are `profile`, `[store] dialect`, `[rules] <rule-id> = \"error\" | \"warning\" | \"info\" | \"off\"` and `[overlays] \"spec.yaml\" = [\"overlay.yaml\"]` and `[gen] job`",
            error.to_string().trim_end()
        ))
    })?;
    let at = |span: std::ops::Range<usize>| {
        let line = text[..span.start.min(text.len())].matches('\n').count() + 1;
        format!("{display}:{line}")
    };
    let mut config = Config::default();
    if let Some(profile) = &file.profile {
        config.defaults.profile = Some(Profile::parse(profile.get_ref()).ok_or_else(|| {
            ConfigError(format!(
                "{}: unknown profile `{}`{}; the profiles are {}",
                at(profile.span()),
                profile.get_ref(),
                did_you_mean(profile.get_ref(), Profile::NAMES),
                quoted(&Profile::NAMES)
            ))
        })?);
    }
    if let Some(dialect) = file.store.as_ref().and_then(|store| store.dialect.as_ref()) {
        config.defaults.dialect = Some(Dialect::parse(dialect.get_ref()).ok_or_else(|| {
            ConfigError(format!(
                "{}: unknown store.dialect `{}`{}; the dialects are {}",
                at(dialect.span()),
                dialect.get_ref(),
                did_you_mean(dialect.get_ref(), Dialect::NAMES),
                quoted(&Dialect::NAMES)
            ))
        })?);
    }
    for (id, level) in &file.rules {
        check_rule_id(id.get_ref())
            .map_err(|why| ConfigError(format!("{}: [rules] {why}", at(id.span()))))?;
        let severity = parse_level(level.get_ref()).map_err(|why| {
            ConfigError(format!(
                "{}: [rules] {}: {why}",
                at(level.span()),
                id.get_ref()
            ))
        })?;
        config.severities.insert(id.get_ref().clone(), severity);
    }
    if let Some(job) = file
        .generate
        .as_ref()
        .and_then(|section| section.job.as_ref())
    {
        check_job_label(job.get_ref())
            .map_err(|why| ConfigError(format!("{}: [gen] job: {why}", at(job.span()))))?;
        config.gen_job = Some(job.get_ref().clone());
    }
    // Made absolute by `load`, which knows the file's directory.
    config.overlays = file
        .overlays
        .into_iter()
        .map(|(spec, overlays)| {
            (
                PathBuf::from(spec),
                overlays.into_iter().map(PathBuf::from).collect(),
            )
        })
        .collect();
    Ok(config)
}

/// `Ok` when `job` can be the `job` label value the alert rules select
/// (`[gen] job`, `gen --job`): they write it between double quotes.
pub fn check_job_label(job: &str) -> Result<(), String> {
    if job.is_empty() || job.contains(['"', '\\', '{', '}']) || job.contains(char::is_control) {
        return Err(format!(
            "`{}` is not a job name: give the name of the Prometheus scrape job that scrapes \
             this service (its `job` label), without quotes, backslashes, braces or control \
             characters",
            job.escape_debug()
        ));
    }
    Ok(())
}

/// `Ok` when a rule has this id; else a message that suggests the closest.
pub fn check_rule_id(id: &str) -> Result<(), String> {
    if crate::rule(id).is_some() {
        return Ok(());
    }
    Err(format!(
        "unknown rule id `{id}`{}; `idemgen rules` lists them",
        did_you_mean(id, RULES.iter().map(|rule| rule.id))
    ))
}

/// `error`, `warning`, `info` or `off` (`None`).
pub fn parse_level(text: &str) -> Result<Option<Severity>, String> {
    match text {
        "error" => Ok(Some(Severity::Error)),
        "warning" => Ok(Some(Severity::Warning)),
        "info" => Ok(Some(Severity::Info)),
        "off" => Ok(None),
        _ => Err(format!(
            "unknown level `{text}`{}; use {}",
            did_you_mean(text, LEVELS),
            quoted(&LEVELS)
        )),
    }
}

/// `RULE=LEVEL`, as `--severity` takes it.
pub fn parse_rule_level(text: &str) -> Result<(String, Option<Severity>), String> {
    let Some((id, level)) = text.split_once('=') else {
        return Err(format!(
            "`{text}` is not RULE=LEVEL, e.g. `missing-idempotency=error`"
        ));
    };
    let id = id.trim();
    check_rule_id(id)?;
    Ok((id.to_string(), parse_level(level.trim())?))
}

fn did_you_mean<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> String {
    closest(word, candidates)
        .map(|name| format!(" (did you mean `{name}`?)"))
        .unwrap_or_default()
}

fn quoted(names: &[&str]) -> String {
    names
        .iter()
        .map(|name| format!("`{name}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_every_key() {
        let config = parse(
            "profile = \"stripe\"\n[store]\ndialect = \"mysql\"\n[rules]\nmissing-idempotency = \"off\"\nwindow-too-short = \"warning\"\n",
            "idemgen.toml",
        )
        .unwrap();
        assert_eq!(config.defaults.profile, Some(Profile::Stripe));
        assert_eq!(config.defaults.dialect, Some(Dialect::Mysql));
        assert_eq!(config.severities["missing-idempotency"], None);
        assert_eq!(
            config.severities["window-too-short"],
            Some(Severity::Warning)
        );
    }

    #[test]
    fn unknown_rule_ids_keys_and_levels_are_named() {
        let error = parse("[rules]\nwindow-to-short = \"off\"\n", "idemgen.toml").unwrap_err();
        assert!(error.0.contains("idemgen.toml:2"), "{error}");
        assert!(error.0.contains("`window-to-short`"), "{error}");
        assert!(
            error.0.contains("did you mean `window-too-short`"),
            "{error}"
        );
        let error = parse("profil = \"stripe\"\n", "idemgen.toml").unwrap_err();
        assert!(error.0.contains("profil"), "{error}");
        let error = parse("[store]\ntable = \"x\"\n", "idemgen.toml").unwrap_err();
        assert!(error.0.contains("table"), "{error}");
        let error = parse("[rules]\nwindow-too-short = \"warn\"\n", "idemgen.toml").unwrap_err();
        assert!(error.0.contains("did you mean `warning`"), "{error}");
    }

    #[test]
    fn the_gen_job_is_read_and_checked() {
        let config = parse("[gen]\njob = \"payments\"\n", "idemgen.toml").unwrap();
        assert_eq!(config.gen_job.as_deref(), Some("payments"));
        assert_eq!(parse("", "idemgen.toml").unwrap().gen_job, None);
        let error = parse("[gen]\njob = \"pay{ments\"\n", "idemgen.toml").unwrap_err();
        assert!(error.0.starts_with("idemgen.toml:2: [gen] job:"), "{error}");
        assert!(error.0.contains("without quotes"), "{error}");
        let error = parse("[gen]\njobs = \"payments\"\n", "idemgen.toml").unwrap_err();
        assert!(error.0.contains("jobs"), "{error}");
    }
}
