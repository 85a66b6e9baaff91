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
# The binary is built guided by a profile (bench/pgo.sh): an instrumented
# build is trained on 127.0.0.1 with the bench's upstream and clients (plain
# HTTP, TLS with JWT auth, a fleet routed by skill), then built again with
# the counts: a quarter fewer instructions and 8-20 % less CPU per call
# (bench/profile.md, "The image built with PGO"), for a longer build. Both
# use Cargo.toml's `dist` profile (fat LTO). PGO=0 builds it without a
# profile, with bench/dist.sh's inlining threshold:
# docker build --build-arg PGO=0 .
ARG PGO=1
# curl and python3 drive the training; they stay in this stage. Debian's
# point releases replace package versions, so a pin here would break the
# build rather than make it reproducible.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends curl python3 \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY Cargo.toml Cargo.lock ./
COPY .cargo ./.cargo
COPY src ./src
COPY bench ./bench
RUN if [ "$PGO" = 0 ]; then \
        bash bench/dist.sh --bin a2a-gateway && cp target/dist/a2a-gateway /a2a-gateway; \
    else \
        bash bench/pgo.sh && cp target/pgo/dist/a2a-gateway /a2a-gateway; \
    fi

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
