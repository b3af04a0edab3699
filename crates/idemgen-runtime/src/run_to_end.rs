//! Each request runs to its end even when its client goes away.
//!
//! A client whose timeout (`client.timeout`) is shorter than the server's
//! work closes the connection, and hyper then drops the request's future:
//! the work would stop midway, its claim held until the lease ends, the
//! client's retry told "in progress" until then and run again after.
//! [`RunToEnd`] hands a request dropped before its answer to a task of its
//! own, where it finishes and stores its answer, which the retry gets as a
//! replay: the behaviour the window math assumes. A request that ends with
//! its connection (nearly all) costs no task, only its box.

use std::convert::Infallible;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

type Answer = Result<Response, Infallible>;

/// A hyper service whose requests [`RunToEnd`].
#[derive(Clone)]
pub(crate) struct RunToEndService<S>(pub(crate) S);

impl<S, R> hyper::service::Service<R> for RunToEndService<S>
where
    S: hyper::service::Service<R, Response = Response, Error = Infallible>,
    S::Future: Send + 'static,
{
    type Response = Response;
    type Error = Infallible;
    type Future = RunToEnd;

    fn call(&self, request: R) -> RunToEnd {
        RunToEnd(Some(Box::pin(self.0.call(request))))
    }
}

/// A request's future that, dropped before its answer, is finished on a
/// task of its own; a panic in it is answered 500.
pub(crate) struct RunToEnd(Option<Pin<Box<dyn Future<Output = Answer> + Send>>>);

impl Future for RunToEnd {
    type Output = Answer;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Answer> {
        let request = self
            .0
            .as_mut()
            .expect("a request's future is not polled after its answer");
        // Caught here as the request's own task would have caught it, so
        // the client gets an answer and the connection stays up.
        let answer = match std::panic::catch_unwind(AssertUnwindSafe(|| request.as_mut().poll(cx))) {
            Ok(answer) => ready!(answer),
            Err(_) => {
                tracing::error!("a request panicked before its answer");
                Ok(StatusCode::INTERNAL_SERVER_ERROR.into_response())
            }
        };
        self.0 = None;
        Poll::Ready(answer)
    }
}

impl Drop for RunToEnd {
    fn drop(&mut self) {
        let Some(request) = self.0.take() else {
            return;
        };
        // Outside a runtime (it is shutting down) there is nothing to run
        // the rest on: dropped, it rolls back and releases its claim.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let _ = request.await;
            });
        }
    }
}
