//! Bounded capture of a child's output: the first and last bytes are kept,
//! the middle is counted and replaced by a marker. Memory stays bounded
//! however much the child prints.

use std::collections::VecDeque;

/// Head and tail of a byte stream plus the total length.
#[derive(Debug, Default)]
pub(crate) struct HeadTail {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    head_limit: usize,
    tail_limit: usize,
    total: u64,
}

impl HeadTail {
    /// Keeps up to `limit` bytes in all: half from the start, half from the end.
    pub(crate) fn new(limit: usize) -> Self {
        let head_limit = limit / 2;
        Self {
            head: Vec::new(),
            tail: VecDeque::new(),
            head_limit,
            tail_limit: limit - head_limit,
            total: 0,
        }
    }

    pub(crate) fn push(&mut self, mut bytes: &[u8]) {
        self.total += bytes.len() as u64;
        let room = self.head_limit.saturating_sub(self.head.len());
        let take = room.min(bytes.len());
        self.head.extend_from_slice(&bytes[..take]);
        bytes = &bytes[take..];
        if bytes.len() >= self.tail_limit {
            self.tail.clear();
            self.tail.extend(&bytes[bytes.len() - self.tail_limit..]);
            return;
        }
        let overflow = (self.tail.len() + bytes.len()).saturating_sub(self.tail_limit);
        self.tail.drain(..overflow);
        self.tail.extend(bytes);
    }

    /// Bytes seen in all.
    pub(crate) fn total(&self) -> u64 {
        self.total
    }

    /// True when the middle was dropped.
    pub(crate) fn truncated(&self) -> bool {
        self.total > (self.head.len() + self.tail.len()) as u64
    }

    /// The text: head, a marker naming how much was left out, tail. Cuts are
    /// moved to UTF-8 character boundaries; invalid UTF-8 is replaced.
    pub(crate) fn render(&self) -> String {
        let tail: Vec<u8> = self.tail.iter().copied().collect();
        if !self.truncated() {
            let mut all = self.head.clone();
            all.extend_from_slice(&tail);
            return String::from_utf8_lossy(&all).into_owned();
        }
        let head_end = utf8_prefix_end(&self.head);
        let tail_start = utf8_suffix_start(&tail);
        let omitted = self.total - (head_end + tail.len() - tail_start) as u64;
        format!(
            "{}\n[… {omitted} bytes omitted …]\n{}",
            String::from_utf8_lossy(&self.head[..head_end]),
            String::from_utf8_lossy(&tail[tail_start..])
        )
    }
}

/// Length of `bytes` without a trailing incomplete UTF-8 sequence.
fn utf8_prefix_end(bytes: &[u8]) -> usize {
    let mut end = bytes.len();
    // Walk back over continuation bytes to the lead byte of the last character.
    let mut back = 0;
    while back < 4 && end > back && (bytes[end - back - 1] & 0xC0) == 0x80 {
        back += 1;
    }
    if end > back {
        let lead = bytes[end - back - 1];
        let width = match lead {
            0x00..=0x7F => 1,
            0xC0..=0xDF => 2,
            0xE0..=0xEF => 3,
            0xF0..=0xF7 => 4,
            _ => 1,
        };
        if width > back + 1 {
            end -= back + 1;
        }
    }
    end
}

/// Index of the first character boundary in `bytes` (skips leading continuation bytes).
fn utf8_suffix_start(bytes: &[u8]) -> usize {
    bytes
        .iter()
        .take(3)
        .take_while(|b| (**b & 0xC0) == 0x80)
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn short_output_is_kept_whole() {
        let mut c = HeadTail::new(10);
        c.push(b"hello");
        assert_eq!(c.render(), "hello");
        assert!(!c.truncated());
    }

    #[test]
    fn long_output_keeps_head_and_tail_with_a_marker() {
        let mut c = HeadTail::new(8);
        for chunk in [&b"abcd"[..], b"efghij", b"klmnop"] {
            c.push(chunk);
        }
        assert_eq!(c.total(), 16);
        assert_eq!(c.render(), "abcd\n[… 8 bytes omitted …]\nmnop");
    }

    #[test]
    fn cuts_fall_on_character_boundaries() {
        let text = "é".repeat(10); // 20 bytes, 2 per char
        let mut c = HeadTail::new(7); // head 3 bytes, tail 4 bytes
        c.push(text.as_bytes());
        let rendered = c.render();
        assert_eq!(rendered, "é\n[… 14 bytes omitted …]\néé");
    }

    #[test]
    fn four_byte_characters_are_never_split() {
        let text = "🦀".repeat(5);
        for limit in 1..12 {
            let mut c = HeadTail::new(limit);
            c.push(text.as_bytes());
            assert!(
                !c.render().contains('\u{FFFD}'),
                "limit {limit}: {}",
                c.render()
            );
        }
    }
}
