//! An OTLP trace receiver on loopback, as a collector would be: over gRPC
//! (the collector's own `TraceService`, served by tonic) or HTTP/protobuf
//! (`POST /v1/traces`, decoded with prost). It keeps every span it is
//! sent, with the `service.name` of the resource it came under.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{
    TraceService, TraceServiceServer,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use opentelemetry_proto::tonic::common::v1::KeyValue;
pub use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
pub use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;
use tokio::net::TcpListener;

/// A span as received, with its resource's `service.name`.
#[derive(Clone, Debug)]
pub struct Got {
    pub service: Option<String>,
    pub span: Span,
}

impl Got {
    pub fn kind(&self) -> SpanKind {
        SpanKind::try_from(self.span.kind).unwrap_or(SpanKind::Unspecified)
    }

    pub fn trace_id(&self) -> String {
        hex::encode(&self.span.trace_id)
    }

    pub fn span_id(&self) -> String {
        hex::encode(&self.span.span_id)
    }

    pub fn parent_id(&self) -> String {
        hex::encode(&self.span.parent_span_id)
    }

    /// An attribute's value as text (numbers in decimal).
    pub fn attr(&self, key: &str) -> Option<String> {
        attr(&self.span.attributes, key)
    }

    /// The status code: 0 unset, 1 ok, 2 error.
    pub fn status(&self) -> i32 {
        self.span.status.as_ref().map_or(0, |s| s.code)
    }

    pub fn events(&self, name: &str) -> Vec<&opentelemetry_proto::tonic::trace::v1::span::Event> {
        self.span.events.iter().filter(|e| e.name == name).collect()
    }
}

pub fn attr(attributes: &[KeyValue], key: &str) -> Option<String> {
    let value = attributes.iter().find(|kv| kv.key == key)?.value.as_ref()?;
    match value.value.as_ref()? {
        Any::StringValue(s) => Some(s.clone()),
        Any::IntValue(i) => Some(i.to_string()),
        Any::BoolValue(b) => Some(b.to_string()),
        Any::DoubleValue(d) => Some(d.to_string()),
        other => Some(format!("{other:?}")),
    }
}

#[derive(Clone, Default)]
struct Spans(Arc<Mutex<Vec<Got>>>);

impl Spans {
    fn take(&self, request: ExportTraceServiceRequest) {
        let mut all = self.0.lock().unwrap();
        for resource_spans in request.resource_spans {
            let service = (resource_spans.resource.as_ref())
                .and_then(|r| attr(&r.attributes, "service.name"));
            for scope in resource_spans.scope_spans {
                for span in scope.spans {
                    all.push(Got {
                        service: service.clone(),
                        span,
                    });
                }
            }
        }
    }
}

pub struct Receiver {
    addr: SocketAddr,
    spans: Spans,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.task.abort();
    }
}

#[tonic::async_trait]
impl TraceService for Spans {
    async fn export(
        &self,
        request: tonic::Request<ExportTraceServiceRequest>,
    ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
        self.take(request.into_inner());
        Ok(tonic::Response::new(ExportTraceServiceResponse {
            partial_success: None,
        }))
    }
}

impl Receiver {
    /// OTLP over gRPC.
    pub async fn grpc() -> Receiver {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let spans = Spans::default();
        let service = TraceServiceServer::new(spans.clone());
        let task = tokio::spawn(async move {
            let incoming = tonic::transport::server::TcpIncoming::from(listener);
            let _ = tonic::transport::Server::builder()
                .add_service(service)
                .serve_with_incoming(incoming)
                .await;
        });
        Receiver { addr, spans, task }
    }

    /// OTLP over HTTP/protobuf, at `/v1/traces`.
    pub async fn http() -> Receiver {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let spans = Spans::default();
        let kept = spans.clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    return;
                };
                let kept = kept.clone();
                tokio::spawn(async move {
                    let service =
                        service_fn(move |request: hyper::Request<hyper::body::Incoming>| {
                            let kept = kept.clone();
                            async move {
                                let path_ok = request.uri().path() == "/v1/traces";
                                let body = match request.into_body().collect().await {
                                    Ok(body) => body.to_bytes(),
                                    Err(_) => Bytes::new(),
                                };
                                let status = match ExportTraceServiceRequest::decode(body) {
                                    Ok(decoded) if path_ok => {
                                        kept.take(decoded);
                                        200
                                    }
                                    _ => 400,
                                };
                                let answer = ExportTraceServiceResponse::default().encode_to_vec();
                                let mut response =
                                    hyper::Response::new(Full::new(Bytes::from(answer)));
                                *response.status_mut() =
                                    hyper::StatusCode::from_u16(status).unwrap();
                                response.headers_mut().insert(
                                    "content-type",
                                    hyper::header::HeaderValue::from_static(
                                        "application/x-protobuf",
                                    ),
                                );
                                Ok::<_, std::convert::Infallible>(response)
                            }
                        });
                    let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                        .serve_connection(TokioIo::new(tcp), service)
                        .await;
                });
            }
        });
        Receiver { addr, spans, task }
    }

    /// The base URL, as `OTEL_EXPORTER_OTLP_ENDPOINT` takes it.
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn spans(&self) -> Vec<Got> {
        self.spans.0.lock().unwrap().clone()
    }

    /// Waits (up to `limit`) until `enough` holds for the spans received.
    pub async fn until(&self, limit: Duration, enough: impl Fn(&[Got]) -> bool) -> Vec<Got> {
        let deadline = Instant::now() + limit;
        loop {
            let spans = self.spans();
            if enough(&spans) || Instant::now() > deadline {
                return spans;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }
}
