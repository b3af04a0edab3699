//! The background linter behind pushed diagnostics.
//!
//! One worker thread lints; the server loop keeps answering while it does.
//! Jobs queued while the worker is busy coalesce: of several for one
//! document only the newest is linted. Results carry the document version
//! they were computed for, and the server drops any that a newer edit has
//! overtaken, so stale diagnostics are never published over fresh ones.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use crossbeam_channel::{Receiver, Sender, unbounded};

use super::diagnostics::{Checked, check};
use idemgen_lint::LintOptions;

pub struct Job {
    pub uri: lsp_types::Uri,
    pub version: i32,
    pub path: PathBuf,
    /// Every open document's text by path.
    pub overlay: Arc<HashMap<PathBuf, String>>,
    pub options: Arc<LintOptions>,
}

pub struct Outcome {
    pub uri: String,
    pub version: i32,
    pub checked: Checked,
}

pub struct Linter {
    jobs: Sender<Job>,
    pub results: Receiver<Outcome>,
}

impl Linter {
    pub fn start() -> Linter {
        let (jobs, queue) = unbounded::<Job>();
        let (done, results) = unbounded::<Outcome>();
        std::thread::Builder::new()
            .name("lsp-linter".into())
            .spawn(move || work(&queue, &done))
            .expect("spawning the linter thread");
        Linter { jobs, results }
    }

    pub fn submit(&self, job: Job) {
        let _ = self.jobs.send(job);
    }
}

fn work(queue: &Receiver<Job>, done: &Sender<Outcome>) {
    while let Ok(first) = queue.recv() {
        // Everything queued meanwhile: keep only the newest job per document.
        let mut newest: Vec<Job> = vec![first];
        while let Ok(job) = queue.try_recv() {
            newest.retain(|queued| queued.uri != job.uri);
            newest.push(job);
        }
        for job in newest {
            // A bug in a rule must not take the server down with it.
            let checked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                check(&job.uri, &job.path, &job.overlay, &job.options)
            }))
            .unwrap_or(None);
            let outcome = Outcome {
                uri: job.uri.as_str().to_string(),
                version: job.version,
                checked,
            };
            if done.send(outcome).is_err() {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(uri: &str, version: i32) -> Job {
        Job {
            uri: std::str::FromStr::from_str(&format!("file:///nonexistent/{uri}.yaml")).unwrap(),
            version,
            path: PathBuf::from(format!("/nonexistent/{uri}.yaml")),
            overlay: Arc::default(),
            options: Arc::default(),
        }
    }

    #[test]
    fn of_the_jobs_queued_meanwhile_only_the_newest_per_document_is_linted() {
        let (jobs, queue) = unbounded();
        let (done, results) = unbounded();
        for version in 1..=5 {
            jobs.send(job("a", version)).unwrap();
        }
        jobs.send(job("b", 1)).unwrap();
        jobs.send(job("a", 6)).unwrap();
        drop(jobs);
        work(&queue, &done);
        drop(done);
        let linted: Vec<(String, i32)> = results
            .iter()
            .map(|outcome| (outcome.uri, outcome.version))
            .collect();
        assert_eq!(
            linted,
            [
                ("file:///nonexistent/b.yaml".to_string(), 1),
                ("file:///nonexistent/a.yaml".to_string(), 6)
            ]
        );
    }
}
