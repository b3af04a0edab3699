//! The background linter behind pushed diagnostics.
//!
//! One worker thread lints; the server loop keeps answering while it does.
//! Jobs queued while the worker is busy coalesce: of several for one
//! document only the newest waits, and the waiting jobs all read the
//! newest snapshot of the open documents, so edits during a long lint
//! cost no memory per edit. Results carry the document version they were
//! computed for, and the server drops any that a newer edit has
//! overtaken, so stale diagnostics are never published over fresh ones.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

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
    queue: Arc<Queue>,
    pub results: Receiver<Outcome>,
}

impl Linter {
    pub fn start() -> Linter {
        let queue = Arc::new(Queue::default());
        let (done, results) = unbounded::<Outcome>();
        let worker_queue = Arc::clone(&queue);
        std::thread::Builder::new()
            .name("lsp-linter".into())
            .spawn(move || work(&worker_queue, &done))
            .expect("spawning the linter thread");
        Linter { queue, results }
    }

    pub fn submit(&self, job: Job) {
        self.queue.push(job);
    }
}

impl Drop for Linter {
    fn drop(&mut self) {
        self.queue.close();
    }
}

/// The jobs waiting for the worker.
#[derive(Default)]
struct Queue {
    waiting: Mutex<Waiting>,
    ready: Condvar,
}

#[derive(Default)]
struct Waiting {
    jobs: Vec<Job>,
    closed: bool,
}

impl Queue {
    fn lock(&self) -> MutexGuard<'_, Waiting> {
        self.waiting
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Queues `job` in place of any waiting one of its document. The
    /// others read `job`'s snapshot from now on: it is newer, and holds
    /// their own document's text at the version they carry unless that
    /// changed too (then their job is replaced as well, or its result is
    /// dropped as stale).
    fn push(&self, job: Job) {
        let mut waiting = self.lock();
        waiting.jobs.retain(|queued| queued.uri != job.uri);
        for queued in &mut waiting.jobs {
            queued.overlay = Arc::clone(&job.overlay);
        }
        waiting.jobs.push(job);
        self.ready.notify_one();
    }

    /// Every waiting job, oldest first; `None` once closed.
    fn take(&self) -> Option<Vec<Job>> {
        let mut waiting = self.lock();
        loop {
            if !waiting.jobs.is_empty() {
                return Some(std::mem::take(&mut waiting.jobs));
            }
            if waiting.closed {
                return None;
            }
            waiting = self
                .ready
                .wait(waiting)
                .unwrap_or_else(|poisoned| poisoned.into_inner());
        }
    }

    fn close(&self) {
        self.lock().closed = true;
        self.ready.notify_all();
    }
}

fn work(queue: &Queue, done: &Sender<Outcome>) {
    while let Some(jobs) = queue.take() {
        for job in jobs {
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
        let queue = Queue::default();
        let (done, results) = unbounded();
        for version in 1..=5 {
            queue.push(job("a", version));
        }
        queue.push(job("b", 1));
        queue.push(job("a", 6));
        queue.close();
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

    /// Each job carries a snapshot of every open document's text. Edits
    /// that arrive during one long lint must not keep a snapshot each: of
    /// the jobs waiting, all but the newest snapshot are let go.
    #[test]
    fn jobs_waiting_for_a_long_lint_hold_one_snapshot_of_the_texts() {
        let linter = Linter::start();
        let paths: String = (0..1_500)
            .map(|at| {
                format!("  /p{at}:\n    post:\n      responses: {{'200': {{description: ok}}}}\n")
            })
            .collect();
        let slow = Job {
            overlay: Arc::new(HashMap::from([(
                PathBuf::from("/nonexistent/slow.yaml"),
                format!("openapi: 3.1.0\ninfo: {{title: t, version: '1'}}\npaths:\n{paths}"),
            )])),
            ..job("slow", 1)
        };
        linter.submit(slow);
        // The worker has taken the slow job before any other arrives (a
        // job pushed first would hand it a snapshot without its text).
        while !linter.queue.lock().jobs.is_empty() {
            std::thread::yield_now();
        }
        // One edit each to 50 documents: 50 jobs wait, each with a
        // snapshot of its own until the next edit hands it the newer one.
        let mut snapshots = Vec::new();
        for version in 1..=50 {
            let overlay = Arc::new(HashMap::from([(
                PathBuf::from("/nonexistent/a.yaml"),
                "x: 1\n".repeat(1_000),
            )]));
            snapshots.push(Arc::downgrade(&overlay));
            linter.submit(Job {
                overlay,
                ..job(&format!("d{version}"), version)
            });
        }
        let held = snapshots
            .iter()
            .filter(|snapshot| snapshot.strong_count() > 0)
            .count();
        // Counted while the slow lint still ran, so with all 50 waiting.
        assert!(linter.results.is_empty(), "the slow lint ended too soon");
        assert_eq!(held, 1, "{held} snapshots held by waiting jobs");
        // And every waiting job is still linted.
        let mut linted = std::collections::HashSet::new();
        while linted.len() < 51 {
            let outcome = linter
                .results
                .recv_timeout(std::time::Duration::from_secs(60))
                .expect("the waiting jobs are linted");
            linted.insert(outcome.uri);
        }
    }
}
