//! `idemgen window`: the review table and SVG timeline of the window math
//! (which lives in the spec crate, beside the contract it reads).

pub mod render;
pub mod svg;
