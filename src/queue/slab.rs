//! Dense storage for queue entries: a slot per waiter, reused after it leaves, addressed by a
//! handle that names the slot and its generation (so a handle of a waiter that left never
//! reaches the next waiter in its slot). Grows in steps of an eighth instead of doubling: a
//! waiter told by message costs only its entry, so the slack of a doubled table (up to half of
//! it) would be most of its memory.

pub type Handle = u64;

struct Slot<T> {
    generation: u32,
    value: Option<T>,
}

pub struct Slab<T> {
    slots: Vec<Slot<T>>,
    free: Vec<u32>,
    len: usize,
}

impl<T> Default for Slab<T> {
    fn default() -> Self {
        Slab {
            slots: Vec::new(),
            free: Vec::new(),
            len: 0,
        }
    }
}

fn split(handle: Handle) -> (usize, u32) {
    ((handle & 0xffff_ffff) as usize, (handle >> 32) as u32)
}

impl<T> Slab<T> {
    pub fn insert(&mut self, value: T) -> Handle {
        self.len += 1;
        if let Some(index) = self.free.pop() {
            let slot = &mut self.slots[index as usize];
            slot.value = Some(value);
            return (slot.generation as u64) << 32 | index as u64;
        }
        if self.slots.len() == self.slots.capacity() {
            self.slots.reserve_exact(self.slots.len() / 8 + 16);
        }
        self.slots.push(Slot {
            generation: 0,
            value: Some(value),
        });
        (self.slots.len() - 1) as u64
    }

    /// The slot index a handle names: entries of a table kept beside the slab use it.
    pub fn index(handle: Handle) -> usize {
        split(handle).0
    }

    /// The value in slot `index`, whatever its generation.
    pub fn at(&self, index: usize) -> Option<&T> {
        self.slots.get(index)?.value.as_ref()
    }

    pub fn get(&self, handle: Handle) -> Option<&T> {
        let (index, generation) = split(handle);
        self.slots
            .get(index)
            .filter(|s| s.generation == generation)?
            .value
            .as_ref()
    }

    pub fn get_mut(&mut self, handle: Handle) -> Option<&mut T> {
        let (index, generation) = split(handle);
        self.slots
            .get_mut(index)
            .filter(|s| s.generation == generation)?
            .value
            .as_mut()
    }

    pub fn contains(&self, handle: Handle) -> bool {
        self.get(handle).is_some()
    }

    pub fn remove(&mut self, handle: Handle) -> Option<T> {
        let (index, generation) = split(handle);
        let slot = self
            .slots
            .get_mut(index)
            .filter(|s| s.generation == generation)?;
        let value = slot.value.take()?;
        slot.generation = slot.generation.wrapping_add(1);
        self.free.push(index as u32);
        self.len -= 1;
        Some(value)
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn iter(&self) -> impl Iterator<Item = (Handle, &T)> {
        self.slots.iter().enumerate().filter_map(|(i, s)| {
            let handle = (s.generation as u64) << 32 | i as u64;
            s.value.as_ref().map(|v| (handle, v))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_handle_reaches_only_its_own_value() {
        let mut slab = Slab::default();
        let a = slab.insert("a");
        let b = slab.insert("b");
        assert_eq!(
            (slab.get(a), slab.get(b), slab.len()),
            (Some(&"a"), Some(&"b"), 2)
        );
        assert_eq!(slab.remove(a), Some("a"));
        assert_eq!(slab.remove(a), None, "removed once");
        let c = slab.insert("c");
        assert_ne!(a, c, "the slot is reused under a new generation");
        assert_eq!((slab.get(a), slab.get(c)), (None, Some(&"c")));
        *slab.get_mut(c).expect("c") = "c2";
        let all: Vec<_> = slab.iter().map(|(h, v)| (h, *v)).collect();
        assert_eq!(all.len(), 2);
        assert!(all.contains(&(c, "c2")) && all.contains(&(b, "b")));
        assert!(!slab.contains(a));
    }

    #[test]
    fn it_grows_by_an_eighth() {
        let mut slab = Slab::default();
        for i in 0..10_000 {
            slab.insert(i);
        }
        assert!(
            slab.slots.capacity() < 10_000 * 9 / 8 + 32,
            "{}",
            slab.slots.capacity()
        );
    }
}
