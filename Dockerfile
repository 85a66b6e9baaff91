# a2a-gateway container image: build with the Rust toolchain, run from a
# minimal non-root runtime image.
#   docker build -t a2a-gateway .
#   docker run -p 8080:8080 -p 9090:9090 -v $PWD/config:/etc/a2a-gateway:ro a2a-gateway
# Ports: 8080 proxy (A2A JSON-RPC + Agent Card), 9090 admin (/healthz, /readyz).

FROM rust:1-slim-bookworm AS build
WORKDIR /src
COPY Cargo.toml Cargo.lock ./
COPY src ./src
RUN cargo build --release --locked \
    && cp target/release/a2a-gateway /a2a-gateway

FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /a2a-gateway /usr/local/bin/a2a-gateway
COPY config/gateway.toml /etc/a2a-gateway/gateway.toml
USER nonroot
EXPOSE 8080 9090
ENTRYPOINT ["/usr/local/bin/a2a-gateway"]
# Inside a container the listeners must bind every interface; the file's
# other settings apply. Plain HTTP here assumes TLS ends at the ingress or
# mesh; mount a config with [tls] (and drop --plaintext) to terminate TLS.
CMD ["run", "--config", "/etc/a2a-gateway/gateway.toml", "--listen", "0.0.0.0:8080", "--admin-listen", "0.0.0.0:9090", "--plaintext"]
