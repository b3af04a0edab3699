//! Futures boxed where they are made, for the few large ones on a
//! request's path.
//!
//! A request's future is as large as the largest state of everything it
//! awaits inline, and axum moves a handler's future whole into its box
//! once per request: a `memcpy` of every byte, whatever the request does.
//! sqlx's `acquire` future alone (it holds the connect path) is about
//! 8.7 KB. Awaited through a box, such a future costs the request's future
//! a pointer. `Box::pin(future)` would copy it too (made on the stack,
//! then moved); [`in_place`] allocates first and makes the future in the
//! allocation, which the compiler does without a copy (callgrind shows the
//! `memcpy` gone).

use std::pin::Pin;

/// The future `make` returns, made in a box of its own.
pub(crate) fn in_place<F>(make: impl FnOnce() -> F) -> Pin<Box<F>> {
    let slot = Box::<F>::new_uninit();
    Box::into_pin(Box::write(slot, make()))
}
