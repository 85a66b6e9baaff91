# The gateway configs the bench derives from bench/gateway.toml, shared by
# bench/run.sh (the measured rows) and bench/pgo.sh (the training), so both
# run the gateway the same way. Sourced; each function prints a config.

# The agents of the fleet rows: bench-upstream serve PORT --fleet N starts
# one agent per skill, in this order, on PORT … PORT+N-1.
FLEET_SKILLS=(translate travel weather invoices code-review calendar support research)

# tls_config SECRETS: bench/gateway.toml plus [tls] with the bench
# certificate and a bearer scheme that verifies the token's signature,
# issuer and audience (SECRETS from `bench-upstream secrets`).
tls_config() {
  cat bench/gateway.toml
  cat <<CONF

[tls]
cert = "$1/cert.pem"
key = "$1/key.pem"

[auth.schemes.bearer]
type = "http"
scheme = "bearer"
bearer_format = "JWT"
jwt = { issuer = "bench", audience = ["a2a-gateway"], algorithms = ["ES256"], keys = [ { kid = "bench", algorithm = "ES256", pem_file = "$1/jwt-public.pem" } ] }
CONF
}

# fleet_config PORT N: bench/gateway.toml (whose bench agent stays the
# default) plus the first N agents of FLEET_SKILLS, from PORT on, so every
# call is routed by skill.
fleet_config() {
  local i
  cat bench/gateway.toml
  printf '\n[routing]\ndefault_upstream = "bench"\n'
  for i in $(seq 0 $(($2 - 1))); do
    printf '\n[[upstreams]]\nname = "%s"\nurl = "http://127.0.0.1:%d/"\nmax_in_flight = 4096\n' \
      "${FLEET_SKILLS[$i]}" $(($1 + i))
  done
}
