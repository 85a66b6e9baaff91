//! Concurrency limits: in-flight calls per upstream with a short bounded
//! queue, and open SSE streams per caller and in total.
