//! Configuration: the TOML file (`file`), the command-line overrides
//! (`overrides`), and the validated runtime form (`settings`), which the rest of the
//! gateway uses. Loading reports every problem at once (`load`).

pub mod card_trust;
pub mod console;
mod file;
mod load;
mod overrides;
mod settings;
pub mod signing;

pub use load::{load_file, load_str, load_with};
pub use overrides::Overrides;
pub use settings::{
    Balance, Breaker, Card, CardRefresh, Concurrency, Config, ConfigError, ConfigErrors, Limits,
    Log, LogFormat, MatchSettings, OtlpProtocol, Provider, PublicUrl, ReadyWhen, Routing, Server,
    SkillPolicy, Telemetry, Upstream, SAMPLERS,
};
