//! Scores a message's text against published skills. (Being written.)
