//! Lists kept for the next lock instead of freed: the watchdog's and the loss notices'.

/// Keeps an emptied list in `spare` for the next list made, if it is small and `spare` has
/// none: an uncontended pair with `WATCHDOG` or `NOTIFY` freed a lock's list and made another.
pub fn keep_spare<T>(spare: &mut Vec<T>, mut list: Vec<T>) {
    if spare.capacity() == 0 && list.capacity() <= SPARE_CAPACITY {
        list.clear();
        *spare = list;
    }
}

/// The largest list kept as a spare.
const SPARE_CAPACITY: usize = 4;
