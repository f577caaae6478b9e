//! Frame views and video conventions shared by every layer: luma and chroma planes in host or
//! device memory, sample layouts, geometry errors ([`frame`]) and the YUV -> RGB conversion of
//! a stream's colorimetry ([`colour`]).

pub mod colour;
pub mod frame;
