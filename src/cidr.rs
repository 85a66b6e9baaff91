//! Address ranges written in the configuration: the push guard's allowed
//! ranges and the trusted proxies. Also what every section's checker
//! reports: its problems, `(field, message)` each.

use std::net::IpAddr;

use ipnet::IpNet;

/// A section's problems: `(field, message)` each.
pub type Problems = Vec<(String, String)>;

/// The problem `message` with `field`.
pub fn problem(field: impl Into<String>, message: impl Into<String>) -> (String, String) {
    (field.into(), message.into())
}

/// Parses `entries` of the list `field`; a problem names `field[i]`. A bare
/// address is taken as the range of that one address: operators write
/// `169.254.10.7` meaning exactly that, and refusing it would only annoy.
pub fn parse(field: &str, entries: &[String], problems: &mut Problems) -> Vec<IpNet> {
    let mut nets = Vec::new();
    for (i, entry) in entries.iter().enumerate() {
        let parsed = entry
            .parse::<IpNet>()
            .or_else(|_| entry.parse::<IpAddr>().map(IpNet::from));
        match parsed {
            Ok(net) => nets.push(net.trunc()),
            Err(_) => problems.push((
                format!("{field}[{i}]"),
                format!("not a CIDR range like 10.0.0.0/8 or an address: \"{entry}\""),
            )),
        }
    }
    nets
}

/// Whether `ip` is in one of `nets`. A v4 range also covers the IPv4-mapped
/// IPv6 spelling of its addresses (`::ffff:10.1.2.3` on a dual-stack socket).
pub fn contains(nets: &[IpNet], ip: IpAddr) -> bool {
    let canonical = ip.to_canonical();
    nets.iter()
        .any(|net| net.contains(&ip) || net.contains(&canonical))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn parses_ranges_and_bare_addresses_and_names_each_bad_entry() {
        let mut problems = Vec::new();
        let nets = parse(
            "list",
            &strings(&["10.1.2.3/8", "fd00::1", "nonsense", "10.0.0.0/33"]),
            &mut problems,
        );
        assert_eq!(
            nets,
            [
                "10.0.0.0/8".parse().unwrap(),
                "fd00::1/128".parse().unwrap()
            ]
        );
        let fields: Vec<&str> = problems.iter().map(|(f, _)| f.as_str()).collect();
        assert_eq!(fields, ["list[2]", "list[3]"]);
        assert!(problems[0].1.contains("\"nonsense\""), "{problems:?}");
    }

    #[test]
    fn a_v4_range_covers_the_mapped_v6_spelling() {
        let nets = [IpNet::from("10.0.0.0/8".parse::<ipnet::Ipv4Net>().unwrap())];
        assert!(contains(&nets, "10.9.9.9".parse().unwrap()));
        assert!(contains(&nets, "::ffff:10.9.9.9".parse().unwrap()));
        assert!(!contains(&nets, "11.0.0.1".parse().unwrap()));
        assert!(!contains(&[], "10.0.0.1".parse().unwrap()));
    }
}
