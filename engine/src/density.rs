//! Growable bitmaps: the density trackers of synthesis and the "scalar is one" masks of the 0/1 split.

/// A bitmap, LSB first within 64-bit words (the layout the `Backend` trait's `Bitmap` uses).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BitVec {
    words: Vec<u64>,
    len: usize,
}

impl BitVec {
    pub fn with_capacity(bits: usize) -> Self {
        BitVec {
            words: Vec::with_capacity(bits.div_ceil(64)),
            len: 0,
        }
    }
    pub fn zeros(len: usize) -> Self {
        BitVec {
            words: vec![0; len.div_ceil(64)],
            len,
        }
    }
    /// A bitmap of `len` bits from its words (bits past `len` are cleared, missing words zero).
    pub fn from_words(mut words: Vec<u64>, len: usize) -> Self {
        words.resize(len.div_ceil(64), 0);
        if !len.is_multiple_of(64) {
            if let Some(w) = words.last_mut() {
                *w &= (1u64 << (len % 64)) - 1;
            }
        }
        BitVec { words, len }
    }
    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// Appends one clear bit.
    #[inline]
    pub fn push_clear(&mut self) {
        if self.len.is_multiple_of(64) {
            self.words.push(0);
        }
        self.len += 1;
    }
    #[inline]
    pub fn set(&mut self, i: usize) {
        debug_assert!(i < self.len);
        self.words[i / 64] |= 1 << (i % 64);
    }
    #[inline]
    pub fn get(&self, i: usize) -> bool {
        i < self.len && self.words[i / 64] >> (i % 64) & 1 == 1
    }
    pub fn count_ones(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }
    pub fn words(&self) -> &[u64] {
        &self.words
    }
    /// Indices of the set bits, in order.
    pub fn ones(&self) -> impl Iterator<Item = usize> + '_ {
        self.words.iter().enumerate().flat_map(|(w, &word)| {
            let mut bits = word;
            std::iter::from_fn(move || {
                if bits == 0 {
                    return None;
                }
                let b = bits.trailing_zeros() as usize;
                bits &= bits - 1;
                Some(w * 64 + b)
            })
        })
    }
    /// Appends `other`'s bits; `skip_first` drops its bit 0 (bellperson's `extend` for inputs).
    pub fn extend_from(&mut self, other: &BitVec, skip_first: bool) {
        for i in usize::from(skip_first)..other.len {
            self.push_clear();
            if other.get(i) {
                self.set(self.len - 1);
            }
        }
    }
}

impl FromIterator<bool> for BitVec {
    fn from_iter<I: IntoIterator<Item = bool>>(iter: I) -> Self {
        let iter = iter.into_iter();
        let mut v = BitVec::with_capacity(iter.size_hint().0);
        for b in iter {
            v.push_clear();
            if b {
                v.set(v.len - 1);
            }
        }
        v
    }
}
