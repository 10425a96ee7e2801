//! The spool's segment files: a batch appended and fsync'd (a new segment when the last is full, the bound kept
//! by `--spool-full`), the next undelivered batch read back, acked or set aside as rejected, a delivered
//! segment deleted, the undelivered batches counted.

use std::fs::{self, File, OpenOptions};
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use super::{err, Appended, Batch, Pending, Position, Spool, WhenFull};
use crate::error::{Result, SamplerError};

/// A segment file: its number and its length.
#[derive(Debug)]
pub(super) struct Segment {
    pub(super) seq: u64,
    pub(super) bytes: u64,
}

impl Spool {
    pub(super) fn segment_path(&self, seq: u64) -> PathBuf {
        self.dir.join("segments").join(format!("{seq:020}.jsonl"))
    }

    /// Cuts a segment after its last complete line; returns its length.
    pub(super) fn cut_torn_tail(&mut self, path: &Path) -> Result<u64> {
        let data = fs::read(path).map_err(|e| err(path, e))?;
        let keep = data.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
        if keep < data.len() {
            self.torn_at_open += 1;
            tracing::warn!(file = %path.display(), bytes = data.len() - keep, "cutting a torn last line (a crash before its fsync)");
            let f = OpenOptions::new()
                .write(true)
                .open(path)
                .map_err(|e| err(path, e))?;
            f.set_len(keep as u64).map_err(|e| err(path, e))?;
            f.sync_all().map_err(|e| err(path, e))?;
        }
        Ok(keep as u64)
    }

    /// Bytes of the batches not delivered yet (from the cursor on).
    fn undelivered_bytes(&self) -> u64 {
        self.segments
            .iter()
            .filter(|s| s.seq >= self.cursor.0)
            .map(|s| {
                if s.seq == self.cursor.0 {
                    s.bytes.saturating_sub(self.cursor.1)
                } else {
                    s.bytes
                }
            })
            .sum()
    }

    /// Bytes held on disk by segments.
    pub fn bytes(&self) -> u64 {
        self.segments.iter().map(|s| s.bytes).sum()
    }

    /// Appends a batch and fsyncs it: when this returns `Ok`, the window is safe.
    pub fn append(&mut self, batch: &Batch) -> Result<Appended> {
        let mut line = serde_json::to_string(batch).map_err(|e| err(&self.dir, e))?;
        line.push('\n');
        let len = line.len() as u64;
        if self.when_full == WhenFull::KeepOldest
            && self.pending.0 > 0
            && self.undelivered_bytes() + len > self.max_bytes
        {
            return Err(SamplerError::SpoolFull {
                path: self.dir.clone(),
                max_bytes: self.max_bytes,
            });
        }
        let roll = match (&self.writer, self.segments.back()) {
            (Some((seq, _)), Some(last)) if last.seq == *seq => {
                last.bytes > 0 && last.bytes + len > self.segment_bytes
            }
            _ => true,
        };
        if roll {
            let seq = self.next_seq;
            self.next_seq += 1;
            let path = self.segment_path(seq);
            let f = OpenOptions::new()
                .create_new(true)
                .append(true)
                .open(&path)
                .map_err(|e| err(&path, e))?;
            // The new file's name must survive a crash too.
            let seg_dir = self.dir.join("segments");
            File::open(&seg_dir)
                .and_then(|d| d.sync_all())
                .map_err(|e| err(&seg_dir, e))?;
            self.writer = Some((seq, f));
            self.segments.push_back(Segment { seq, bytes: 0 });
        }
        let Some((seq, f)) = self.writer.as_mut() else {
            return Err(err(&self.dir, "no segment open"));
        };
        let path = self.dir.join("segments").join(format!("{seq:020}.jsonl"));
        let before = self.segments.back().map_or(0, |s| s.bytes);
        if let Err(e) = f.write_all(line.as_bytes()).and_then(|()| f.sync_data()) {
            // A full disk writes part of the line, or all of it unsynced: cut the segment back to its last
            // whole line, so that the next append starts a line of its own (the window is reported unspooled).
            // If even that fails, the next append starts a new segment; this one's torn tail is cut at the next
            // open, and reads never go past its known length meanwhile.
            if f.set_len(before).and_then(|()| f.sync_data()).is_err() {
                self.writer = None;
            }
            return Err(err(&path, e));
        }
        if let Some(last) = self.segments.back_mut() {
            last.bytes += len;
        }
        self.pending.0 += 1;
        self.pending.1 += batch.samples.len() as u64;
        self.enforce_bound()
    }

    /// With [`WhenFull::KeepNewest`], deletes the oldest segments while the spool is over its bound (never the
    /// one being written).
    fn enforce_bound(&mut self) -> Result<Appended> {
        let mut out = Appended::default();
        while self.when_full == WhenFull::KeepNewest
            && self.bytes() > self.max_bytes
            && self.segments.len() > 1
        {
            let Some(old) = self.segments.pop_front() else {
                break;
            };
            let path = self.segment_path(old.seq);
            let from = if self.cursor.0 == old.seq {
                self.cursor.1
            } else if self.cursor.0 > old.seq {
                old.bytes
            } else {
                0
            };
            let (batches, samples) = count_from(&path, from);
            out.dropped_batches += batches;
            out.dropped_samples += samples;
            self.pending.0 = self.pending.0.saturating_sub(batches);
            self.pending.1 = self.pending.1.saturating_sub(samples);
            fs::remove_file(&path).map_err(|e| err(&path, e))?;
            if self.cursor.0 <= old.seq {
                if let Some(next) = self.segments.front() {
                    self.cursor = (next.seq, 0);
                }
            }
            tracing::warn!(
                segment = old.seq,
                dropped_samples = samples,
                "spool over --spool-max-bytes: dropped its oldest segment"
            );
        }
        if out.dropped_batches > 0 {
            self.save_cursor()?;
        }
        Ok(out)
    }

    /// The next batch to deliver, if any.
    pub fn peek(&mut self) -> Result<Option<Pending>> {
        loop {
            let Some(seg) = self.segments.iter().find(|s| s.seq >= self.cursor.0) else {
                return Ok(None);
            };
            let (seq, bytes) = (seg.seq, seg.bytes);
            if seq > self.cursor.0 {
                self.cursor = (seq, 0);
            }
            if self.cursor.1 >= bytes {
                let writing = self.writer.as_ref().is_some_and(|(s, _)| *s == seq);
                if writing || self.segments.back().is_some_and(|s| s.seq == seq) {
                    return Ok(None);
                }
                self.remove_segment(seq)?;
                continue;
            }
            let path = self.segment_path(seq);
            let mut f = File::open(&path).map_err(|e| err(&path, e))?;
            f.seek(SeekFrom::Start(self.cursor.1))
                .map_err(|e| err(&path, e))?;
            let mut raw = String::new();
            let n = BufReader::new(f)
                .read_line(&mut raw)
                .map_err(|e| err(&path, e))? as u64;
            if n == 0 || !raw.ends_with('\n') {
                return Ok(None);
            }
            let batch = serde_json::from_str::<Batch>(raw.trim_end()).ok();
            return Ok(Some(Pending {
                pos: Position {
                    seq,
                    offset: self.cursor.1,
                    next: self.cursor.1 + n,
                    samples: batch.as_ref().map_or(0, |b| b.samples.len() as u64),
                },
                batch,
                raw,
            }));
        }
    }

    fn remove_segment(&mut self, seq: u64) -> Result<()> {
        if self.writer.as_ref().is_some_and(|(s, _)| *s == seq) {
            self.writer = None;
        }
        self.segments.retain(|s| s.seq != seq);
        let path = self.segment_path(seq);
        match fs::remove_file(&path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(err(&path, e)),
        }
    }

    /// Marks a batch delivered; deletes its segment when it was the segment's last.
    pub fn ack(&mut self, pos: Position) -> Result<()> {
        // A segment dropped to keep the bound (while its batch was being sent) was uncounted then.
        let held = self.segments.iter().any(|s| s.seq == pos.seq);
        if held && (pos.seq, pos.next) > self.cursor {
            self.pending.0 = self.pending.0.saturating_sub(1);
            self.pending.1 = self.pending.1.saturating_sub(pos.samples);
        }
        self.cursor = (pos.seq, pos.next);
        let done = self
            .segments
            .iter()
            .find(|s| s.seq == pos.seq)
            .is_some_and(|s| pos.next >= s.bytes);
        if done {
            self.remove_segment(pos.seq)?;
        }
        self.save_cursor()
    }

    /// Moves a batch the control plane refused to `rejected/` (with the reason), then acks it.
    pub fn reject(&mut self, p: &Pending, reason: &str) -> Result<PathBuf> {
        let stem = p
            .batch
            .as_ref()
            .map(|b| b.window_end.replace(':', ""))
            .unwrap_or_else(|| "corrupt".to_string());
        let path = self
            .dir
            .join("rejected")
            .join(format!("{stem}-{}-{}.json", p.pos.seq, p.pos.offset));
        let batch = serde_json::from_str::<serde_json::Value>(p.raw.trim_end())
            .unwrap_or_else(|_| serde_json::Value::String(p.raw.clone()));
        let doc = serde_json::json!({ "reason": reason, "batch": batch });
        let text = serde_json::to_string_pretty(&doc).map_err(|e| err(&path, e))?;
        let mut f = File::create(&path).map_err(|e| err(&path, e))?;
        f.write_all(text.as_bytes()).map_err(|e| err(&path, e))?;
        f.sync_all().map_err(|e| err(&path, e))?;
        self.ack(p.pos)?;
        Ok(path)
    }

    /// Batches and samples not yet delivered (reads the segments: for tests and start-up logs).
    pub fn pending_counts(&self) -> (u64, u64) {
        self.segments
            .iter()
            .filter(|s| s.seq >= self.cursor.0)
            .map(|s| {
                let from = if s.seq == self.cursor.0 {
                    self.cursor.1
                } else {
                    0
                };
                count_from(&self.segment_path(s.seq), from)
            })
            .fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1))
    }
}

/// Batches and samples in a segment from `offset` on (corrupt lines count as a batch of no sample).
fn count_from(path: &Path, offset: u64) -> (u64, u64) {
    let Ok(mut f) = File::open(path) else {
        return (0, 0);
    };
    if f.seek(SeekFrom::Start(offset)).is_err() {
        return (0, 0);
    }
    let mut text = String::new();
    if f.read_to_string(&mut text).is_err() {
        return (0, 0);
    }
    text.lines()
        .filter(|l| !l.is_empty())
        .fold((0, 0), |(b, s), l| {
            let n = serde_json::from_str::<Batch>(l).map_or(0, |x| x.samples.len() as u64);
            (b + 1, s + n)
        })
}
