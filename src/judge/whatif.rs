//! The timeout what-if table: from a run with a long client timeout, the share of attempts that
//! would have exceeded each shorter timeout, read off the latency histograms.
