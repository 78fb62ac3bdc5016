//! The standalone reference hub.

fn main() {}
