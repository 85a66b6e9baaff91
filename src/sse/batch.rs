//! Whole events taken from the upstream but not yet handed to hyper.
//!
//! hyper's client body hands the relay one upstream chunk at a time, and the
//! server writes (one `writev`) whenever the relay's body is not ready. So an
//! upstream burst of ten events cost ten writes and woke the client ten times.
//! The relay now holds the events of a burst here while more keep arriving,
//! and hands them on as one frame. One event alone is passed through without
//! a copy.

use bytes::{Bytes, BytesMut};

#[derive(Debug, Default)]
pub struct Batch {
    held: Held,
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

    /// Everything held, in order, leaving the batch empty.
    pub fn take(&mut self) -> Option<Bytes> {
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
    fn take_with_appends_the_last_piece() {
        let mut batch = Batch::default();
        assert_eq!(&batch.take_with(Bytes::from("end"))[..], b"end");
        batch.push(Bytes::from("data: 1\n\n"));
        assert_eq!(&batch.take_with(Bytes::from("end"))[..], b"data: 1\n\nend");
        assert!(batch.is_empty());
    }
}
