//! The error table's gRPC form (`super::table`): an error as the gRPC
//! status its row names, with a `google.rpc.ErrorInfo` detail (domain
//! `a2a-protocol.org`, spec §5.4); an HTTP+JSON `google.rpc.Status` as the
//! gRPC status it says; and the canonical code names both ways.

use serde_json::Value;
use tonic::{Code, Status};
use tonic_types::{ErrorDetails, StatusExt};

use super::table::{for_code, Mapped};

/// The domain of the `google.rpc.ErrorInfo` details (spec §5.4).
const DOMAIN: &str = "a2a-protocol.org";

/// A JSON-RPC error code as the gRPC status the one table names.
pub fn status_from_code(code: i64, message: String, data: Option<&Value>) -> Status {
    status_from_row(for_code(code), message, data)
}

/// An error as its row says it in gRPC, with its `google.rpc.ErrorInfo`
/// (the error's data, when it is an object, as its metadata).
pub fn status_from_row(mapped: Mapped, message: String, data: Option<&Value>) -> Status {
    let metadata = metadata_of(data);
    let details = ErrorDetails::with_error_info(mapped.reason, DOMAIN, metadata);
    Status::with_error_details(code_from_name(mapped.grpc), message, details)
}

/// The gRPC codes by their canonical names (the table's spelling).
const CODES: [(&str, Code); 17] = [
    ("OK", Code::Ok),
    ("CANCELLED", Code::Cancelled),
    ("UNKNOWN", Code::Unknown),
    ("INVALID_ARGUMENT", Code::InvalidArgument),
    ("DEADLINE_EXCEEDED", Code::DeadlineExceeded),
    ("NOT_FOUND", Code::NotFound),
    ("ALREADY_EXISTS", Code::AlreadyExists),
    ("PERMISSION_DENIED", Code::PermissionDenied),
    ("RESOURCE_EXHAUSTED", Code::ResourceExhausted),
    ("FAILED_PRECONDITION", Code::FailedPrecondition),
    ("ABORTED", Code::Aborted),
    ("OUT_OF_RANGE", Code::OutOfRange),
    ("UNIMPLEMENTED", Code::Unimplemented),
    ("INTERNAL", Code::Internal),
    ("UNAVAILABLE", Code::Unavailable),
    ("DATA_LOSS", Code::DataLoss),
    ("UNAUTHENTICATED", Code::Unauthenticated),
];

/// The JSON-RPC code of an agent's gRPC status: its ErrorInfo's reason,
/// else its code (the one table).
pub fn code_of(status: &tonic::Status) -> i32 {
    let details = status.get_error_details();
    let reason = details.error_info().map(|i| i.reason.as_str());
    super::table::code_for_rest(reason, Some(code_name(status.code())))
}

/// The gRPC code of a canonical code name.
pub fn code_from_name(name: &str) -> Code {
    (CODES.iter().find(|(n, _)| *n == name)).map_or(Code::Unknown, |(_, code)| *code)
}

/// The canonical name of a gRPC code.
pub fn code_name(code: Code) -> &'static str {
    (CODES.iter().find(|(_, c)| *c == code)).map_or("UNKNOWN", |(name, _)| name)
}

/// A `google.rpc.Status` in JSON (an HTTP+JSON answer's error,
/// `{"error": {"code", "status", "message", "details"}}`) as the gRPC
/// status it says, its ErrorInfo kept. `None`: not one.
pub fn status_from_rest(status: &Value) -> Option<Status> {
    let error = status.get("error")?.as_object()?;
    let code = code_from_name(
        error
            .get("status")
            .and_then(Value::as_str)
            .unwrap_or("UNKNOWN"),
    );
    let message = error.get("message").and_then(Value::as_str).unwrap_or("");
    let info = (error.get("details").and_then(Value::as_array).into_iter())
        .flatten()
        .find(|d| d.get("reason").is_some());
    let Some(info) = info else {
        return Some(Status::new(code, message));
    };
    let text = |key: &str| info.get(key).and_then(Value::as_str).unwrap_or("");
    let metadata = metadata_of(info.get("metadata"));
    let details = ErrorDetails::with_error_info(text("reason"), text("domain"), metadata);
    Some(Status::with_error_details(code, message, details))
}

/// An ErrorInfo's metadata: an object's members, strings as they are and
/// anything else as its JSON.
fn metadata_of(object: Option<&Value>) -> std::collections::HashMap<String, String> {
    let members = object.and_then(Value::as_object).into_iter().flatten();
    members
        .map(|(k, v)| {
            let text = v.as_str().map_or_else(|| v.to_string(), str::to_string);
            (k.clone(), text)
        })
        .collect()
}
