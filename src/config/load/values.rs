//! Single values shared by every section: addresses, durations, sizes and
//! URLs, each refused with its path and what was expected.

use super::*;

impl Checker {
    pub(super) fn addr(&mut self, path: &str, text: &str) -> Option<SocketAddr> {
        match text.parse() {
            Ok(a) => Some(a),
            Err(_) => {
                self.err(
                    path,
                    format!("expected IP:port like 127.0.0.1:8080 or [::]:8080, not \"{text}\""),
                );
                None
            }
        }
    }

    pub(super) fn duration(&mut self, path: &str, text: &str) -> Option<Duration> {
        crate::duration::positive(text)
            .map_err(|why| self.err(path, why))
            .ok()
    }

    /// A duration where "0s" turns the feature off: `Some(None)`.
    pub(super) fn duration_or_off(&mut self, path: &str, text: &str) -> Option<Option<Duration>> {
        match humantime::parse_duration(text) {
            Ok(d) if d.is_zero() => Some(None),
            _ => self.duration(path, text).map(Some),
        }
    }

    /// A count that must not be zero; zero is reported and read as 1.
    pub(super) fn at_least_one<N: Ord + From<u8>>(&mut self, path: impl Into<String>, n: N) -> N {
        if n == N::from(0) {
            self.err(path, "must be at least 1");
        }
        n.max(N::from(1))
    }

    /// One of the words `options` names, as its value; anything else is
    /// reported as `must be "a" or "b", not "x"`.
    pub(super) fn choice<T: Copy>(
        &mut self,
        path: &str,
        text: &str,
        options: &[(&str, T)],
    ) -> Option<T> {
        if let Some((_, value)) = options.iter().find(|(word, _)| *word == text) {
            return Some(*value);
        }
        let words: Vec<String> = options
            .iter()
            .map(|(word, _)| format!("\"{word}\""))
            .collect();
        self.err(
            path,
            format!("must be {}, not \"{text}\"", words.join(" or ")),
        );
        None
    }

    pub(super) fn size(&mut self, path: &str, value: u64, min: u64) -> Option<usize> {
        match usize::try_from(value) {
            Ok(v) if value >= min => Some(v),
            _ => {
                self.err(path, format!("must be at least {min}"));
                None
            }
        }
    }

    pub(super) fn absolute_url(&mut self, path: &str, text: &str) -> Option<Uri> {
        match text.parse::<Uri>() {
            Ok(u) if u.scheme().is_some() && u.authority().is_some() => Some(u),
            _ => {
                self.err(path, format!("must be an absolute URL, not \"{text}\""));
                None
            }
        }
    }

    pub(super) fn public_url(&mut self, text: &str) -> Option<PublicUrl> {
        let path = "server.public_url";
        let uri = match text.parse::<Uri>() {
            Ok(u) => u,
            Err(e) => {
                self.err(path, format!("not a URL: {e}"));
                return None;
            }
        };
        let (Some(scheme), Some(authority)) = (uri.scheme_str(), uri.authority()) else {
            self.err(
                path,
                "must be an absolute URL like https://agents.example.com",
            );
            return None;
        };
        if scheme != "http" && scheme != "https" {
            self.err(path, "scheme must be http or https");
            return None;
        }
        if uri.query().is_some() {
            self.err(path, "must not have a query string");
            return None;
        }
        let trimmed = uri.path().trim_end_matches('/');
        Some(PublicUrl {
            origin: format!("{scheme}://{authority}"),
            path: if trimmed.is_empty() {
                "/".into()
            } else {
                trimmed.into()
            },
        })
    }
}
