//! Traffic control: rate limits (governor) and concurrency limits, each
//! answering quickly with 429/503 and a JSON-RPC error rather than letting
//! latency grow without bound.

pub mod concurrency;
pub mod rate;
