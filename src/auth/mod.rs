//! Authentication per the security schemes the gateway publishes, and
//! authorization per skill and method.

pub mod jwt;
