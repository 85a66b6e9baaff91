//! Builds the published card from the gateway's own settings and the
//! upstreams' cards. (Being written.)
