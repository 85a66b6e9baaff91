//! Whole events taken from the upstream but not yet handed to hyper.
//!
//! hyper's client body hands the relay one upstream chunk at a time, and the
//! server writes (one `writev`) whenever the relay's body is not ready. So an
//! upstream burst of ten events cost ten writes and woke the client ten times.
//! The relay now holds the events of a burst here while more keep arriving,
//! and hands them on as one frame. One event alone is passed through without
//! a copy. The stream's first events are never held here (see `SseRelay`):
//! time to first event is what a client waits on.

use bytes::{Bytes, BytesMut};

/// A burst is handed on once it holds this much...
const MAX_BATCH_BYTES: usize = 64 * 1024;
/// ...or after this many turns given to the upstream connection, so a
/// steady fast stream still goes out promptly...
const MAX_TURNS: u8 = 32;
/// ...or when this many turns in a row brought nothing (the scheduler does
/// not always run the connection task first, so one empty turn is not yet
/// the end of a burst).
const MAX_EMPTY_TURNS: u8 = 2;

#[derive(Debug, Default)]
pub struct Batch {
    held: Held,
    // Turns given to the upstream connection in this burst, empty turns in a
    // row, and how much was held at the last turn.
    turns: u8,
    empty_turns: u8,
    held_at_turn: usize,
}

#[derive(Debug, Default)]
enum Held {
    #[default]
    Empty,
    One(Bytes),
    Many(BytesMut),
}

impl Batch {
    pub fn push(&mut self, events: Bytes) {
        self.held = match std::mem::take(&mut self.held) {
            Held::Empty => Held::One(events),
            Held::One(first) => {
                let mut joined = BytesMut::with_capacity(first.len() + events.len());
                joined.extend_from_slice(&first);
                joined.extend_from_slice(&events);
                Held::Many(joined)
            }
            Held::Many(mut joined) => {
                joined.extend_from_slice(&events);
                Held::Many(joined)
            }
        };
    }

    /// The batch is big enough to hand on now.
    pub fn is_full(&self) -> bool {
        self.len() >= MAX_BATCH_BYTES
    }

    /// Called when the upstream has nothing ready: whether to give its
    /// connection task another turn (true: the caller wakes itself and
    /// waits) or to hand the burst on now.
    pub fn wants_turn(&mut self) -> bool {
        if self.len() > self.held_at_turn {
            self.empty_turns = 0;
        } else {
            self.empty_turns += 1;
        }
        if self.turns < MAX_TURNS && self.empty_turns < MAX_EMPTY_TURNS {
            self.turns += 1;
            self.held_at_turn = self.len();
            return true;
        }
        false
    }

    pub fn len(&self) -> usize {
        match &self.held {
            Held::Empty => 0,
            Held::One(b) => b.len(),
            Held::Many(b) => b.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Everything held, in order, leaving the batch empty and its turns
    /// counted afresh.
    pub fn take(&mut self) -> Option<Bytes> {
        self.turns = 0;
        self.empty_turns = 0;
        self.held_at_turn = 0;
        match std::mem::take(&mut self.held) {
            Held::Empty => None,
            Held::One(b) => Some(b),
            Held::Many(b) => Some(b.freeze()),
        }
    }

    /// Everything held followed by `last`, as one buffer.
    pub fn take_with(&mut self, last: Bytes) -> Bytes {
        match self.take() {
            None => last,
            Some(held) => {
                let mut joined = BytesMut::with_capacity(held.len() + last.len());
                joined.extend_from_slice(&held);
                joined.extend_from_slice(&last);
                joined.freeze()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_event_passes_without_a_copy() {
        let event = Bytes::from_static(b"data: 1\n\n");
        let mut batch = Batch::default();
        batch.push(event.clone());
        let out = batch.take().unwrap();
        assert_eq!(out.as_ptr(), event.as_ptr());
        assert!(batch.is_empty() && batch.take().is_none());
    }

    #[test]
    fn events_are_joined_in_order() {
        let mut batch = Batch::default();
        for e in ["data: 1\n\n", "data: 2\n\n", "data: 3\n\n"] {
            batch.push(Bytes::from(e));
        }
        assert_eq!(batch.len(), 27);
        assert_eq!(
            &batch.take().unwrap()[..],
            b"data: 1\n\ndata: 2\n\ndata: 3\n\n"
        );
        assert_eq!(batch.len(), 0);
    }

    #[test]
    fn turns_continue_while_they_bring_events() {
        let mut batch = Batch::default();
        batch.push(Bytes::from("data: 1\n\n"));
        assert!(batch.wants_turn(), "first turn after an event");
        batch.push(Bytes::from("data: 2\n\n"));
        assert!(batch.wants_turn(), "the turn brought an event");
        assert!(batch.wants_turn(), "one empty turn is not the end");
        assert!(!batch.wants_turn(), "two empty turns end the burst");
        batch.take();
        batch.push(Bytes::from("data: 3\n\n"));
        assert!(batch.wants_turn(), "counting starts afresh after take");
    }

    #[test]
    fn turns_are_bounded_even_when_events_keep_coming() {
        let mut batch = Batch::default();
        let mut turns = 0;
        loop {
            batch.push(Bytes::from("data: x\n\n"));
            if !batch.wants_turn() {
                break;
            }
            turns += 1;
            assert!(turns <= MAX_TURNS as usize, "unbounded turns");
        }
        assert_eq!(turns, MAX_TURNS as usize);
    }

    #[test]
    fn take_with_appends_the_last_piece() {
        let mut batch = Batch::default();
        assert_eq!(&batch.take_with(Bytes::from("end"))[..], b"end");
        batch.push(Bytes::from("data: 1\n\n"));
        assert_eq!(&batch.take_with(Bytes::from("end"))[..], b"data: 1\n\nend");
        assert!(batch.is_empty());
    }
}
