//! Whether the shared store answers: one state for every call, changed by
//! a failed ask (down) and by a probe that answers again (up). A change is
//! logged once and set on the `rate_limit_store_up` gauge, never per call.

use std::sync::atomic::{AtomicU8, Ordering};

const CONNECTING: u8 = 0;
const UP: u8 = 1;
const DOWN: u8 = 2;

/// The store's state as calls see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// Not yet connected (start, or a reload that changed the store).
    Connecting,
    Up,
    Down,
}

impl State {
    pub fn label(self) -> &'static str {
        match self {
            State::Connecting => "connecting",
            State::Up => "up",
            State::Down => "down",
        }
    }
}

#[derive(Debug, Default)]
pub struct Health(AtomicU8);

impl Health {
    pub fn get(&self) -> State {
        match self.0.load(Ordering::Acquire) {
            UP => State::Up,
            DOWN => State::Down,
            _ => State::Connecting,
        }
    }

    /// Sets the state; the one it replaced, so that only a change is
    /// logged.
    pub fn set(&self, state: State) -> State {
        let raw = match state {
            State::Connecting => CONNECTING,
            State::Up => UP,
            State::Down => DOWN,
        };
        match self.0.swap(raw, Ordering::AcqRel) {
            UP => State::Up,
            DOWN => State::Down,
            _ => State::Connecting,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_returns_the_previous_state() {
        let h = Health::default();
        assert_eq!(h.get(), State::Connecting);
        assert_eq!(h.set(State::Up), State::Connecting);
        assert_eq!(h.set(State::Up), State::Up);
        assert_eq!(h.set(State::Down), State::Up);
        assert_eq!(h.get(), State::Down);
        assert_eq!(State::Down.label(), "down");
    }
}
