//! A mock target for deterministic engine tests.
