# a2a-gateway container image: build with the Rust toolchain, run from a
# minimal non-root runtime image (distroless: no shell, no package manager).
#   docker build -t a2a-gateway .
#   docker run -p 8080:8080 -p 9090:9090 -v $PWD/config:/etc/a2a-gateway:ro a2a-gateway
# Ports: 8080 proxy (A2A JSON-RPC + Agent Card), 9090 admin (/healthz, /readyz).
# Kubernetes manifests: deploy/ (README "Deploying"). Linted in CI with
# hadolint (deploy/lint-dockerfile.sh).

# Both stages are Debian 12 (bookworm), so the binary's glibc matches the
# runtime's. The Rust minor version is pinned; bump it deliberately.
FROM rust:1.95-slim-bookworm AS build
WORKDIR /src
COPY Cargo.toml Cargo.lock ./
COPY src ./src
RUN cargo build --release --locked \
    && cp target/release/a2a-gateway /a2a-gateway

FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /a2a-gateway /usr/local/bin/a2a-gateway
COPY config/gateway.toml /etc/a2a-gateway/gateway.toml
# distroless "nonroot", by number: Kubernetes' runAsNonRoot can only verify a
# numeric user (deploy/ sets runAsUser: 65532 as well).
USER 65532:65532
EXPOSE 8080 9090
ENTRYPOINT ["/usr/local/bin/a2a-gateway"]
# Inside a container the listeners must bind every interface; the file's
# other settings apply. Plain HTTP here assumes TLS ends at the ingress or
# mesh; mount a config with [tls] (and drop --plaintext) to terminate TLS.
CMD ["run", "--config", "/etc/a2a-gateway/gateway.toml", "--listen", "0.0.0.0:8080", "--admin-listen", "0.0.0.0:9090", "--plaintext"]
