//! Each A2A version against the pivot (1.0), as one row of a table: how
//! a client's params and an agent's result in that version are read into
//! the pivot, and how the pivot is written out in it. A call between any
//! two versions is the client's row in and the agent's row out; a new
//! version is one row (and its module), not a match arm in four places.

use serde_json::Value;

use super::v01::{self, agent as v01_agent};
use super::v03::calls as v03_calls;
use super::AgentTask;
use super::{v10, Result};
use crate::a2a::{Family, Version};

/// One version's readers into the pivot and writers out of it.
pub struct VersionRow {
    /// A client's params, read into the pivot.
    pub params_in: fn(Family, Value, AgentTask<'_>) -> Result<Value>,
    /// The pivot's params, written for an agent.
    pub params_out: fn(Family, Value) -> Result<Value>,
    /// An agent's result, read into the pivot.
    pub result_in: fn(Family, Value) -> Result<Value>,
    /// The pivot's result, written for a client (a 0.1 client's own task
    /// id given).
    pub result_out: fn(Family, Value, &str) -> Result<Value>,
}

static V0_1: VersionRow = VersionRow {
    params_in: v01::params_in,
    params_out: v01_agent::params_out,
    result_in: v01_agent::result_in,
    result_out: v01::result_out,
};

static V0_3: VersionRow = VersionRow {
    params_in: v03_calls::params_in,
    params_out: v03_calls::params_out,
    result_in: v03_calls::result_in,
    result_out: v03_calls::result_out,
};

/// 1.0 is the pivot: its params pass as they are, its results are checked.
static V1_0: VersionRow = VersionRow {
    params_in: v10::params_in,
    params_out: |_, pivot| Ok(pivot),
    result_in: v10::result_in,
    result_out: |_, pivot, _| Ok(pivot),
};

/// `version`'s row.
pub fn row(version: Version) -> &'static VersionRow {
    match version {
        Version::V0_1 => &V0_1,
        Version::V0_3 => &V0_3,
        Version::V1_0 => &V1_0,
    }
}
