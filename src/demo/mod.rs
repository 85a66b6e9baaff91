//! `a2a-gateway demo`: the gateway in front of two built-in sample agents
//! (weather: streams; travel: needs a second turn), all on loopback, so a
//! newcomer can try routing by skill, streaming and the card with one
//! command.

pub mod agent;
mod shapes;

use std::net::SocketAddr;

use crate::config::{self, Overrides};
use agent::{Kind, SampleAgent};

/// The running demo: the gateway and the agents behind it.
pub struct Demo {
    pub gateway: crate::Running,
    pub agents: Vec<SampleAgent>,
}

/// Starts the sample agents and a gateway in front of them.
pub async fn start(listen: SocketAddr, admin_listen: SocketAddr) -> Result<Demo, String> {
    let weather = SampleAgent::start(Kind::Weather)
        .await
        .map_err(|e| format!("sample agent: {e}"))?;
    let travel = SampleAgent::start(Kind::Travel)
        .await
        .map_err(|e| format!("sample agent: {e}"))?;
    let text = format!(
        r#"
[server]
listen = "{listen}"
admin_listen = "{admin_listen}"
shutdown_grace = "5s"

[card]
name = "Demo Fleet"
description = "Two sample agents behind one a2a-gateway: weather forecasts and flight booking."

[card_refresh]
interval = "10s"

[[upstreams]]
name = "weather"
url = "{}"

[[upstreams]]
name = "travel"
url = "{}"
"#,
        weather.url(),
        travel.url()
    );
    let config =
        config::load_with(Some(&text), &Overrides::default()).map_err(|e| e.to_string())?;
    let gateway = crate::build(config)
        .start()
        .await
        .map_err(|e| format!("cannot listen on {listen} / {admin_listen}: {e}"))?;
    Ok(Demo {
        gateway,
        agents: vec![weather, travel],
    })
}

/// What to try, printed once the demo runs.
pub fn instructions(gateway: SocketAddr, admin: SocketAddr) -> String {
    let url = format!("http://{gateway}");
    format!(
        r#"a2a-gateway demo is running: two agents (weather, travel) behind one address.

  gateway  {url}/   A2A 0.1, 0.3 and 1.0 over JSON-RPC (POST /), HTTP+JSON (REST:
           POST /message:send, GET /tasks/{{id}}, ...; 0.3 under /v1) and gRPC (h2c, same port)
  card     {url}/.well-known/agent-card.json   (both agents' skills: forecast, book-flight)
  agents   {url}/agents/weather  {url}/agents/travel
  console  http://{admin}/console   (the fleet, skills, live calls, limits; "Try it" sends a message)
  probes   http://{admin}/healthz  http://{admin}/readyz

Try:

  # 1. Routing by hint: the A2A-Skill header names the skill (book-flight lives on travel).
  #    The travel agent needs a second turn: note the task id in the answer.
  curl -s {url}/ -H 'content-type: application/json' -H 'A2A-Skill: book-flight' \
    -d '{{"jsonrpc":"2.0","id":1,"method":"message/send","params":{{"message":{{"kind":"message","messageId":"m1","role":"user","parts":[{{"kind":"text","text":"a flight to Lisbon"}}]}}}}}}'

  # 2. Routing by text match: no hint, the gateway matches the words to the forecast skill.
  curl -s {url}/ -H 'content-type: application/json' \
    -d '{{"jsonrpc":"2.0","id":2,"method":"message/send","params":{{"message":{{"kind":"message","messageId":"m2","role":"user","parts":[{{"kind":"text","text":"will it rain in Paris tomorrow? weather forecast please"}}]}}}}}}'

  # 3. Streaming (1.0 shapes): the forecast arrives event by event.
  curl -sN {url}/ -H 'content-type: application/json' -H 'A2A-Version: 1.0' -H 'A2A-Skill: forecast' \
    -d '{{"jsonrpc":"2.0","id":3,"method":"SendStreamingMessage","params":{{"message":{{"messageId":"m3","role":"ROLE_USER","parts":[{{"text":"Berlin this weekend"}}]}}}}}}'

  # 4. HTTP+JSON (REST), 1.0: the result alone, no JSON-RPC envelope.
  curl -s {url}/message:send -H 'content-type: application/json' -H 'A2A-Skill: forecast' \
    -d '{{"message":{{"messageId":"m5","role":"ROLE_USER","parts":[{{"text":"Oslo tomorrow"}}]}}}}'

  # Second turn of the booking from 1 (put the task id you got there); the gateway
  # remembers which agent owns the task, no hint needed:
  curl -s {url}/ -H 'content-type: application/json' \
    -d '{{"jsonrpc":"2.0","id":4,"method":"message/send","params":{{"message":{{"kind":"message","messageId":"m4","role":"user","taskId":"travel-task-1","parts":[{{"kind":"text","text":"next Friday"}}]}}}}}}'

Press Ctrl-C to stop.
"#
    )
}
