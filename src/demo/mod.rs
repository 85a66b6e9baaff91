//! `a2a-gateway demo`: the gateway in front of a built-in sample agent, all
//! on loopback, so a newcomer can try routing, streaming and the card with
//! one command.

pub mod agent;

use std::net::SocketAddr;

use crate::config::{self, Overrides};

/// Starts the sample agent and a gateway in front of it.
pub async fn start(
    listen: SocketAddr,
    admin_listen: SocketAddr,
) -> Result<(crate::Running, agent::SampleAgent), String> {
    let echo = agent::SampleAgent::start()
        .await
        .map_err(|e| format!("sample agent: {e}"))?;
    let overrides = Overrides {
        listen: Some(listen.to_string()),
        admin_listen: Some(admin_listen.to_string()),
        public_url: None,
        upstreams: vec![("echo".into(), echo.url())],
    };
    let config = config::load_with(None, &overrides).map_err(|e| e.to_string())?;
    let running = crate::build(config)
        .start()
        .await
        .map_err(|e| format!("cannot listen on {listen} / {admin_listen}: {e}"))?;
    Ok((running, echo))
}

/// What to try, printed once the demo runs.
pub fn instructions(gateway: SocketAddr, admin: SocketAddr) -> String {
    let url = format!("http://{gateway}");
    format!(
        r#"a2a-gateway demo is running.

  gateway  {url}/   (JSON-RPC, every A2A version)
  card     {url}/.well-known/agent-card.json
  probes   http://{admin}/healthz  http://{admin}/readyz

Try:

  curl -s {url}/.well-known/agent-card.json

  curl -s {url}/ -H 'content-type: application/json' -d '{{"jsonrpc":"2.0","id":1,"method":"message/send","params":{{"message":{{"kind":"message","messageId":"m1","role":"user","parts":[{{"kind":"text","text":"hello"}}]}}}}}}'

  curl -sN {url}/ -H 'content-type: application/json' -H 'A2A-Version: 1.0' -d '{{"jsonrpc":"2.0","id":2,"method":"SendStreamingMessage","params":{{"message":{{"messageId":"m2","role":"ROLE_USER","parts":[{{"text":"stream please"}}]}}}}}}'

  curl -s {url}/ -H 'content-type: application/json' -d '{{"jsonrpc":"2.0","id":3,"method":"tasks/nope"}}'

Press Ctrl-C to stop.
"#
    )
}
