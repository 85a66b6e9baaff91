//! The guard at delivery time (the push relay): the webhook's host is
//! resolved once, every address is checked by the same rules as at set
//! time, and the addresses checked are what the delivery connects to. No
//! second look-up happens between the check and the connection, so a name
//! that answers a public address at set time and a private one at delivery
//! (DNS rebinding) is refused here.

use std::future::Future;
use std::net::{IpAddr, SocketAddr};

use super::target::{classify_host, normalize_host, parse_target, Host};
use super::{shown, PushGuard};

/// Why a webhook cannot be delivered to now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Undeliverable {
    /// The guard refuses it: dropped, never retried.
    Refused(String),
    /// Its name did not resolve: worth another try.
    Unresolved(String),
}

impl std::fmt::Display for Undeliverable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Undeliverable::Refused(why) | Undeliverable::Unresolved(why) => f.write_str(why),
        }
    }
}

impl PushGuard {
    /// The addresses `url` may be delivered to, resolved by `resolve`
    /// (host, port) and each checked; `Err` says why not, naming the host.
    /// An allowed host name passes whatever it resolves to; with the guard
    /// off, nothing is refused but the look-up still happens once.
    pub async fn delivery_addresses<F, R>(
        &self,
        url: &str,
        resolve: F,
    ) -> Result<Vec<SocketAddr>, Undeliverable>
    where
        F: FnOnce(String, u16) -> R,
        R: Future<Output = Result<Vec<IpAddr>, String>>,
    {
        let refused = |why: String| Undeliverable::Refused(format!("{}: {why}", shown(url)));
        let target = parse_target(url).map_err(refused)?;
        let port = target.port;
        match target.scheme.as_str() {
            "https" => {}
            "http" if self.allow_http || !self.enabled => {}
            other => return Err(refused(format!("scheme \"{other}\" is not allowed"))),
        }
        let allowed_host = !self.enabled || self.allow_hosts.contains(&normalize_host(target.host));
        let addresses = match classify_host(target.host) {
            Err(reason) if !allowed_host => return Err(refused(reason.to_string())),
            Ok(Host::Ip(ip)) => vec![ip],
            _ => {
                let name = normalize_host(target.host);
                let found =
                    (resolve(name.clone(), port).await).map_err(Undeliverable::Unresolved)?;
                if found.is_empty() {
                    let why = format!("cannot resolve {name} (no addresses)");
                    return Err(Undeliverable::Unresolved(why));
                }
                found
            }
        };
        if !allowed_host {
            if let Some((ip, reason)) = (addresses.iter())
                .find_map(|ip| self.address_problem(*ip).map(|reason| (ip, reason)))
            {
                let why = format!("{} resolves to {ip} at delivery ({reason})", target.host);
                return Err(Undeliverable::Refused(why));
            }
        }
        Ok(addresses
            .into_iter()
            .map(|ip| SocketAddr::new(ip, port))
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::push_guard::{settings, PushGuardSection};

    fn guard(allow_cidrs: &[&str], allow_http: bool) -> PushGuard {
        settings(&PushGuardSection {
            allow_http,
            allow_cidrs: allow_cidrs.iter().map(|c| c.to_string()).collect(),
            ..PushGuardSection::default()
        })
        .unwrap()
    }

    fn block_on<F: Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(f)
    }

    fn answers(
        ips: &'static [&'static str],
    ) -> impl FnOnce(String, u16) -> std::future::Ready<Result<Vec<IpAddr>, String>> {
        move |_, _| std::future::ready(Ok(ips.iter().map(|i| i.parse().unwrap()).collect()))
    }

    #[test]
    fn public_addresses_are_given_back_with_the_port() {
        let got = block_on(
            guard(&[], false)
                .delivery_addresses("https://hooks.example/h", answers(&["93.184.216.34"])),
        );
        assert_eq!(got.unwrap(), ["93.184.216.34:443".parse().unwrap()]);
    }

    /// The same name, answering a private address now: refused, naming it.
    #[test]
    fn a_name_that_turned_private_is_refused() {
        for ip in [
            &["127.0.0.1"][..],
            &["93.184.216.34", "169.254.169.254"],
            &["10.1.2.3"],
        ] {
            let resolve = move |_: String, _: u16| {
                std::future::ready(Ok(ip.iter().map(|i| i.parse().unwrap()).collect()))
            };
            let why =
                block_on(guard(&[], false).delivery_addresses("https://hooks.example/h", resolve))
                    .unwrap_err()
                    .to_string();
            assert!(why.starts_with("hooks.example resolves to"), "{why}");
            assert!(why.contains("at delivery"), "{why}");
        }
    }

    #[test]
    fn allowed_ranges_schemes_and_literals() {
        let local = guard(&["127.0.0.0/8"], true);
        let got = block_on(local.delivery_addresses("http://127.0.0.1:9000/h", answers(&[])));
        assert_eq!(got.unwrap(), ["127.0.0.1:9000".parse().unwrap()]);
        let strict = guard(&["127.0.0.0/8"], false);
        let why = block_on(strict.delivery_addresses("http://127.0.0.1:9000/h", answers(&[])))
            .unwrap_err()
            .to_string();
        assert!(why.contains("scheme \"http\" is not allowed"), "{why}");
        let why =
            block_on(guard(&[], true).delivery_addresses("http://[::1]:9000/h", answers(&[])))
                .unwrap_err()
                .to_string();
        assert!(why.contains("resolves to ::1"), "{why}");
        let why = block_on(
            guard(&[], true)
                .delivery_addresses("https://h.example/", |_, _| std::future::ready(Ok(vec![]))),
        )
        .unwrap_err();
        assert!(
            matches!(&why, Undeliverable::Unresolved(w) if w.contains("no addresses")),
            "{why}"
        );
    }
}
