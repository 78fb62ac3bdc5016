//! hubload's integration tests: one binary, one module per area.
